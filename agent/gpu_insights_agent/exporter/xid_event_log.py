"""In OTLP mode, the XID event documents still go to the exporter's log group, as log lines.

The XID page path is the notifier's subscription on ``$.XidCode`` in the exporter's log group
(cdk/constructs/notifier.py): seconds from the XID to the page. Over OTLP the metrics reach
CloudWatch as PromQL series, but no log line; so each XID event document also goes to the
agent's EMF listener (on in both modes: cdk/constructs/addon_configuration.py) with its metric
directives emptied, which makes it a log line in the log group it names and no custom metric
(an EMF document whose ``CloudWatchMetrics`` array is empty is valid: the array has no minimum
length in the Embedded Metric Format specification's schema, ../shared/reference/
cloudwatch-emf.schema.json, and CloudWatch extracts a metric per directive only).

A failure of either sink fails the batch, which the ``BufferedSender`` keeps and sends again
whole: a gauge sent twice is the same point, an XID counter's total sent twice the same count,
and the notifier's ledger pages an incident once.
"""

import copy
from collections.abc import Sequence

from gpu_insights_agent.contract.metrics import DIM_XID_CODE, PROP_CONTAINER
from gpu_insights_agent.emf.document import METADATA_KEY, EmfDocument
from gpu_insights_agent.emf.sinks import Sink


def event_log_line(document: EmfDocument) -> EmfDocument:
    """The XID event document with no metric directive: a log line only, with EMF's fields
    (the container, an OTLP label, left out)."""
    line = copy.deepcopy(document)
    line[METADATA_KEY]["CloudWatchMetrics"] = []
    line.pop(PROP_CONTAINER, None)
    return line


class XidEventLog:
    """Every batch to ``metrics`` (the OTLP sink); its XID event documents, as log lines, to
    ``log`` (the agent's EMF listener) too."""

    def __init__(self, metrics: Sink, log: Sink) -> None:
        self.metrics = metrics
        self.log = log

    def send(self, documents: Sequence[EmfDocument]) -> None:
        self.metrics.send(documents)
        events = [event_log_line(d) for d in documents if DIM_XID_CODE in d]
        if events:
            self.log.send(events)

    def close(self) -> None:
        for sink in (self.metrics, self.log):
            close = getattr(sink, "close", None)
            if close is not None:
                close()
