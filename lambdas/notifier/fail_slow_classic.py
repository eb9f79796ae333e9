"""A Classic fail-slow page's culprit: the same evidence the OTel page reads with PromQL
(lambdas/notifier/fail_slow_page.py), read with GetMetricData, ranked by the same logic
(lambdas/shared/fail_slow.py).

In Classic mode (and in OTel mode with the exporter's EMF sink) ``job-step-time-rise`` is a
Metrics Insights alarm over the job alarm shards; its page reads, at the alarm's time:

- the exporter's series of the GPUs of the job's nodes (``fail_slow.GPU_EVIDENCE``) in
  ``GpuInsights``: the fault reasons' flags (max), new ECC, PCIe replay and NVLink errors (sum,
  now and in the ten minutes before); the GPUs are those whose ``gpu_healthy`` (a metric of
  every cycle) was published in the last three hours. A fault gauge is published only in its
  non-zero hours (agent/gpu_insights_agent/exporter/fault_gate.py), so a series not listed is
  no evidence. The SM clock is a property of the exporter's line in Classic, no metric (a
  custom metric a GPU would cost $0.30 a month), so this page does not weigh it.
- each node's CPU: Container Insights' ``node_cpu_utilization`` ("The percentage of CPU units
  used on the node", dimensions ClusterName, InstanceId, NodeName,
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Container-Insights-metrics-EKS.html);
- the job's ``data_wait_share`` (``GpuInsights/Training``, per ClusterName and JobName), now
  and before; and each rank's own, in the newest document the page's placement read of it
  (lambdas/notifier/jobs.py: the share of the rank's last window with steps), so a rank
  waiting for data while the others do not is named as in OTel mode.

A Classic goodput page (``job-goodput-low``) says which badput grew from the same emitter series
the OTel page reads with PromQL (fail_slow_page.badput_queries), in the hour the alarm read and
the hour before: the emitter's time split (contract.metrics ``TIME_METRICS``: each rank's
seconds by what it was doing, ``Sum`` per ClusterName and JobName over the hour), each
category's seconds over all of them (fail_slow_page.badput_shares).

The series are found with ListMetrics (``RecentlyActive`` PT3H, one listing a metric for the
cluster) and read with GetMetricData in full batches (lambdas/shared/metric_fetcher.py): one
datapoint a series, its period the window.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from gpu_insights_agent.contract.metrics import (
    CI_NODE_CPU_METRIC,
    CI_NODE_CPU_SCHEMA,
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_JOB,
    DIM_NODE,
    NAMESPACE_CONTAINER_INSIGHTS,
    NAMESPACE_GPU,
    NAMESPACE_TRAINING,
    TIME_METRICS,
    GpuMetric,
    TrainingMetric,
    gpu_schema,
)
from lambdas.notifier.fail_slow_page import HOUR_S, badput_shares, category_seconds
from lambdas.notifier.jobs import Placement
from lambdas.shared.fail_slow import (
    BEFORE_S,
    ERRORS_OF,
    EVIDENCE_S,
    GPU_EVIDENCE,
    GpuEvidence,
    RankEvidence,
    Reduce,
    Verdict,
    gpu_evidence,
    rank_culprits,
)
from lambdas.shared.metric_fetcher import MetricQuery, fetch, listed_dimensions

#: Every exporter series the page lists: the GPUs (their health, every cycle) and the evidence
#: the Classic exporter publishes as metrics.
LISTED: Final = (GpuMetric.HEALTHY, *(m for m in GPU_EVIDENCE if m is not GpuMetric.SM_CLOCK))


class CulpritReadError(Exception):
    """CloudWatch refused a read of the job's series (the AWS error is its cause)."""


def _gpu_series(
    cloudwatch: Any, cluster: str, nodes: set[str]
) -> dict[GpuMetric, list[dict[str, str]]]:
    """Each listed metric's per-GPU series (their dimensions) on ``nodes``."""
    found: dict[GpuMetric, list[dict[str, str]]] = {}
    for metric in LISTED:
        schema = set(gpu_schema(metric))
        found[metric] = [
            dims
            for dims in listed_dimensions(
                cloudwatch, NAMESPACE_GPU, str(metric), {DIM_CLUSTER: cluster}, recently_active=True
            )
            if set(dims) == schema and dims.get(DIM_NODE) in nodes
        ]
    return found


def _query(
    key: tuple[str, ...], namespace: str, metric: str, dims: Mapping[str, str], stat: str, s: int
) -> MetricQuery:
    return MetricQuery(key, namespace, metric, tuple(sorted(dims.items())), stat, s)


def _values(
    cloudwatch: Any, queries: Sequence[MetricQuery], end_s: float, range_s: int
) -> dict[tuple[str, ...], float]:
    """Each query's one value over ``range_s`` to ``end_s`` (none where no datapoint)."""
    found: dict[tuple[str, ...], float] = {}
    if not queries:
        return found
    for batch in fetch(cloudwatch, queries, start=end_s - range_s, end=end_s):
        for series in batch:
            if series.values and not series.error:
                found[series.query.key] = series.values[-1]
    return found


def read_gpus(
    cloudwatch: Any, cluster: str, nodes: Iterable[str], at_s: float
) -> list[GpuEvidence]:
    """Each GPU of ``nodes`` that reported in the last three hours, with what it showed of the
    evidence then and its error counters before (botocore's errors propagate)."""
    listed = _gpu_series(cloudwatch, cluster, set(nodes))
    gpus = sorted(
        {(d[DIM_NODE], d[DIM_GPU_INDEX]) for d in listed[GpuMetric.HEALTHY]},
        key=lambda g: (g[0], int(g[1]) if g[1].isdigit() else 0, g[1]),
    )
    now_q, before_q = [], []
    for metric, series in listed.items():
        if metric is GpuMetric.HEALTHY:
            continue
        reduce = GPU_EVIDENCE[metric]
        for dims in series:
            key = (str(metric), dims[DIM_NODE], dims[DIM_GPU_INDEX])
            now_q.append(
                _query(key, NAMESPACE_GPU, str(metric), dims, reduce.statistic, EVIDENCE_S)
            )
            if metric in ERRORS_OF:
                before_q.append(
                    _query(key, NAMESPACE_GPU, str(metric), dims, Reduce.SUM.statistic, BEFORE_S)
                )
    now = _values(cloudwatch, now_q, at_s, EVIDENCE_S)
    before = _values(cloudwatch, before_q, at_s - EVIDENCE_S, BEFORE_S)
    by_gpu: dict[tuple[str, str], tuple[dict[GpuMetric, float], dict[GpuMetric, float]]]
    by_gpu = defaultdict(lambda: ({}, {}))
    for values, side in ((now, 0), (before, 1)):
        for (name, node, gpu), value in values.items():
            by_gpu[(node, gpu)][side][GpuMetric(name)] = value
    return [gpu_evidence(node, gpu, *by_gpu[(node, gpu)]) for node, gpu in gpus]


def read_node_cpu(
    cloudwatch: Any, cluster: str, nodes: Iterable[str], at_s: float
) -> dict[str, float]:
    """Each of ``nodes``' mean CPU utilization, percent, in the evidence minutes, where read."""
    wanted = set(nodes)
    queries = [
        _query((dims[DIM_NODE],), NAMESPACE_CONTAINER_INSIGHTS, CI_NODE_CPU_METRIC, dims,
               Reduce.AVG.statistic, EVIDENCE_S)
        for dims in listed_dimensions(
            cloudwatch,
            NAMESPACE_CONTAINER_INSIGHTS,
            CI_NODE_CPU_METRIC,
            {DIM_CLUSTER: cluster},
            recently_active=True,
        )
        if set(dims) == set(CI_NODE_CPU_SCHEMA) and dims[DIM_NODE] in wanted
    ]  # fmt: skip
    return {key[0]: value for key, value in _values(cloudwatch, queries, at_s, EVIDENCE_S).items()}


def read_job_data_wait(
    cloudwatch: Any, cluster: str, job: str, at_s: float
) -> tuple[float, float] | None:
    """The job's mean data-wait share of its steps in the evidence minutes and before; None
    where it published none (no steps, or an emitter without the share)."""
    dims = {DIM_CLUSTER: cluster, DIM_JOB: job}
    metric, stat = str(TrainingMetric.DATA_WAIT_SHARE), Reduce.AVG.statistic
    now = _values(
        cloudwatch, [_query(("now",), NAMESPACE_TRAINING, metric, dims, stat, EVIDENCE_S)],
        at_s, EVIDENCE_S,
    )  # fmt: skip
    before = _values(
        cloudwatch, [_query(("before",), NAMESPACE_TRAINING, metric, dims, stat, BEFORE_S)],
        at_s - EVIDENCE_S, BEFORE_S,
    )  # fmt: skip
    if ("now",) not in now:
        return None
    return now[("now",)], before.get(("before",), now[("now",)])


def rank_waits(placement: Placement, before: float | None) -> list[RankEvidence]:
    """Each rank whose newest document said its data wait, the job's own before (a rank's
    earlier windows are not read: the job's tells a data source that slowed for all)."""
    return [
        RankEvidence(
            rank=r.rank,
            pod=r.pod,
            node=r.node,
            gpu="",
            data_wait_share=r.data_wait_share,
            data_wait_share_before=r.data_wait_share if before is None else before,
        )
        for r in placement.ranks
        if r.data_wait_share is not None and r.node
    ]


def classic_culprit(
    cloudwatch: Any, cluster: str, job: str, placement: Placement, at_s: float
) -> Verdict:
    """The fail-slow's culprit from the job's nodes' GPUs and CPU, its ranks' and its own data
    wait, at the alarm's time (``CulpritReadError`` where CloudWatch refused)."""
    nodes = placement.each("node")
    try:
        job_wait = read_job_data_wait(cloudwatch, cluster, job, at_s)
        return rank_culprits(
            read_gpus(cloudwatch, cluster, nodes, at_s),
            rank_waits(placement, job_wait[1] if job_wait else None),
            read_node_cpu(cloudwatch, cluster, nodes, at_s),
            job_data_wait=job_wait,
        )
    except (BotoCoreError, ClientError) as err:
        raise CulpritReadError(f"the job's series could not be read: {err}") from err


def read_classic_badput(
    cloudwatch: Any, cluster: str, job: str, at_s: float
) -> tuple[dict[str, float], dict[str, float]]:
    """The badput categories' shares of the hour the alarm read and of the hour before it
    (``CulpritReadError`` where CloudWatch refused)."""
    job_dims = {DIM_CLUSTER: cluster, DIM_JOB: job}

    def shares(end_s: float) -> dict[str, float]:
        queries = [
            _query((str(metric),), NAMESPACE_TRAINING, str(metric), job_dims, "Sum", HOUR_S)
            for metric in TIME_METRICS
        ]
        got = _values(cloudwatch, queries, end_s, HOUR_S)
        per_metric = {metric: got.get((str(metric),), 0.0) for metric in TIME_METRICS}
        return badput_shares(category_seconds(per_metric))

    try:
        return shares(at_s), shares(at_s - HOUR_S)
    except (BotoCoreError, ClientError) as err:
        raise CulpritReadError(f"the job's series could not be read: {err}") from err
