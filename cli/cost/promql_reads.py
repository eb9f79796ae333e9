"""What the training analyzer's PromQL costs to send in OTel mode, counted from the code that
sends it: the GPU-hour attribution's ``read_holds`` over the day a run attributes, and the GPU
memory right-sizing's ``read_gpu_memory_otel`` over its lookback, against a PromQL client whose
opener records each request instead of sending it.

The recording opener answers the readers' node query with ``nodes`` nodes and every other
query with no series, so the requests counted are the ones the reader makes for that fleet
(its node query, then its queries for each node, each in as many 24-hour pages as the window
takes). The samples a request scans are counted from its text and range: each ``[1h]`` range
selector reads, at each evaluation, the last hour of every series it selects (every GPU of the
cluster, or of the node it names; a pod's selector is counted as every GPU of its node held,
an upper bound) at the add-on's DCGM rate.
"""

import json
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from lambdas.shared.promql import PromQLClient, PromQLTruncatedError
from lambdas.training_analyzer.gpu_hours.otel import SAMPLES_PER_HOUR, OtelQueries, read_holds
from lambdas.training_analyzer.gpu_memory.otel import read_gpu_memory_otel
from lambdas.training_analyzer.handler import attributed_day

#: The range selector of every attribution query, and the evaluation step: one hour.
_RANGE: Final = "[1h]"
_CLUSTER: Final = "cluster"
#: A run at the default training schedule's time (07:00 UTC), of a day as the handler sees one.
_A_RUN: Final = datetime(2026, 12, 1, 7, tzinfo=UTC).timestamp()


@dataclass(frozen=True)
class PromQLReads:
    """One analyzer run's PromQL: requests sent, and samples they scan at most."""

    requests: int
    samples: float
    #: The node query held the API's most series a response: the run stops there, and says so.
    truncated: bool = False


def analyzer_reads(nodes: int, gpus_per_node: int, lookback_days: int) -> PromQLReads:
    """The requests and samples of one run over a fleet of ``nodes`` GPU nodes."""
    names = [f"node-{i}" for i in range(nodes)]
    queries = OtelQueries(_CLUSTER)
    node_series = [{"metric": {queries.labels.node: n}, "values": []} for n in names]
    samples = 0.0

    def record(request: urllib.request.Request) -> tuple[int, bytes]:
        nonlocal samples
        body = request.data if isinstance(request.data, bytes) else b""
        params = {k: v[0] for k, v in urllib.parse.parse_qs(body.decode()).items()}
        query = params["query"]
        evaluations = (float(params["end"]) - float(params["start"])) / float(params["step"]) + 1
        named = any(f'"{n}"' in query for n in names)
        series = gpus_per_node if named else nodes * gpus_per_node
        samples += query.count(_RANGE) * series * round(evaluations) * SAMPLES_PER_HOUR
        result = node_series if query == queries.nodes() else []
        answer = {"status": "success", "data": {"resultType": "matrix", "result": result}}
        return 200, json.dumps(answer).encode()

    client = PromQLClient(
        endpoint="http://promql.invalid", region="us-east-1", credentials=None, opener=record
    )
    start, end, _day = attributed_day(_A_RUN)
    try:
        read_holds(client, _CLUSTER, start=start, end=end, gpu_hours=())
        read_gpu_memory_otel(client, _CLUSTER, start=_A_RUN - lookback_days * 86_400, end=_A_RUN)
    except PromQLTruncatedError:
        return PromQLReads(requests=client.requests, samples=samples, truncated=True)
    return PromQLReads(requests=client.requests, samples=samples)
