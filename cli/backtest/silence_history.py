"""``gpu_silent`` over a history that has none: the silence check's own rule
(lambdas/silence_check/silence.py ``find_silent``, then ``metric_data``, what its handler
publishes) run at each of its scheduled runs over the exporter's samples.

A history file holds what the exporter sent, not what EC2 ran: every node and GPU index seen in
it is taken as running, launched at its first sample, until the range ends, so a node that
stops sending is silent, and a node scaled down is silent too (the check, reading EC2, would
not page for it).
"""

from bisect import bisect_left
from collections.abc import Sequence

from cli.backtest.history import Sample
from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    NAMESPACE_GPU,
    SILENT_GPUS_METRIC,
    gpu_schema,
)
from lambdas.silence_check.config import SCHEDULE_MINUTES, SilenceCheckConfig
from lambdas.silence_check.silence import REPORTING_METRIC, GpuNode, find_silent, metric_data

#: Where the derivation says what it assumed, in the backtest's output.
NOTE = (
    "gpu-silent: gpu_silent derived from the exporter's samples by the silence check's own rule "
    f"every {SCHEDULE_MINUTES} minutes; a history has no EC2 view, so every node and GPU in it "
    "is taken as running from its first sample to the end (a scale-down reads as silence)"
)


def has_silence(samples: Sequence[Sample]) -> bool:
    return any(s.namespace == NAMESPACE_GPU and s.metric == SILENT_GPUS_METRIC for s in samples)


def derive_silence(
    samples: Sequence[Sample], config: SilenceCheckConfig, *, start: float, end: float
) -> list[Sample]:
    """The per-GPU ``gpu_silent`` samples the check would have published at each run in
    [``start``, ``end``): the series it reads (``REPORTING_METRIC``, lambdas/silence_check/aws.py)
    sent in the run's look back, against every node seen by then."""
    schema = set(gpu_schema(REPORTING_METRIC))
    reports: list[tuple[float, str, str]] = []
    for s in samples:
        dims = dict(s.dimensions)
        if (
            s.namespace == NAMESPACE_GPU
            and s.metric == str(REPORTING_METRIC)
            and set(dims) == schema
            and dims[DIM_CLUSTER] == config.cluster_name
        ):
            reports.append((s.timestamp, dims[DIM_NODE], dims[DIM_GPU_INDEX]))
    reports.sort()
    times = [at for at, _, _ in reports]
    first: dict[str, float] = {}
    gpus: dict[str, int] = {}
    for at, node, gpu in reports:
        first[node] = min(at, first.get(node, at))
        gpus[node] = max(gpus.get(node, 0), int(gpu) + 1)
    step = SCHEDULE_MINUTES * 60
    derived: list[Sample] = []
    now = start - start % step + step
    while now < end:
        nodes = [
            # Launched, at the latest, when it first reported: the check's grace period runs
            # from there, as it would from its LaunchTime.
            GpuNode(node, "", node, gpus[node], first[node])
            for node in first
            if first[node] <= now
        ]
        reported: dict[str, set[str]] = {}
        for _, node, gpu in reports[
            bisect_left(times, now - config.lookback_s) : bisect_left(times, now)
        ]:
            reported.setdefault(node, set()).add(gpu)
        check = find_silent(nodes, reported, first, now=now, grace_s=config.grace_s)
        derived += [
            Sample(
                namespace=NAMESPACE_GPU,
                metric=datum["MetricName"],
                dimensions=frozenset((d["Name"], d["Value"]) for d in datum["Dimensions"]),
                timestamp=now,
                value=float(datum["Value"]),
            )
            for datum in metric_data(config.cluster_name, check, now)
            # The silent series, what gpu-silent's query reads; not the cluster's counts.
            if any(d["Name"] == DIM_NODE for d in datum["Dimensions"])
        ]
        now += step
    return derived
