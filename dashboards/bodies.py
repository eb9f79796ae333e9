"""The dashboards: GPU fleet, one GPU node, training jobs, storage, findings and alarms; the
cluster and, in OTel mode, inference serving (dashboards/cluster.py, dashboards/serving.py).

Every GPU and training widget is a Metrics Insights query with ``GROUP BY ... ORDER BY ...
LIMIT n`` or a cluster-wide aggregate, never a SEARCH over per-GPU series: a SEARCH returns at
most 500 series and draws one line per GPU, so the picture grows with the fleet and is cut at
500 GPUs ("It can return up to 500 time series", aws-cdk-lib aws_cloudwatch SearchExpressionProps,
https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.aws_cloudwatch.SearchExpressionProps.html).
The node and job pickers are pattern variables, which rewrite the node or job inside the
queries ("A pattern variable is one that changes a regex pattern across the dashboard JSON";
a property variable "changes the values of all instances of a property in the list of
widgets", that is a dimension in metric arrays, never text inside an expression: aws-cdk-lib
aws_cloudwatch VariableType,
https://docs.aws.amazon.com/cdk/api/v2/docs/aws-cdk-lib.aws_cloudwatch.VariableType.html).
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from dashboards.body import body as _body
from dashboards.body import typed_input as _typed_input
from dashboards.cluster import CLUSTER_DASHBOARD, cluster_dashboard
from dashboards.metrics_insights import insights_sql
from dashboards.promql import (
    RANK_WINDOW_S,
    counter_steps,
    fleet_mean,
    gpu_query,
    gpus_at_zero,
    gpus_reporting,
)
from dashboards.serving import (
    DEPLOYMENT_DASHBOARD,
    NO_TARGETS,
    SERVING_DASHBOARD,
    ServingTargets,
    deployment,
    serving,
)
from dashboards.sources import Query, reading
from dashboards.widgets import (
    AlarmLine,
    Widget,
    alarms,
    expression_row,
    graph,
    metric_row,
    metric_widget,
    promql_widget,
    search,
    text,
)
from gpu_insights_agent.contract.metrics import (
    CI_NODE_GPU_METRICS,
    CI_NODE_GPU_SCHEMA,
    DIM_CLUSTER,
    DIM_GPU_DEVICE,
    DIM_GPU_INDEX,
    DIM_JOB,
    DIM_KIND,
    DIM_NAMESPACE,
    DIM_NODE,
    DIM_SEVERITY,
    DIM_XID_CODE,
    FINDINGS_COUNT_METRIC,
    FINDINGS_COUNT_STAT,
    JOB_ALARM_DIMENSIONS,
    JOB_ALARM_METRICS,
    NAMESPACE_CONTAINER_INSIGHTS,
    NAMESPACE_FINDINGS,
    NAMESPACE_GPU,
    NAMESPACE_TRAINING,
    NAMESPACE_WASTE,
    OTLP_JOB,
    TRAINING_DIMENSIONS,
    WASTE_DIMENSIONS,
    ExporterSink,
    GpuMetric,
    TrainingMetric,
    WasteMetric,
    gpu_schema,
)
from gpu_insights_agent.contract.resource_names import dashboard_name
from lambdas.shared.console_links import (
    JOB_PATTERN,
    JOB_VARIABLE,
    NODE_DASHBOARD,
    NODE_PATTERN,
    NODE_VARIABLE,
    STORAGE_DASHBOARD,
    TRAINING_DASHBOARD,
    node_dashboard_url,
)
from lambdas.shared.container_insights_mode import DEFAULT_MODE, ContainerInsightsMode
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.storage_analyzer.dashboard import EBS_WIDGETS, heading, volume_rows
from lambdas.training_analyzer.promql_jobs import JobQueries

#: CloudWatch refuses dashboard bodies above this size.
MAX_BODY_BYTES: Final = 1_000_000
FINDINGS_METRIC: Final = FINDINGS_COUNT_METRIC
XID_SCHEMA: Final = (DIM_CLUSTER, DIM_GPU_INDEX, DIM_NODE, DIM_XID_CODE)
#: Series an outlier widget draws, whatever the fleet.
OUTLIERS: Final = 10
#: Lines a node widget draws: more GPUs than any EC2 instance has.
GPUS_PER_NODE_MAX: Final = 16
WEEK_S: Final = 7 * 86400
#: The period of the per-GPU widgets (the dashboards' ``periodOverride`` is ``inherit``, so
#: CloudWatch keeps it whatever the time range).
GPU_WIDGET_PERIOD_S: Final = 300


COUNT_REPORTING: Final = "GPUs reporting"
COUNT_IN_USE: Final = "GPUs in use"
COUNT_HELD_IDLE: Final = "GPUs held but not working (today)"
COUNT_LOST: Final = "GPUs lost"
FLEET_POWER: Final = "Fleet power against the limit (%)"
FLEET_SM: Final = "Fleet SM activity (%)"
OUTLIER_LOW_POWER: Final = "Lowest power in use (% of limit), 10 GPUs"
OUTLIER_LOW_SM: Final = "Lowest SM activity (%), 10 GPUs"
OUTLIER_HOT: Final = "Hottest (C), 10 GPUs"
#: Throttle flags are sent only in the hours they are set (exporter.fault_gate): their SUM is the
#: count of throttled samples, where an AVG over the hours sent would overstate the share.
OUTLIER_THERMAL: Final = "Most thermally throttled (throttled samples), 10 GPUs"
OUTLIER_POWER_BRAKE: Final = "Most power-braked (braked samples), 10 GPUs"
OUTLIER_XID_NODES: Final = "Most XID errors, 10 nodes"
OUTLIER_DATA_WAIT: Final = "Data-wait share of the step (%), 10 jobs"
OUTLIER_STEP: Final = "Slowest step (s), 10 jobs"
OUTLIER_FAILED: Final = "Most failed runs, 10 jobs"
JOB_HEARTBEAT: Final = "Seconds since its last step"
JOB_LOSS: Final = "Loss, robust deviations above its median"
JOB_LOSS_NOT_FINITE: Final = "Non-finite losses"
JOB_THROUGHPUT_RATIO: Final = "Throughput against its usual (1 = usual)"
#: Goodput now (docs/goodput.md): the mean of the job's windows over each rolling window.
JOB_GOODPUT: Final = {900: "Goodput, last 15 minutes (0-1)", 3600: "Goodput, last hour (0-1)"}
#: A job widget's Metrics Insights function and the CloudWatch statistic of the emitter's
#: samples that its PromQL twin computes (``promql_jobs.JobQueries.statistic``).
JOB_STATISTICS: Final = {"AVG": "Average", "MAX": "Maximum", "MIN": "Minimum", "SUM": "Sum"}
WASTE_HOURS: Final = "Held but not working this week (GPU-hours), 10 namespaces"
#: The metric ``waste_usd`` prices the not-working hours only
#: (lambdas/training_analyzer/gpu_hours/metrics.py):
#: the report's waste adds what stepping hours lost waiting, so the widget says which it is.
WASTE_USD: Final = "Held without work this week (USD), 10 namespaces"


def _pattern_variable(
    variable_id: str,
    label: str,
    pattern: str,
    search_in: tuple[str, Sequence[str], str],
    populate_from: str,
    cluster: str,
) -> dict[str, Any]:
    """A select filled from a metric search, rewriting ``pattern`` wherever the body has it."""
    namespace, dimensions, metric = search_in
    schema = ",".join((namespace, *dimensions))
    return {
        "type": "pattern",
        "pattern": pattern,
        "inputType": "select",
        "id": variable_id,
        "label": label,
        "defaultValue": "__FIRST",
        "visible": True,
        "search": f'{{{schema}}} MetricName="{metric}" {DIM_CLUSTER}="{cluster}"',
        "populateFrom": populate_from,
    }


@dataclass(frozen=True)
class Mode:
    """Which Container Insights mode the GPU widgets read (``dashboards.sources``), where the
    exporter sends its series (``sink``: with OTLP they are read with PromQL, in OTel mode
    only), and the label names of the series OTel mode's PromQL reads."""

    mode: ContainerInsightsMode = DEFAULT_MODE
    labels: DcgmLabels = CLOUDWATCH
    sink: ExporterSink = ExporterSink.EMF

    @property
    def otlp(self) -> bool:
        return self.sink is ExporterSink.OTLP


def _gpu_widget(
    title: str,
    cluster: str,
    metric: GpuMetric,
    function: str,
    order: str,
    *,
    group_by: Sequence[str] = (DIM_NODE, DIM_GPU_INDEX),
    node: str | None = None,
    limit: int = OUTLIERS,
    mode: Mode = Mode(),
    label: str = "",
    y_max: float | None = None,
    annotations: Sequence[dict[str, Any]] = (),
) -> Widget:
    """A per-GPU widget, where ``dashboards.sources`` reads the metric in the mode. The
    readings Container Insights publishes per GPU are read there (the exporter carries them
    only as properties): Classic's with Metrics Insights, named by ``GpuDevice``; DCGM's with
    PromQL in a chart widget, named by its ``gpu`` label; the exporter's own likewise where it
    sends OTLP (no alarm lines: a chart widget draws none)."""
    source = reading(metric, mode.mode, mode.sink)
    if source.query is Query.PROMQL:
        keys = {DIM_NODE: mode.labels.node, DIM_GPU_INDEX: mode.labels.gpu}
        query = gpu_query(
            source.name,
            function,
            order,
            cluster=cluster,
            keys=[keys[d] for d in group_by],
            limit=limit,
            period_s=GPU_WIDGET_PERIOD_S,
            node=node,
            scale=source.scale,
            labels=mode.labels,
        )
        return promql_widget(title, query, label=label)
    where = [(DIM_CLUSTER, cluster)] + ([(DIM_NODE, node)] if node else [])
    if source.namespace == NAMESPACE_CONTAINER_INSIGHTS:
        sql = insights_sql(
            NAMESPACE_CONTAINER_INSIGHTS,
            CI_NODE_GPU_SCHEMA,
            source.name,
            function,
            where,
            group_by=[DIM_GPU_DEVICE if d == DIM_GPU_INDEX else d for d in group_by],
            order=order,
            limit=limit,
        )
    else:
        sql = insights_sql(
            NAMESPACE_GPU,
            gpu_schema(metric),  # the alarm metrics' per-GPU series carry a Shard too
            str(metric),
            function,
            where,
            group_by=group_by,
            order=order,
            limit=limit,
        )
    return _outliers(
        title, expression_row(sql, id="q", label=label), y_max=y_max, annotations=annotations
    )


def _outliers(
    title: str,
    query: str | list[Any],
    *,
    y_max: float | None = None,
    annotations: Sequence[dict[str, Any]] = (),
) -> Widget:
    """A ranked widget of one query: Metrics Insights SQL, or a row already built."""
    return metric_widget(
        title,
        [expression_row(query, id="q") if isinstance(query, str) else query],
        width=8,
        y_max=y_max,
        period=GPU_WIDGET_PERIOD_S,
        annotations=annotations,
    )


def _drawn(
    lines: Sequence[AlarmLine], metric: GpuMetric, function: str, interval_s: int
) -> list[dict[str, Any]]:
    """The alarm lines a per-GPU widget of ``metric`` draws (none where Container Insights'
    series stands in for the metric: the alarms read the exporter's)."""
    if metric in CI_NODE_GPU_METRICS:
        return []
    drawn = (
        line.annotation(function, GPU_WIDGET_PERIOD_S, interval_s)
        for line in lines
        if line.metric == str(metric)
    )
    return [a for a in drawn if a is not None]


def _single(title: str, rows: Sequence[list[Any]], period: int) -> Widget:
    return metric_widget(title, rows, view="singleValue", period=period, width=4, height=3)


def count_period(interval_s: int) -> int:
    """A count widget's period: a minute, or one exporter interval rounded up to whole minutes
    where the exporter sends less often (a shorter period would hold one GPU's sample or none,
    and the count would read zero or a multiple of the truth)."""
    return max(60, -(-interval_s // 60) * 60)


def _count(title: str, cluster: str, metric: GpuMetric, interval_s: int) -> Widget:
    """GPUs that published ``metric`` in the period: the cluster-wide series' sample count
    over the samples one GPU sends in the period (one per exporter interval)."""
    c = [(DIM_CLUSTER, cluster)]
    return _single(
        title,
        [
            metric_row(NAMESPACE_GPU, str(metric), c, stat="SampleCount", id="n"),
            expression_row(f"n * {interval_s} / PERIOD(n)", id="gpus", label="GPUs"),
        ],
        count_period(interval_s),
    )


def _fleet_heading(cluster: str, region: str) -> Widget:
    return text(
        f"# GPU fleet of {cluster}\nHow many GPUs report, work, idle while held or "
        "are lost; then the ten worst per question. Each outlier's label names its "
        f"node: open the [node dashboard]({node_dashboard_url(region, cluster)}) "
        "and pick it, or follow an alarm's link, which preselects it."
    )


def _otlp_counts(cluster: str, interval_s: int, labels: DcgmLabels) -> list[Widget]:
    """The fleet's counts and means where the exporter sends OTLP, with PromQL over its series,
    over the periods of their EMF twins: reporting, in use, lost, power, SM."""
    g = GpuMetric
    counted: dict[str, Any] = {
        "cluster": cluster,
        "period_s": count_period(interval_s),
        "labels": labels,
    }
    mean: dict[str, Any] = {"cluster": cluster, "period_s": 300, "labels": labels}

    def chart(title: str, query: str, label: str) -> Widget:
        return promql_widget(title, query, label=label, width=4, height=3)

    return [
        chart(COUNT_REPORTING, gpus_reporting(str(g.HEALTHY), **counted), "GPUs"),
        chart(COUNT_IN_USE, gpus_reporting(str(g.ALLOCATED_POWER_UTILIZATION), **counted), "GPUs"),
        chart(COUNT_LOST, gpus_at_zero(str(g.HEALTHY), **counted), "GPUs"),
        chart(FLEET_POWER, fleet_mean(str(g.POWER_UTILIZATION), **mean), "%"),
        chart(FLEET_SM, fleet_mean(str(g.SM_ACTIVE), **mean), "%"),
    ]


def gpu_fleet(
    cluster: str,
    region: str,
    exporter_interval_s: int = 10,
    alarm_lines: Sequence[AlarmLine] = (),
    mode: Mode = Mode(),
) -> dict[str, Any]:
    """Counts and fleet aggregates, then the ten worst GPUs or nodes per question; the alarms'
    thresholds drawn on the widgets of their metrics (``alarm_lines``)."""
    g = GpuMetric

    def worst(
        title: str, metric: GpuMetric, function: str, order: str, y_max: float | None = None
    ) -> Widget:
        return _gpu_widget(
            title,
            cluster,
            metric,
            function,
            order,
            mode=mode,
            y_max=y_max,
            annotations=_drawn(alarm_lines, metric, function, exporter_interval_s),
        )

    c = [(DIM_CLUSTER, cluster)]
    held = insights_sql(
        NAMESPACE_WASTE, WASTE_DIMENSIONS, str(WasteMetric.HELD_NOT_WORKING), "SUM", c
    )
    held_idle = _single(
        COUNT_HELD_IDLE,
        [
            expression_row(held, id="h", visible=False),
            expression_row("h / 24", id="gpus", label="GPUs, the day's average"),
        ],
        86400,
    )
    if mode.otlp:
        counts = _otlp_counts(cluster, exporter_interval_s, mode.labels)
        xids = promql_widget(
            OUTLIER_XID_NODES,
            counter_steps(
                str(g.XID_ERRORS),
                cluster=cluster,
                keys=(mode.labels.node,),
                limit=OUTLIERS,
                period_s=GPU_WIDGET_PERIOD_S,
                labels=mode.labels,
            ),
        )
        heading = _fleet_heading(cluster, region)
        return _body(
            [
                [heading],
                [*counts[:2], held_idle, *counts[2:]],
                [
                    worst(OUTLIER_LOW_POWER, g.ALLOCATED_POWER_UTILIZATION, "AVG", "ASC", 100),
                    worst(OUTLIER_LOW_SM, g.SM_ACTIVE, "AVG", "ASC", 100),
                    worst(OUTLIER_HOT, g.TEMPERATURE, "MAX", "DESC"),
                ],
                [
                    worst(OUTLIER_THERMAL, g.THROTTLED_THERMAL, "SUM", "DESC"),
                    worst(OUTLIER_POWER_BRAKE, g.THROTTLED_POWER, "SUM", "DESC"),
                    xids,
                ],
            ],
            region,
        )
    lost = f"(n - ok) * {exporter_interval_s} / PERIOD(n)"
    return _body(
        [
            [_fleet_heading(cluster, region)],
            [
                _count(COUNT_REPORTING, cluster, g.HEALTHY, exporter_interval_s),
                _count(COUNT_IN_USE, cluster, g.ALLOCATED_POWER_UTILIZATION, exporter_interval_s),
                held_idle,
                _single(
                    COUNT_LOST,
                    [
                        metric_row(NAMESPACE_GPU, str(g.HEALTHY), c, stat="SampleCount", id="n"),
                        metric_row(NAMESPACE_GPU, str(g.HEALTHY), c, stat="Sum", id="ok"),
                        expression_row(lost, id="gpus", label="GPUs"),
                    ],
                    count_period(exporter_interval_s),
                ),
                _single(
                    FLEET_POWER,
                    [
                        # The mean over GPUs of draw over limit (the limit is a property of
                        # the exporter's line, not a metric): draw over cap for like GPUs.
                        metric_row(
                            NAMESPACE_GPU,
                            str(g.POWER_UTILIZATION),
                            c,
                            stat="Average",
                            id="share",
                            visible=True,
                        ),
                    ],
                    300,
                ),
                _single(
                    FLEET_SM,
                    [
                        metric_row(
                            NAMESPACE_GPU,
                            str(g.SM_ACTIVE),
                            c,
                            stat="Average",
                            id="sm",
                            visible=True,
                        )
                    ],
                    300,
                ),
            ],
            [
                worst(OUTLIER_LOW_POWER, g.ALLOCATED_POWER_UTILIZATION, "AVG", "ASC", 100),
                worst(OUTLIER_LOW_SM, g.SM_ACTIVE, "AVG", "ASC", 100),
                worst(OUTLIER_HOT, g.TEMPERATURE, "MAX", "DESC"),
            ],
            [
                worst(OUTLIER_THERMAL, g.THROTTLED_THERMAL, "SUM", "DESC"),
                worst(OUTLIER_POWER_BRAKE, g.THROTTLED_POWER, "SUM", "DESC"),
                _outliers(
                    OUTLIER_XID_NODES,
                    insights_sql(
                        NAMESPACE_GPU,
                        XID_SCHEMA,
                        str(g.XID_ERRORS),
                        "SUM",
                        c,
                        group_by=(DIM_NODE,),
                        order="DESC",
                        limit=OUTLIERS,
                    ),
                ),
            ],
        ],
        region,
    )


def gpu_node(
    cluster: str,
    region: str,
    exporter_interval_s: int = 10,
    alarm_lines: Sequence[AlarmLine] = (),
    mode: Mode = Mode(),
) -> dict[str, Any]:
    """One node's GPUs line by line (at most ``GPUS_PER_NODE_MAX`` a widget), the alarms'
    thresholds drawn on the widgets of their metrics (``alarm_lines``)."""
    g = GpuMetric

    def per_gpu(
        title: str,
        metric: GpuMetric,
        function: str = "AVG",
        order: str = "DESC",
        y_max: float | None = None,
    ) -> Widget:
        return _gpu_widget(
            title,
            cluster,
            metric,
            function,
            order,
            group_by=(DIM_GPU_INDEX,),
            node=NODE_PATTERN,
            limit=GPUS_PER_NODE_MAX,
            mode=mode,
            label="GPU",
            y_max=y_max,
            annotations=_drawn(alarm_lines, metric, function, exporter_interval_s),
        )

    xid_title = "XID errors by GPU and code"
    if mode.otlp:
        xid_widget = promql_widget(
            xid_title,
            counter_steps(
                str(g.XID_ERRORS),
                cluster=cluster,
                keys=(mode.labels.gpu, mode.labels.xid_code),
                limit=OUTLIERS,
                period_s=GPU_WIDGET_PERIOD_S,
                node=NODE_PATTERN,
                labels=mode.labels,
            ),
        )
        picker = _typed_input(NODE_VARIABLE, "Node", NODE_PATTERN)
    else:
        xids = insights_sql(
            NAMESPACE_GPU,
            XID_SCHEMA,
            str(g.XID_ERRORS),
            "SUM",
            [(DIM_CLUSTER, cluster), (DIM_NODE, NODE_PATTERN)],
            group_by=(DIM_GPU_INDEX, DIM_XID_CODE),
            order="DESC",
            limit=OUTLIERS,
        )
        xid_widget = metric_widget(xid_title, [expression_row(xids, id="q")], width=8)
        picker = _pattern_variable(
            NODE_VARIABLE,
            "Node",
            NODE_PATTERN,
            (NAMESPACE_GPU, gpu_schema(g.HEALTHY), str(g.HEALTHY)),
            DIM_NODE,
            cluster,
        )
    return _body(
        [
            [text(f"# One GPU node of {cluster}\nEach line is one GPU of the node picked above.")],
            [
                per_gpu("Power against the limit (%)", g.POWER_UTILIZATION, y_max=100),
                per_gpu("SM activity (%)", g.SM_ACTIVE, y_max=100),
                per_gpu("GPU utilization (%)", g.UTILIZATION, y_max=100),
            ],
            [
                per_gpu("Temperature (C)", g.TEMPERATURE, "MAX"),
                per_gpu("Memory used (bytes)", g.MEMORY_USED, "MAX"),
                per_gpu("Healthy (0 = lost)", g.HEALTHY, "MIN", "ASC"),
            ],
            [
                per_gpu("Thermally throttled (samples)", g.THROTTLED_THERMAL, "SUM"),
                per_gpu("Power brake (samples)", g.THROTTLED_POWER, "SUM"),
                xid_widget,
            ],
        ],
        region,
        [picker],
    )


def _job_query(cluster: str, metric: TrainingMetric, function: str, job: str | None) -> str:
    """Per job (a job's identity kept by GROUP BY), or the one job the picker names. The job
    alarms' metrics are published with the job's alarm shard (one series a job all the same)."""
    schema = JOB_ALARM_DIMENSIONS if metric in JOB_ALARM_METRICS else TRAINING_DIMENSIONS
    if job is not None:
        where = [(DIM_CLUSTER, cluster), (DIM_JOB, job)]
        return insights_sql(NAMESPACE_TRAINING, schema, str(metric), function, where)
    return insights_sql(
        NAMESPACE_TRAINING,
        schema,
        str(metric),
        function,
        [(DIM_CLUSTER, cluster)],
        group_by=(DIM_JOB,),
        order="DESC",
        limit=OUTLIERS,
    )


def job_promql(
    cluster: str, metric: TrainingMetric, function: str, job: str | None, labels: DcgmLabels
) -> str:
    """``_job_query``'s twin over the emitter's OTLP gauges, with the statistic CloudWatch
    computes from the same samples (``promql_jobs.JobQueries``, the training analyzer's
    reader): the one job, a series; or per job at the widget's period, kept where the job is
    among the ``OUTLIERS`` first of the day that ends the range, as the GPU widgets are
    bounded (``dashboards.promql``)."""
    stat = JOB_STATISTICS[function]
    shown = JobQueries(cluster, labels, window_s=GPU_WIDGET_PERIOD_S)
    if job is not None:
        return shown.statistic(metric, stat, keys=(), job=job)
    ranked = JobQueries(cluster, labels, window_s=RANK_WINDOW_S, at_end=True)
    by = shown.by(OTLP_JOB).removeprefix("by ")
    top = ranked.statistic(metric, stat)
    return f"({shown.statistic(metric, stat)}) and on {by} topk({OUTLIERS}, {top})"


def _waste(cluster: str, title: str, metric: WasteMetric) -> Widget:
    sql = insights_sql(
        NAMESPACE_WASTE,
        WASTE_DIMENSIONS,
        str(metric),
        "SUM",
        [(DIM_CLUSTER, cluster)],
        group_by=(DIM_NAMESPACE,),
        order="DESC",
        limit=OUTLIERS,
    )
    return metric_widget(title, [expression_row(sql, id="q")], view="bar", period=WEEK_S)


def training_jobs(cluster: str, region: str, mode: Mode = Mode()) -> dict[str, Any]:
    """The ten jobs that wait, step slowest and fail most; one job in detail, with its
    heartbeat and loss; the week's waste. Where the emitter sends OTLP (``mode.otlp``: it then
    sends no EMF, emitter/training.py) every job widget is a PromQL chart of the same title in
    the same place (``job_promql``), and the job picker a text box (no metric to list the jobs
    from); the waste is the training analyzer's CloudWatch metric in both."""
    t = TrainingMetric

    def outliers(title: str, metric: TrainingMetric, function: str, **kw: Any) -> Widget:
        if mode.otlp:
            return promql_widget(title, job_promql(cluster, metric, function, None, mode.labels))
        return _outliers(title, _job_query(cluster, metric, function, None), **kw)

    def one(title: str, metric: TrainingMetric, function: str = "AVG", **kw: Any) -> Widget:
        if mode.otlp:
            query = job_promql(cluster, metric, function, JOB_PATTERN, mode.labels)
            return promql_widget(title, query, label=JOB_PATTERN, width=6)
        sql = _job_query(cluster, metric, function, JOB_PATTERN)
        return metric_widget(title, [expression_row(sql, id="q", label=JOB_PATTERN)], width=6, **kw)

    def goodput(window_s: int) -> Widget:
        """The job's goodput over a rolling window: its windows' mean (every rank's)."""
        title = JOB_GOODPUT[window_s]
        if mode.otlp:
            queries = JobQueries(cluster, mode.labels, window_s=window_s)
            query = queries.statistic(t.GOODPUT, "Average", keys=(), job=JOB_PATTERN)
            return promql_widget(title, query, label=JOB_PATTERN, width=6)
        return one(title, t.GOODPUT, "AVG", period=window_s, y_max=1)

    if mode.otlp:
        picker = _typed_input(JOB_VARIABLE, "Job", JOB_PATTERN)
    else:
        picker = _pattern_variable(
            JOB_VARIABLE,
            "Job",
            JOB_PATTERN,
            (NAMESPACE_TRAINING, TRAINING_DIMENSIONS, str(t.STEPS)),
            DIM_JOB,
            cluster,
        )
    return _body(
        [
            [
                text(
                    f"# Training jobs of {cluster}\nThe ten jobs that wait most for data (above "
                    "20% of the step is a job waiting on storage), step slowest and fail most; "
                    "one job in detail (pick it above), its heartbeat and loss; the week's GPU "
                    "waste by namespace."
                )
            ],
            [
                outliers(OUTLIER_DATA_WAIT, t.DATA_WAIT_SHARE, "AVG", y_max=100),
                outliers(OUTLIER_STEP, t.STEP_TIME, "AVG"),
                outliers(OUTLIER_FAILED, t.JOB_FAILED, "SUM"),
            ],
            [
                one("Throughput (samples/s)", t.SAMPLES_PER_SECOND),
                one("Step time (s)", t.STEP_TIME),
                one("Data-wait share of the step (%)", t.DATA_WAIT_SHARE, y_max=100),
                one("Checkpoint save (s)", t.CHECKPOINT_SAVE, "MAX"),
            ],
            [
                one(JOB_HEARTBEAT, t.SECONDS_SINCE_STEP, "MAX"),
                one(JOB_LOSS, t.LOSS_DEVIATION, "MAX"),
                one(JOB_LOSS_NOT_FINITE, t.LOSS_NOT_FINITE, "SUM"),
                one(JOB_THROUGHPUT_RATIO, t.THROUGHPUT_RATIO, "MIN"),
            ],
            [goodput(window_s) for window_s in JOB_GOODPUT],
            [
                _waste(cluster, WASTE_HOURS, WasteMetric.HELD_NOT_WORKING),
                _waste(cluster, WASTE_USD, WasteMetric.WASTE_USD),
            ],
        ],
        region,
        [picker],
    )


def storage(
    cluster: str, buckets: Sequence[str], region: str, volume_ids: Sequence[str] | None = None
) -> dict[str, Any]:
    """The storage dashboard. EBS metrics name no cluster, so its EBS widgets draw the volumes
    ``volume_ids`` (the cluster's, which the storage analyzer writes into the deployed body on
    every run: lambdas/storage_analyzer/dashboard.py), none before its first run: never the
    Region's other volumes."""

    def widget(title: str, row: list[Any], width: int) -> Widget:
        return metric_widget(title, row, width=width, period=300)

    ebs = [
        widget(title, volume_rows(metric, stat, fn, volume_ids or ()), width)
        for (title, metric, stat, fn), width in zip(EBS_WIDGETS, (12, 12, 12, 6, 6), strict=True)
    ]
    count = None if volume_ids is None else len(volume_ids)
    rows = [[text(heading(cluster, count))], ebs[:2], ebs[2:]]
    if buckets:
        names = " OR ".join(f'BucketName="{b}"' for b in buckets)
        s3 = "{AWS/S3,BucketName,FilterId}"
        rows.append(
            [
                graph(
                    "S3 first-byte latency p99 (ms)",
                    [(f"SEARCH('{s3} MetricName=\"FirstByteLatency\" ({names})', 'p99', 300)", "")],
                    width=8,
                ),
                graph(
                    "S3 5xx errors",
                    [(f"SEARCH('{s3} MetricName=\"5xxErrors\" ({names})', 'Sum', 300)", "")],
                    width=8,
                ),
                graph(
                    "S3 requests",
                    [(f"SEARCH('{s3} MetricName=\"AllRequests\" ({names})', 'Sum', 300)", "")],
                    width=8,
                ),
            ]
        )
    return _body(rows, region)


def findings_and_alarms(cluster: str, alarm_arns: Sequence[str], region: str) -> dict[str, Any]:
    schema = (DIM_CLUSTER, DIM_KIND, DIM_SEVERITY)
    where = f'{DIM_CLUSTER}="{cluster}"'
    return _body(
        [
            [
                text(
                    f"# Findings and alarms of {cluster}\nFindings come from the daily analyzers; "
                    "the full list is in the report bucket and the weekly report."
                )
            ],
            [alarms("GPU alarms", alarm_arns)],
            [
                graph(
                    "Findings by kind (daily)",
                    [
                        (
                            search(
                                NAMESPACE_FINDINGS,
                                schema,
                                FINDINGS_METRIC,
                                where,
                                FINDINGS_COUNT_STAT,
                                86400,
                            ),
                            "",
                        )
                    ],
                ),
                graph(
                    "Critical findings (daily)",
                    [
                        (
                            search(
                                NAMESPACE_FINDINGS,
                                schema,
                                FINDINGS_METRIC,
                                f'{where} {DIM_SEVERITY}="critical"',
                                FINDINGS_COUNT_STAT,
                                86400,
                            ),
                            "",
                        )
                    ],
                ),
            ],
        ],
        region,
    )


def all_dashboards(
    cluster: str,
    buckets: Sequence[str],
    alarm_arns: Sequence[str],
    region: str,
    *,
    exporter_interval_s: int = 10,
    alarm_lines: Sequence[AlarmLine] = (),
    mode: ContainerInsightsMode = DEFAULT_MODE,
    dcgm_labels: DcgmLabels = CLOUDWATCH,
    exporter_sink: ExporterSink = ExporterSink.EMF,
    cluster_lines: Sequence[AlarmLine] = (),
    serving_targets: ServingTargets = NO_TARGETS,
    etcd_limit_gib: float | None = None,
    gpu_pending_minutes: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Dashboard name -> body, for the CDK app and the demo; ``alarm_lines`` are the deployed
    alarms' thresholds (cdk/alarms/annotations.py), drawn on the widgets of their metrics;
    ``mode`` the Container Insights mode the GPU widgets read (``dashboards.sources``), and
    ``dcgm_labels`` the label names of DCGM's series in OTel mode (CloudWatch's by default),
    ``exporter_sink`` where the exporter's own series are (OTLP: read with PromQL).

    The cluster dashboard in both modes, with the control-plane alarms' lines
    (``cluster_lines``), the etcd limit and, in OTel mode, the GPU-pending alarm's minutes. The
    serving dashboards (``dashboards.serving``) in OTel mode only: their widgets are PromQL over
    the inference servers' own series, which only OTel Container Insights sends to CloudWatch
    (Classic's agent drops the servers' histograms, and PromQL reads no Classic metric);
    ``serving_targets`` are the deployed serving alarms' thresholds, written in their titles."""
    lines, interval = alarm_lines, exporter_interval_s
    reads = Mode(mode, dcgm_labels, exporter_sink)
    bodies = {
        dashboard_name(cluster, "gpu-fleet"): gpu_fleet(cluster, region, interval, lines, reads),
        dashboard_name(cluster, NODE_DASHBOARD): gpu_node(cluster, region, interval, lines, reads),
        dashboard_name(cluster, TRAINING_DASHBOARD): training_jobs(cluster, region, reads),
        dashboard_name(cluster, STORAGE_DASHBOARD): storage(cluster, buckets, region),
        dashboard_name(cluster, "findings"): findings_and_alarms(cluster, alarm_arns, region),
        dashboard_name(cluster, CLUSTER_DASHBOARD): cluster_dashboard(
            cluster,
            region,
            mode,
            cluster_lines,
            etcd_limit_gib=etcd_limit_gib,
            gpu_pending_minutes=gpu_pending_minutes,
            labels=dcgm_labels,
        ),
    }
    if mode is ContainerInsightsMode.OTEL:
        targets, otlp = serving_targets, exporter_sink is ExporterSink.OTLP
        bodies[dashboard_name(cluster, SERVING_DASHBOARD)] = serving(
            cluster, region, targets, dcgm_labels
        )
        bodies[dashboard_name(cluster, DEPLOYMENT_DASHBOARD)] = deployment(
            cluster, region, targets, dcgm_labels, exporter_otlp=otlp
        )
    return bodies


def encode(body: dict[str, Any]) -> str:
    text_body = json.dumps(body, separators=(",", ":"))
    if len(text_body.encode()) > MAX_BODY_BYTES:
        raise ValueError(f"dashboard body of {len(text_body):,} bytes is over CloudWatch's limit")
    return text_body
