"""What a fail-slow page (``job-step-time-rise``) and a goodput page (``job-goodput-low``) add
to a job's page, read at the alarm's time, as a model's page reads its replicas
(lambdas/notifier/serving.py): the most likely culprit of the slowdown with its evidence, and
the badput that grew.

OTel mode with the OTLP sink, where the job alarms are PromQL alarms: the exporter's series of
the job's nodes' GPUs (``fail_slow.GPU_EVIDENCE``: NVML's fault clock event reasons, the SM
clock, new ECC, PCIe replay and NVLink errors), labelled by node and GPU
(lambdas/shared/dcgm.py), each node's CPU (Prometheus Node Exporter's
``node_cpu_seconds_total``, which the add-on sends in OTel mode: "These metrics use metric names
from their original sources, including cAdvisor, Prometheus Node Exporter, NVIDIA DCGM",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/container-insights-otel-metrics.html,
labelled with the node as DCGM's series are), and each rank's ``data_wait_share`` from the
emitter, labelled by rank, pod and node, over the five minutes before the alarm and the ten
before those. The culprit is ranked by lambdas/shared/fail_slow.py. The ranks' series name no
GPU, so a culprit GPU is named by its node and index and a culprit rank by its pod and node.
Classic mode's page reads the same table with GetMetricData (lambdas/notifier/fail_slow_classic.py).
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Final

from gpu_insights_agent.contract.metrics import (
    OTLP_RANK,
    TIME_METRICS,
    GpuMetric,
    TrainingMetric,
)
from lambdas.notifier.jobs import job_matchers
from lambdas.notifier.notification import Incident
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.exporter_promql import (
    ExporterQueries,
    node_batches,
    node_pattern,
    range_selector,
)
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
from lambdas.shared.promql import PromQLClient, Series, quote_label, quote_string

#: A goodput page compares the hour the alarm read with the hour before it.
HOUR_S: Final = 3600
#: Prometheus Node Exporter's CPU counter: seconds each CPU spent in each ``mode``; a node's
#: busy share is 1 less its ``idle`` seconds' rate averaged over its CPUs
#: (prometheus/node_exporter, collector/cpu_linux.go: ``node_cpu_seconds_total``, "Seconds the
#: CPUs spent in each mode.").
NODE_CPU_SECONDS: Final = "node_cpu_seconds_total"


def _key(series: Series, *names: str) -> tuple[str, ...]:
    return tuple(series.labels.get(n, "") for n in names)


def _value(series: Series) -> float:
    return series.points[-1][1] if series.points else 0.0


def _by_gpu(
    client: PromQLClient, query: str, at_s: float, labels: DcgmLabels
) -> dict[tuple[str, ...], float]:
    return {_key(s, labels.node, labels.gpu): _value(s) for s in client.query(query, at_s)}


def _gpu_query(
    q: ExporterQueries, reduce: Reduce, metric: GpuMetric, nodes: Sequence[str], range_s: int
) -> str:
    """Each GPU's ``reduce`` of ``metric`` over ``range_s`` (summed for a sum, else its
    largest, over the pods that held it)."""
    by = f"by ({quote_label(q.labels.node)}, {quote_label(q.labels.gpu)})"
    aggregate = "sum" if reduce is Reduce.SUM else "max"
    return f"{aggregate} {by} ({reduce}_over_time({q.select(str(metric), nodes, range_s)}))"


def _read(
    client: PromQLClient,
    q: ExporterQueries,
    reduce: Reduce,
    metric: GpuMetric,
    nodes: Sequence[str],
    at_s: float,
    range_s: int = EVIDENCE_S,
) -> dict[tuple[str, ...], float]:
    return _by_gpu(client, _gpu_query(q, reduce, metric, nodes, range_s), at_s, q.labels)


def read_gpus(
    client: PromQLClient,
    cluster: str,
    nodes: Iterable[str],
    at_s: float,
    labels: DcgmLabels = CLOUDWATCH,
) -> list[GpuEvidence]:
    """Each GPU of ``nodes`` that reported in the evidence minutes, with what it showed of
    ``GPU_EVIDENCE`` then, and its error counters before (``PromQLError`` where PromQL
    refused)."""
    q = ExporterQueries(cluster, labels)
    gpus: list[GpuEvidence] = []
    for batch in node_batches(nodes):
        seen = _read(client, q, Reduce.MAX, GpuMetric.HEALTHY, batch, at_s)
        now = {m: _read(client, q, r, m, batch, at_s) for m, r in GPU_EVIDENCE.items()}
        before = {
            m: _read(client, q, Reduce.SUM, m, batch, at_s - EVIDENCE_S, BEFORE_S)
            for m in ERRORS_OF
        }
        for key in sorted(seen):
            gpus.append(
                gpu_evidence(
                    key[0],
                    key[1],
                    {m: v[key] for m, v in now.items() if key in v},
                    {m: v[key] for m, v in before.items() if key in v},
                )
            )
    return gpus


def node_cpu_query(cluster: str, nodes: Sequence[str], labels: DcgmLabels = CLOUDWATCH) -> str:
    """Each node's busy CPU, percent, over the evidence minutes (Node Exporter's counter)."""
    matchers = (
        f"__name__={quote_string(NODE_CPU_SECONDS)}",
        f"{quote_label(labels.cluster)}={quote_string(cluster)}",
        f"{quote_label(labels.node)}=~{quote_string(node_pattern(nodes))}",
        f"mode={quote_string('idle')}",
    )
    selector = "{" + ", ".join(matchers) + "}" + range_selector(EVIDENCE_S)
    return f"100 * (1 - avg by ({quote_label(labels.node)}) (rate({selector})))"


def read_node_cpu(
    client: PromQLClient,
    cluster: str,
    nodes: Iterable[str],
    at_s: float,
    labels: DcgmLabels = CLOUDWATCH,
) -> dict[str, float]:
    """Each of ``nodes``' busy CPU percent in the evidence minutes, where its series were read."""
    found: dict[str, float] = {}
    for batch in node_batches(nodes):
        for series in client.query(node_cpu_query(cluster, batch, labels), at_s):
            node = series.labels.get(labels.node, "")
            if node and series.points:
                found[node] = _value(series)
    return found


def rank_query(
    cluster: str, namespace: str | None, job: str, range_s: int, labels: DcgmLabels
) -> str:
    """Each rank's mean data-wait share of its step over ``range_s``, by rank, pod and node."""
    matchers = job_matchers(TrainingMetric.DATA_WAIT_SHARE, cluster, namespace, job, labels)
    by = ", ".join(quote_label(n) for n in (OTLP_RANK, labels.pod, labels.node))
    selector = "{" + ", ".join(matchers) + "}" + range_selector(range_s)
    return f"avg by ({by}) (avg_over_time({selector}))"


def read_ranks(
    client: PromQLClient,
    cluster: str,
    namespace: str | None,
    job: str,
    at_s: float,
    labels: DcgmLabels = CLOUDWATCH,
) -> list[RankEvidence]:
    """Each rank's data wait in the evidence minutes and before (``PromQLError`` if refused)."""
    names = (OTLP_RANK, labels.pod, labels.node)
    now = {
        _key(s, *names): _value(s)
        for s in client.query(rank_query(cluster, namespace, job, EVIDENCE_S, labels), at_s)
    }
    before = {
        _key(s, *names): _value(s)
        for s in client.query(
            rank_query(cluster, namespace, job, BEFORE_S, labels), at_s - EVIDENCE_S
        )
    }
    return [
        RankEvidence(
            rank=rank, pod=pod, node=node, gpu="", data_wait_share=share,
            data_wait_share_before=before.get((rank, pod, node), share),
        )
        for (rank, pod, node), share in sorted(now.items(), key=lambda kv: (len(kv[0][0]), kv[0]))
    ]  # fmt: skip


def with_culprit(
    incident: Incident,
    verdict: Verdict | None,
    unread: str = "not read (PromQL refused the job's series)",
) -> Incident:
    """The job's page told the most likely culprit and its evidence, or that there is no single
    one and why; ``None``: the series could not be read, which the page says (``unread``)."""
    if verdict is None:
        return replace(incident, facts=(*incident.facts, ("Culprit", unread)))
    c = verdict.culprit
    if c is None:
        return replace(incident, facts=(*incident.facts, ("Culprit", f"none: {verdict.whole_job}")))
    where = [f"rank {c.rank}" if c.rank else "", f"pod {c.pod}" if c.pod else "", f"node {c.node}"]
    where.append(f"GPU {c.gpu}" if c.gpu else "")
    return replace(
        incident,
        culprit_node=c.node,
        facts=(
            *incident.facts,
            ("Culprit", ", ".join(w for w in where if w)),
            ("Evidence", "; ".join(c.evidence)),
        ),
    )


def culprit_of(
    client: PromQLClient,
    cluster: str,
    namespace: str | None,
    job: str,
    nodes: Sequence[str],
    at_s: float,
    labels: DcgmLabels = CLOUDWATCH,
) -> Verdict:
    """The fail-slow's culprit from the job's GPUs, ranks and nodes at the alarm's time."""
    ranks = read_ranks(client, cluster, namespace, job, at_s, labels)
    job_nodes = sorted(set(nodes) | {r.node for r in ranks if r.node})
    return rank_culprits(
        read_gpus(client, cluster, job_nodes, at_s, labels),
        ranks,
        read_node_cpu(client, cluster, job_nodes, at_s, labels),
    )


# --- which badput grew (job-goodput-low) -------------------------------------------------------

#: A badput category's words on the page and what to do about it.
BADPUT_ADVICE: Final = {
    "data wait": "the input pipeline does not keep up: more loader workers, prefetching, or "
    "faster storage (S3 throughput, FSx for Lustre)",
    "checkpoint saves": "save less often, or asynchronously, or to faster storage",
    "evaluation": "evaluate less often, on fewer batches, or in a job of its own",
    "no steps": "ranks hung past their step's due time, starting, or outside their loop: read "
    "their last log lines; a hang pages job-hung",
}
#: Each category's seconds in the emitter's time split (contract.metrics ``TIME_METRICS``:
#: what each rank was doing, second by second, which adds up to its windows), so the shares
#: are of the ranks' own time, whatever their flush interval or the series' sampling.
BADPUT_TIME: Final[dict[str, tuple[TrainingMetric, ...]]] = {
    "data wait": (TrainingMetric.DATA_WAIT_TIME,),
    "checkpoint saves": (TrainingMetric.CHECKPOINT_SAVE_TIME,),
    "evaluation": (TrainingMetric.EVALUATION_TIME,),
    "no steps": (
        TrainingMetric.STALLED_TIME,
        TrainingMetric.STARTUP_TIME,
        TrainingMetric.IDLE_TIME,
    ),
}
#: Under this share of the hour, no category the page reads explains a low goodput.
UNEXPLAINED_BELOW: Final = 0.05


def grown_badput(now: Mapping[str, float], before: Mapping[str, float]) -> str:
    """Which badput category grew most, in points of the hour, with what to do; or which is
    largest where none grew. Shares are 0 to 1 of the hour."""
    if not now:
        return "not known (no badput series in the hour)"
    growth = {k: now[k] - before.get(k, 0.0) for k in now}
    worst = max(growth, key=lambda k: (growth[k], now[k]))
    if growth[worst] <= 0:
        worst = max(now, key=lambda k: now[k])
        if now[worst] < UNEXPLAINED_BELOW:
            return (
                f"none read explains it ({', '.join(sorted(now))}: each under "
                f"{UNEXPLAINED_BELOW:.0%} of the hour): look at progress redone after a "
                "restart, or ranks that stopped sending (a hang pages job-hung)"
            )
        return (
            f"none grew; the largest is {worst} ({now[worst]:.0%} of the hour): "
            f"{BADPUT_ADVICE[worst]}"
        )
    return (
        f"{worst}: {now[worst]:.0%} of the hour, {before.get(worst, 0.0):.0%} the hour before: "
        f"{BADPUT_ADVICE[worst]}"
    )


#: The key of all the ranks' accounted seconds beside the categories' (``category_seconds``).
TOTAL: Final = "total"


def category_seconds(per_metric: Mapping[TrainingMetric, float]) -> dict[str, float]:
    """Each category's seconds, and ``TOTAL``, from the sums of the time split's metrics over
    every rank (a metric with no series is 0), as Classic's GetMetricData reads them apart."""
    seconds = {c: sum(per_metric.get(m, 0.0) for m in ms) for c, ms in BADPUT_TIME.items()}
    return {**seconds, TOTAL: sum(per_metric.get(m, 0.0) for m in TIME_METRICS)}


def badput_shares(seconds: Mapping[str, float]) -> dict[str, float]:
    """The categories' shares of the ranks' time in an hour (``category_seconds``' keys; both
    modes read the same sums, by PromQL or GetMetricData); no time accounted: nothing known."""
    total = seconds.get(TOTAL, 0.0)
    if total <= 0:
        return {}
    return {c: min(1.0, max(0.0, seconds.get(c, 0.0)) / total) for c in BADPUT_TIME}


def badput_queries(
    cluster: str, namespace: str | None, job: str, labels: DcgmLabels = CLOUDWATCH
) -> dict[TrainingMetric, str]:
    """Each time-split metric's seconds over the job's ranks in the hour: one query a metric
    (a selector of several names fails where their series share labels once the names drop)."""

    def s(metric: TrainingMetric) -> str:
        matchers = job_matchers(metric, cluster, namespace, job, labels)
        return "{" + ", ".join(matchers) + "}" + range_selector(HOUR_S)

    return {metric: f"sum(sum_over_time({s(metric)}))" for metric in TIME_METRICS}


def read_badput(
    client: PromQLClient,
    cluster: str,
    namespace: str | None,
    job: str,
    at_s: float,
    labels: DcgmLabels = CLOUDWATCH,
) -> tuple[dict[str, float], dict[str, float]]:
    """The categories' shares of the hour the alarm read and of the hour before it: one range
    query a metric gives both hours (each call bounded as every notifier call is)."""
    before, now = at_s - HOUR_S, at_s
    hours: tuple[dict[TrainingMetric, float], dict[TrainingMetric, float]] = ({}, {})
    for metric, query in badput_queries(cluster, namespace, job, labels).items():
        for series in client.query_range(query, before, now, HOUR_S, lookback_s=HOUR_S):
            for t, value in series.points:
                step = round((t - before) / HOUR_S)  # 0: the hour before, 1: the alarm's
                if step in (0, 1):
                    hours[step][metric] = value
    return (
        badput_shares(category_seconds(hours[1])),
        badput_shares(category_seconds(hours[0])),
    )


def with_badput(
    incident: Incident,
    grown: str | None,
    unread: str = "not read (PromQL refused the job's series)",
) -> Incident:
    """The goodput page told which badput grew; ``None``: not read, which the page says."""
    words = grown if grown is not None else unread
    return replace(incident, facts=(*incident.facts, ("Badput that grew", words)))
