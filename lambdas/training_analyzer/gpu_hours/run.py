"""One GPU-hour attribution over a window: observe, attribute, find, tabulate. Runs inside
the training analyzer's invocation, which knows the jobs' pods (exact attribution) and the
day's training findings (why a job's GPUs waited) without a second read; the hours in which
those jobs stepped are read for the same window."""

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from lambdas.shared.findings import AnalysisRun
from lambdas.shared.metric_fetcher import MetricDataError
from lambdas.shared.promql import PromQLClient, PromQLError
from lambdas.training_analyzer.failure_placement import HeldJob, held_jobs
from lambdas.training_analyzer.goodput.capacity import (
    capacity_rows,
    classic_capacity,
    exporter_capacity,
    otel_capacity,
)
from lambdas.training_analyzer.gpu_hours.attribution import (
    UNPLACED_NODE,
    Attribution,
    Hold,
    Thresholds,
    attribute,
)
from lambdas.training_analyzer.gpu_hours.aws import observe
from lambdas.training_analyzer.gpu_hours.by_workload import WorkloadGpu, by_workload
from lambdas.training_analyzer.gpu_hours.findings import ANALYZER, day_table, held_not_working
from lambdas.training_analyzer.gpu_hours.otel import observe_otel
from lambdas.training_analyzer.gpu_hours.stepping import stepping_hours, stepping_hours_promql


@dataclass
class GpuHoursRun(AnalysisRun):
    analyzer: str = ANALYZER
    table: dict[str, Any] = field(default_factory=dict)
    #: Each pod's node, as the attribution placed it (the node of most of its hours): the
    #: GPU memory right-sizing's instance types for pods no emitter reported.
    pod_nodes: dict[str, str] = field(default_factory=dict)
    #: Each job's pods and held GPU-hours by hour: where the failed jobs no emitter named a
    #: pod of ran (lambdas/training_analyzer/failure_placement.py).
    held_jobs: dict[str, HeldJob] = field(default_factory=dict)
    #: Each (namespace, workload)'s GPU-hours and mean power: the day's serving rows' price.
    workloads: dict[tuple[str, str], WorkloadGpu] = field(default_factory=dict)


def analyze_gpu_hours(
    *,
    cloudwatch: Any,
    cluster: str,
    start: float,
    end: float,
    gpu_hour_usd: float,
    exact_jobs: Mapping[str, str] | None = None,
    pod_nodes: Mapping[str, str] | None = None,
    training_findings: Mapping[str, Sequence[str]] | None = None,
    thresholds: Thresholds = Thresholds(),  # noqa: B008
    promql: PromQLClient | None = None,
    exporter_otlp: bool = False,
    emitter_otlp: bool = False,
) -> GpuHoursRun:
    """``promql``: read the pods' holds from OTel Container Insights (DCGM's series, with
    PromQL) rather than Classic's ``pod_gpu_*`` (None); ``exporter_otlp``: read the
    exporter's GPU-hours from its OTLP series with it too (exporter_sink=otlp);
    ``emitter_otlp``: the jobs' stepping hours from the emitter's OTLP series too."""
    run = GpuHoursRun()
    try:
        observed = (
            observe(cloudwatch, cluster, start=start, end=end, pod_nodes=pod_nodes)
            if promql is None
            else observe_otel(
                cloudwatch, promql, cluster, start=start, end=end, exporter_otlp=exporter_otlp
            )
        )
        jobs = (exact_jobs or {}).values()
        stepped, failed = (
            stepping_hours_promql(promql, cluster, jobs, start=start, end=end)
            if emitter_otlp and promql is not None
            else stepping_hours(cloudwatch, cluster, jobs, start=start, end=end)
        )
    except (ClientError, BotoCoreError, PromQLError) as err:
        run.skip(f"GPU-hours of {cluster}", err)
        return run
    for job, error in sorted(failed.items()):
        # Its pods' hours are classed by power alone: said, not silently.
        run.skip(f"steps of job/{job}", MetricDataError(error))
    attribution = attribute(
        observed.gpu_hours,
        observed.holds,
        exact_jobs=exact_jobs,
        thresholds=thresholds,
        ci_node_hours=observed.ci_node_hours,
        stepping=stepped,
    )
    run.table = day_table(attribution, gpu_hour_usd)
    run.table.update(paid_capacity(run, cloudwatch, promql, cluster, start, end, attribution))
    run.pod_nodes = placed_nodes(observed.holds)
    run.held_jobs = held_jobs(attribution)
    run.workloads = by_workload(attribution, observed.holds)
    run.findings += held_not_working(
        attribution,
        gpu_hour_usd=gpu_hour_usd,
        window_hours=(end - start) / 3600,
        window_start=start,
        training_findings=training_findings,
    )
    return run


def paid_capacity(
    run: AnalysisRun,
    cloudwatch: Any,
    promql: PromQLClient | None,
    cluster: str,
    start: float,
    end: float,
    attribution: Attribution,
) -> dict[str, Any]:
    """The day table's ``capacity`` (each GPU node's GPUs x hours: the funnel's paid stage,
    goodput/capacity.py) and where it came from. For a node whose capacity Container Insights
    did not report (or could not be read: said on ``run``), the GPU-hours the exporter saw on
    it stand in, and ``capacity_source`` says so (``container_insights+exporter``)."""
    try:
        nodes = (
            classic_capacity(cloudwatch, cluster, start=start, end=end)
            if promql is None
            else otel_capacity(promql, cluster, start=start, end=end)
        )
    except (ClientError, BotoCoreError, PromQLError) as err:
        run.skip(f"GPU capacity of {cluster}'s nodes", err)
        nodes = []
    reported = {n.node for n in nodes}
    unseen = {n: h for n, h in attribution.seen_by_node.items() if n not in reported}
    sources = ["container_insights"] if nodes else []
    if unseen:
        nodes += exporter_capacity(unseen)
        sources.append("exporter")
    return {"capacity": capacity_rows(nodes), "capacity_source": "+".join(sources)}


def placed_nodes(holds: Iterable[Hold]) -> dict[str, str]:
    """Each pod's node of most of its held hours (the first by name on a tie), unplaced
    holds left out."""
    shares: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for hold in holds:
        if hold.gpu.node != UNPLACED_NODE:
            shares[hold.pod][hold.gpu.node] += hold.share
    return {pod: min(nodes, key=lambda node: (-nodes[node], node)) for pod, nodes in shares.items()}
