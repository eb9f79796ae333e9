"""In OTLP mode, the XID event documents still go to the exporter's log group, as log lines.

The XID page path is the notifier's subscription on ``$.XidCode`` in the exporter's log group
(cdk/constructs/notifier.py): seconds from the XID to the page. Over OTLP the metrics reach
CloudWatch as PromQL series, but no log line; so each XID event document also goes to the
agent's EMF listener (on in both modes: cdk/constructs/addon_configuration.py) with its metric
directives emptied, which makes it a log line in the log group it names and no custom metric
(an EMF document whose ``CloudWatchMetrics`` array is empty is valid: the array has no minimum
length in the Embedded Metric Format specification's schema, ../shared/reference/
cloudwatch-emf.schema.json, and CloudWatch extracts a metric per directive only).

Each destination has its own buffer, backoff and retries, as OTLP's specification recommends
for a client sending to more than one ("the client SHOULD implement queuing,
acknowledgment-handling and retry logic per destination. For example, this ensures that
servers do not block each other": "Multi-Destination Exporting",
https://opentelemetry.io/docs/specs/otlp/#multi-destination-exporting). So the XID line
reaches the log group whatever the OTLP endpoint does (refuses with 400 or 404, answers 503,
never answers), and is flushed first; a batch the OTLP endpoint refuses for good is dropped and
counted by its own buffer (``BufferedSender``, ``SinkRefusedError``), never sent again.
"""

import copy
import time
from collections.abc import Callable, Sequence

from gpu_insights_agent.contract.metrics import DIM_XID_CODE, PROP_CONTAINER
from gpu_insights_agent.emf.document import METADATA_KEY, EmfDocument
from gpu_insights_agent.emf.sinks import BufferedSender, Sink


def event_log_line(document: EmfDocument) -> EmfDocument:
    """The XID event document with no metric directive: a log line only, with EMF's fields
    (the container, an OTLP label, left out)."""
    line = copy.deepcopy(document)
    line[METADATA_KEY]["CloudWatchMetrics"] = []
    line.pop(PROP_CONTAINER, None)
    return line


class XidEventLog:
    """The exporter's sender in OTLP mode: every document to ``metrics`` (the OTLP sink), its
    XID event documents, as log lines, to ``log`` (the agent's EMF listener), each through a
    ``BufferedSender`` of its own (``capacity`` documents each)."""

    def __init__(
        self,
        metrics: Sink,
        log: Sink,
        *,
        capacity: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.metrics = BufferedSender(metrics, capacity=capacity, clock=clock)
        self.log = BufferedSender(log, capacity=capacity, clock=clock)

    def submit(self, documents: Sequence[EmfDocument]) -> None:
        self.log.submit([event_log_line(d) for d in documents if DIM_XID_CODE in d])
        self.metrics.submit(documents)

    def flush(self, *, force: bool = False) -> bool:
        """The XID lines first, then the metrics; True when both buffers are empty."""
        logged = self.log.flush(force=force)
        return self.metrics.flush(force=force) and logged

    def __len__(self) -> int:
        return len(self.metrics) + len(self.log)

    def close(self) -> None:
        for sink in (self.metrics.sink, self.log.sink):
            close = getattr(sink, "close", None)
            if close is not None:
                close()
