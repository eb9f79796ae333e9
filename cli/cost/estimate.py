"""``gpu-insights cost-estimate``: what the whole deployment costs a month, line by line.

Every count comes from the code that makes the resource (the alarm catalog sized for the fleet,
the dashboards' bodies, the schedules and function sizes in the settings, the analyzers' own
query plans) and every price from cli/cost/prices.py, with its page and the day it was read. What
cannot be counted from code (container log volume, the number of volumes and jobs, the silence
check's and report's run time) is an option or a stated assumption, printed beside its line.
"""

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Final

from cdk.alarms.catalog import gpu_alarms, promql_alarms
from cdk.alarms.cluster import GPU_PENDING, NAMESPACE_EKS
from cdk.alarms.jobs import JOB_ALARM_KINDS
from cdk.alarms.model import AlarmSpec, BreachCount, Difference, MetricStat, insights_query
from cdk.alarms.nodes import NODE_ALARM_KINDS
from cdk.alarms.promql import PromQLQuery
from cdk.alarms.serving_promql import SERVING_ALARM_KINDS
from cdk.deploy_region import counted
from cdk.node_config.serving_prometheus import SERVING_NAMESPACE
from cdk.settings import Settings
from cli.cost.exporter import (
    AFTER,
    EMITTER_FLUSH_S,
    ENHANCED_CI_GPU_OBSERVATIONS_PER_GPU_MINUTE,
    FAULT_HOUR_SHARE,
    MINUTES_PER_MONTH,
    OTLP_BYTES_PER_DATAPOINT,
    TRAINING_EMF_BYTES_PER_FLUSH,
    TRAINING_EMF_METRICS_PER_JOB,
    TRAINING_OTLP_BYTES_PER_DATAPOINT,
    TRAINING_OTLP_DATAPOINTS_PER_FLUSH,
    LayoutCost,
    layout_cost,
)
from cli.cost.prices import (
    COMPOSITE_ALARM,
    CUSTOM_METRIC,
    DASHBOARD,
    ENHANCED_CI,
    GET_METRIC_DATA,
    INSIGHTS_ALARM,
    LAMBDA_GB_SECOND,
    LAMBDA_REQUESTS,
    LOGS_INGESTION,
    OTEL_CI,
    OTLP_METRICS,
    PROMQL_ALARM,
    PROMQL_QUERIES,
    S3_REQUEST_METRIC,
    STANDARD_ALARM,
    STATE_TRANSITIONS,
    Price,
    tiered_metric_cost,
)
from cli.cost.promql_reads import Fleet, analyzer_reads, report_reads
from cli.cost.serving import ClassicServingMetrics, ServingSeries
from dashboards.bodies import all_dashboards
from gpu_insights_agent.contract.metrics import (
    ADDON_DCGM_FIELDS,
    ADDON_DCGM_INTERVAL_S,
    CYCLE_METRICS,
    FAIL_SLOW_CULPRIT_METRIC,
    FAULT_METRICS,
    JOB_ALARM_SHARDS,
    NAMESPACE_TRAINING,
    NOTIFIER_REFUSED_METRIC,
    OTLP_PROPERTIES,
    SILENT_GPUS_METRIC,
    ExporterSink,
)
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.shared.metric_fetcher import MetricQuery
from lambdas.shared.promql import MAX_SERIES
from lambdas.shared.shards import STORAGE, TRAINING, FunctionSize
from lambdas.silence_check.config import MEMORY_MB as SILENCE_MEMORY_MB
from lambdas.silence_check.config import SCHEDULE_MINUTES
from lambdas.storage_analyzer.ebs_analysis import Volume
from lambdas.storage_analyzer.ebs_plan import first_pass
from lambdas.training_analyzer.aws import job_queries
from lambdas.weekly_report.config import MEMORY_MB as REPORT_MEMORY_MB

HOURS_PER_MONTH: Final = MINUTES_PER_MONTH / 60
DAYS_PER_MONTH: Final = HOURS_PER_MONTH / 24
WEEKS_PER_MONTH: Final = DAYS_PER_MONTH / 7
#: The most GPUs one node has: p2.16xlarge's 16 (https://aws.amazon.com/ec2/instance-types/p2/,
#: "up to 16 NVIDIA K80 GPUs"); the other types in cdk/node_config/gpu_instance_types.py have 8
#: or fewer.
MAX_GPUS_PER_NODE: Final = 16
#: Assumed, not measured: the silence check's run (ListMetrics, one GetMetricData per 500
#: GPUs, DescribeInstances) and the weekly report's (a week of findings, charts, an HTML page).
SILENCE_RUN_S: Final = 3.0
REPORT_RUN_S: Final = 60.0
#: One Distributed Map run's transitions (cdk/constructs/fleet_map.py): the plan, the map and
#: the merge, and each shard's child execution (its task and its end).
FLEET_TRANSITIONS: Final = 3
SHARD_TRANSITIONS: Final = 2
#: S3 request metrics per bucket filter (Amazon S3 User Guide, "Amazon S3 request metrics in
#: CloudWatch": AllRequests, GetRequests, PutRequests, DeleteRequests, HeadRequests,
#: PostRequests, SelectRequests, SelectBytesScanned, SelectBytesReturned, ListRequests,
#: BytesDownloaded, BytesUploaded, 4xxErrors, 5xxErrors, FirstByteLatency, TotalRequestLatency).
S3_REQUEST_METRICS_PER_BUCKET: Final = 16


@dataclass(frozen=True)
class LineItem:
    name: str
    quantity: float
    unit: str
    usd: float
    price: Price
    #: How the quantity was counted, and what it assumed.
    basis: str


@dataclass(frozen=True)
class Deployment:
    """What is priced: the settings (cdk.json and ``-c``), the fleet, and the volumes the
    settings do not give."""

    settings: Settings
    nodes: int
    gpus_per_node: int
    container_log_gb_per_day: float
    #: Volumes and jobs the analyzers read (the settings' fleet sizes, else one per node).
    volumes: int
    jobs: int
    #: Inference server replicas and the models each serves (OTel mode prices their series);
    #: 0 replicas: none priced, and the serving alarms' scans bounded by the GPUs.
    serving_replicas: int = 0
    serving_models: int = 1

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


def runs_per_month(expression: str) -> float:
    """Runs a month of an EventBridge schedule: ``rate(N unit)``, or a ``cron()`` whose minute
    and hour fields are numbers, lists, ranges or steps, run daily, on listed days of the
    week, or on listed days of the month."""
    rate = re.fullmatch(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)", expression)
    if rate:
        minutes = int(rate[1]) * {"m": 1, "h": 60, "d": 1440}[rate[2][0]]
        return MINUTES_PER_MONTH / minutes
    cron = re.fullmatch(r"cron\((\S+) (\S+) (\S+) (\S+) (\S+) (\S+)\)", expression)
    if not cron:
        raise ValueError(f"cannot count the runs of schedule {expression!r}")
    minute, hour, day, month, weekday, _year = cron.groups()
    per_day = _count(minute, 60) * _count(hour, 24)
    if month != "*":
        raise ValueError(f"cannot count the runs of schedule {expression!r} (a month field)")
    if weekday not in {"?", "*"}:
        return per_day * _count(weekday, 7) * WEEKS_PER_MONTH
    if day in {"?", "*"}:
        return per_day * DAYS_PER_MONTH
    return per_day * _count(day, 31)


def _count(field: str, size: int) -> int:
    """Values a cron field matches: ``*``, ``a``, ``a,b``, ``a-b``, ``*/n``, ``a/n``;
    day names count like numbers."""
    total = 0
    for part in field.split(","):
        base, _, step = part.partition("/")
        if base == "*":
            span = size
        elif "-" in base:
            low, high = base.split("-", 1)
            span = _index(high) - _index(low) + 1
        else:
            span = 1 if not step else size - _index(base)
        total += -(-span // int(step)) if step else span
    return total


_DAYS: Final = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")


def _index(value: str) -> int:
    return _DAYS.index(value.upper()) + 1 if value.upper() in _DAYS else int(value)


def _metrics(queries: Sequence[MetricQuery]) -> int:
    return sum(q.metrics for q in queries)


#: GetMetricData metrics one item costs a run: a gp3 volume's first pass (the second pass is
#: only for a volume whose screens could fire), and a job's series.
def _volume_metrics(window_s: int) -> int:
    volume = Volume(volume_id="vol-0", volume_type="gp3", size_gib=100, state="in-use")
    return _metrics(first_pass(volume, window_s))


def _job_metrics(window_s: int) -> int:
    return _metrics(job_queries("cluster", "job", window_s))


def _lambda(
    name: str, runs: float, memory_mb: int, run_s: float, basis: str
) -> tuple[LineItem, LineItem]:
    gb_s = runs * memory_mb / 1024 * run_s
    return (
        LineItem(
            f"Lambda: {name}",
            gb_s,
            "GB-s",
            gb_s * LAMBDA_GB_SECOND.usd,
            LAMBDA_GB_SECOND,
            f"{runs:,.1f} runs x {memory_mb:,} MB x {run_s:,.1f} s; {basis}",
        ),
        LineItem(
            f"Lambda requests: {name}",
            runs,
            "requests",
            runs / 1e6 * LAMBDA_REQUESTS.usd,
            LAMBDA_REQUESTS,
            f"{runs:,.1f} runs a month",
        ),
    )


def _analyzer(
    name: str, size: FunctionSize, items: int, shard: int, fleet: bool, schedule: str, days: int
) -> list[LineItem]:
    runs = runs_per_month(schedule)
    shards = -(-items // shard) if fleet else 1
    per_run = items if not fleet else min(items, shard)
    run_s = max(size.run_s(per_run, days), 1.0)
    lines = list(
        _lambda(
            name,
            runs * shards,
            size.memory_mb,
            run_s,
            f"{schedule}; {per_run:,} items a run over {days} days, as lambdas/shared/shards.py "
            "estimates (at least 1 s)",
        )
    )
    if fleet:
        transitions = runs * (FLEET_TRANSITIONS + SHARD_TRANSITIONS * shards)
        lines.append(
            LineItem(
                f"Step Functions: {name} fleet map",
                transitions,
                "state transitions",
                transitions / 1000 * STATE_TRANSITIONS.usd,
                STATE_TRANSITIONS,
                f"{runs:,.1f} runs x ({FLEET_TRANSITIONS} + {SHARD_TRANSITIONS} x {shards:,} "
                "shards)",
            )
        )
    return lines


def estimate(deployment: Deployment) -> list[LineItem]:
    """Every line item of a month, in the order the table prints them."""
    d, s = deployment, deployment.settings
    interval = s.exporter_interval_seconds
    exporter = layout_cost(
        AFTER,
        nodes=d.nodes,
        gpus_per_node=d.gpus_per_node,
        interval_s=interval,
        fault_hour_share=FAULT_HOUR_SHARE,
    )
    otlp = s.exporter_sink is ExporterSink.OTLP
    exporter_metrics = 0.0 if otlp else exporter.metrics + exporter.fault_metric_months
    exporter_metrics_usd = 0.0 if otlp else exporter.metrics_usd
    # Custom metrics are priced in tiers over the account's total: each line takes the tiers
    # after the lines before it (exporter, emitter, serving scrape, notifier, S3 metrics).
    emitter_metrics = 0 if otlp else d.jobs * TRAINING_EMF_METRICS_PER_JOB
    classic_serving = d.serving_replicas > 0 and _classic_scrape(s)
    serving = ClassicServingMetrics(d.serving_replicas, d.serving_models)
    before_serving = exporter_metrics + emitter_metrics
    before_notifier = before_serving + (serving.metric_months if classic_serving else 0)
    before_s3 = before_notifier + NOTIFIER_METRICS
    s3_metrics = (
        len(s.storage_buckets) * S3_REQUEST_METRICS_PER_BUCKET if s.s3_enable_request_metrics else 0
    )
    logs_gb = d.container_log_gb_per_day * DAYS_PER_MONTH
    items = [
        *(_exporter_otlp(d) if otlp else _exporter_emf(d, exporter)),
        *(
            [_emitter_otlp(d)]
            if otlp
            else _emitter_emf(d, tiered_metric_cost(before_serving) - exporter_metrics_usd)
        ),
        _container_insights(d),
        *([_serving_otlp(d)] if d.serving_replicas and _otel(s) else []),
        *(
            [_serving_classic(serving, _tiered(before_serving, serving.metric_months))]
            if classic_serving
            else []
        ),
        LineItem(
            "Container logs ingestion (Fluent Bit, on in the add-on)",
            logs_gb,
            "GB",
            logs_gb * LOGS_INGESTION.usd,
            LOGS_INGESTION,
            f"{d.container_log_gb_per_day:g} GB a day (--container-log-gb-per-day)",
        ),
        *_alarms(d, _tiered(before_notifier, NOTIFIER_METRICS)),
        _dashboards(s),
        *_analyzer(
            "storage analyzer",
            STORAGE,
            d.volumes,
            s.storage_shard_volumes,
            d.volumes > s.storage_shard_volumes,
            s.storage_schedule,
            s.lookback_days,
        ),
        *_analyzer(
            "training analyzer",
            TRAINING,
            d.jobs,
            s.training_shard_jobs,
            d.jobs > s.training_shard_jobs,
            s.training_schedule,
            s.lookback_days,
        ),
        *_lambda(
            "weekly report",
            runs_per_month(s.report_schedule),
            REPORT_MEMORY_MB,
            REPORT_RUN_S,
            f"{s.report_schedule}; the run time is assumed",
        ),
        *(
            _lambda(
                "silence check",
                MINUTES_PER_MONTH / SCHEDULE_MINUTES,
                SILENCE_MEMORY_MB,
                SILENCE_RUN_S,
                f"every {SCHEDULE_MINUTES} min; the run time is assumed",
            )
            if s.alarm_settings().silence_check
            else []
        ),
        _get_metric_data(d),
        *([_promql(d)] if s.container_insights_mode is ContainerInsightsMode.OTEL else []),
        LineItem(
            "S3 request metrics",
            s3_metrics,
            "metric-months",
            _tiered(before_s3, s3_metrics),
            S3_REQUEST_METRIC,
            f"{len(s.storage_buckets)} storage_buckets x {S3_REQUEST_METRICS_PER_BUCKET} metrics"
            if s.s3_enable_request_metrics
            else "s3_enable_request_metrics is off",
        ),
    ]
    return items


def _exporter_emf(d: Deployment, exporter: LayoutCost) -> list[LineItem]:
    """The exporter over EMF: custom metrics in GpuInsights, and the lines' log bytes."""
    return [
        LineItem(
            "Exporter custom metrics (GpuInsights)",
            exporter.metrics + exporter.fault_metric_months,
            "metric-months",
            exporter.metrics_usd,
            CUSTOM_METRIC,
            f"{d.gpus:,} GPUs x {AFTER.per_gpu} + {AFTER.per_cluster} per cluster, and "
            f"{AFTER.faults_per_gpu} fault gauges per GPU in {FAULT_HOUR_SHARE:.0%} of hours "
            "(assumed)",
        ),
        LineItem(
            "Exporter EMF log ingestion",
            exporter.ingestion_gb,
            "GB",
            exporter.ingestion_usd,
            LOGS_INGESTION,
            f"{AFTER.emf_bytes_per_gpu_cycle:,} bytes per GPU every "
            f"{d.settings.exporter_interval_seconds} s (benchmarks/exporter.py)",
        ),
    ]


def _exporter_otlp(d: Deployment) -> list[LineItem]:
    """The exporter over OTLP (exporter_sink=otlp): every datapoint of every cycle, billed by
    its bytes; no custom metric, no log line."""
    interval = d.settings.exporter_interval_seconds
    # Every cycle's metrics and the properties OTLP sends as gauges (the SM clock), and the
    # fault gauges in their hours.
    every_cycle = len(CYCLE_METRICS) + len(OTLP_PROPERTIES)
    per_gpu_cycle = every_cycle + len(FAULT_METRICS) * FAULT_HOUR_SHARE
    datapoints = d.gpus * per_gpu_cycle * MINUTES_PER_MONTH * 60 / interval
    gb = datapoints * OTLP_BYTES_PER_DATAPOINT / 1e9
    # One 8-GPU node's month, the unit the exporter's OTel cost is judged in (goal: $2 or less).
    node_gb = gb / d.gpus * 8
    return [
        LineItem(
            "Exporter OTLP metrics ingestion",
            gb,
            "GB",
            gb * OTLP_METRICS.usd,
            OTLP_METRICS,
            f"{d.gpus:,} GPUs x ({every_cycle} + {len(FAULT_METRICS)} fault gauges in "
            f"{FAULT_HOUR_SHARE:.0%} of hours) datapoints every {interval} s x "
            f"{OTLP_BYTES_PER_DATAPOINT} bytes (each serialized as billed; the agent's "
            "attributes come on top); per 8-GPU node-month: "
            f"{node_gb:,.2f} GB, ${node_gb * OTLP_METRICS.usd:,.2f}",
        )
    ]


def _ranks(d: Deployment) -> int:
    """The training ranks the emitter runs in: one a GPU while any job runs, none without."""
    return d.gpus if d.jobs > 0 else 0


def _emitter_otlp(d: Deployment) -> LineItem:
    """The training emitter over OTLP (with exporter_sink=otlp the jobs' emitters are set to the
    same endpoint, ``GPU_INSIGHTS_OTLP_ENDPOINT``, and the analyzers read them with PromQL):
    every rank's window, billed by its datapoints' bytes; no custom metric, no log line. One
    rank a GPU, each stepping all month: an upper bound."""
    flushes = MINUTES_PER_MONTH * 60 / EMITTER_FLUSH_S
    datapoints = _ranks(d) * TRAINING_OTLP_DATAPOINTS_PER_FLUSH * flushes
    gb = datapoints * TRAINING_OTLP_BYTES_PER_DATAPOINT / 1e9
    return LineItem(
        "Training emitter OTLP metrics ingestion",
        gb,
        "GB",
        gb * OTLP_METRICS.usd,
        OTLP_METRICS,
        f"{counted(_ranks(d), 'rank')} (one a GPU of the jobs', each stepping all month: at "
        "most) x "
        f"{TRAINING_OTLP_DATAPOINTS_PER_FLUSH} datapoints a window every {EMITTER_FLUSH_S:g} s x "
        f"{TRAINING_OTLP_BYTES_PER_DATAPOINT} bytes (benchmarks/otlp_bytes.py, each serialized "
        "as billed)",
    )


def _emitter_emf(d: Deployment, metrics_usd: float) -> list[LineItem]:
    """The training emitter over EMF (exporter_sink=emf): each job's series are custom metrics in
    GpuInsights/Training, and every rank's windows are log lines. Each job and rank all month:
    an upper bound, as over OTLP."""
    if not d.jobs:
        return []
    metrics = d.jobs * TRAINING_EMF_METRICS_PER_JOB
    gb = _ranks(d) * TRAINING_EMF_BYTES_PER_FLUSH * MINUTES_PER_MONTH * 60 / EMITTER_FLUSH_S / 1e9
    return [
        LineItem(
            "Training emitter custom metrics (GpuInsights/Training)",
            metrics,
            "metric-months",
            metrics_usd,
            CUSTOM_METRIC,
            f"{counted(d.jobs, 'job')} x {TRAINING_EMF_METRICS_PER_JOB} metrics a stepping "
            "window publishes (benchmarks/training_emitter.py; checkpoint and history gauges "
            "come on top)",
        ),
        LineItem(
            "Training emitter EMF log ingestion",
            gb,
            "GB",
            gb * LOGS_INGESTION.usd,
            LOGS_INGESTION,
            f"{counted(_ranks(d), 'rank')} (one a GPU of the jobs', each stepping all month: at "
            f"most) x {TRAINING_EMF_BYTES_PER_FLUSH:,} bytes a window every "
            f"{EMITTER_FLUSH_S:g} s (benchmarks/training_emitter.py)",
        ),
    ]


def _otel(s: Settings) -> bool:
    return s.container_insights_mode is ContainerInsightsMode.OTEL


def _serving_otlp(d: Deployment) -> LineItem:
    """The inference servers' series the add-on sends in OTel mode (cli/cost/serving.py)."""
    series = ServingSeries(d.serving_replicas, d.serving_models)
    gb = series.gb_per_month
    return LineItem(
        "Inference servers' OTLP metrics ingestion (add-on)",
        gb,
        "GB",
        gb * OTLP_METRICS.usd,
        OTLP_METRICS,
        series.basis(),
    )


def _classic_scrape(s: Settings) -> bool:
    return s.serving_metrics and not _otel(s)


#: The notifier's own custom metrics a cluster always has (its refused documents).
NOTIFIER_METRICS: Final = 1


def _tiered(before: float, metrics: float) -> float:
    """The price of ``metrics`` custom metrics taking the tiers after ``before`` others."""
    return tiered_metric_cost(before + metrics) - tiered_metric_cost(before)


def _serving_classic(metrics: ClassicServingMetrics, usd: float) -> LineItem:
    """The inference servers' counters and gauges Classic's scrape makes custom metrics."""
    return LineItem(
        "Inference servers' custom metrics (Classic scrape)",
        metrics.metric_months,
        "metric-months",
        usd,
        CUSTOM_METRIC,
        metrics.basis(),
    )


def _container_insights(d: Deployment) -> LineItem:
    """The add-on's GPU series in the deployment's Container Insights mode."""
    if d.settings.container_insights_mode is ContainerInsightsMode.OTEL:
        fields = len(ADDON_DCGM_FIELDS)
        datapoints = d.gpus * fields * MINUTES_PER_MONTH * 60 / ADDON_DCGM_INTERVAL_S
        return LineItem(
            "OTel Container Insights: DCGM GPU series (add-on, OTLP)",
            datapoints / 1e6,
            "million datapoints",
            datapoints / 1e6 * OTEL_CI.usd,
            OTEL_CI,
            f"{d.gpus:,} GPUs x {fields} DCGM fields every {ADDON_DCGM_INTERVAL_S} s; after the "
            "preview, by their bytes (up to 150 labels each); the cluster's cAdvisor, node and "
            "kube-state series come on top",
        )
    observations = d.gpus * ENHANCED_CI_GPU_OBSERVATIONS_PER_GPU_MINUTE * MINUTES_PER_MONTH
    return LineItem(
        "Container Insights enhanced observability: GPU observations",
        observations / 1e6,
        "million observations",
        observations / 1e6 * ENHANCED_CI.usd,
        ENHANCED_CI,
        f"{d.gpus:,} GPUs x {ENHANCED_CI_GPU_OBSERVATIONS_PER_GPU_MINUTE} a minute; the "
        "cluster's CPU, memory and network observations come on top",
    )


def _alarms(d: Deployment, notifier_usd: float) -> list[LineItem]:
    specs = gpu_alarms(d.settings.alarm_settings())
    insights = [spec for spec in specs if insights_query(spec.metric) is not None]
    # A query analyzes each series it reads: one per GPU for the hourly gauges, one per GPU
    # in its fault hours for the fault gauges; gpu_silent exists only for a silent GPU. A
    # fleet count alarm reads its kind's query over every shard.
    faults = {str(m) for m in FAULT_METRICS}
    analyzed = 0.0
    shards = d.settings.alarm_shards  # once: each reading builds the alarm settings
    for spec in insights:
        query = insights_query(spec.metric)
        assert query is not None
        whole = isinstance(spec.metric, BreachCount)  # every shard's series
        share = d.gpus / (1 if whole else shards)
        if query.namespace == NAMESPACE_TRAINING:
            # A job alarm reads one series per job of its job shard (the emitter's Shard).
            share = d.jobs / (1 if whole else JOB_ALARM_SHARDS)
        elif query.namespace == SERVING_NAMESPACE:
            # Classic's serving alarms (cdk/alarms/serving_classic.py) read one series per
            # serving replica of their server: the fleet estimated here is a training fleet,
            # with none (docs/alarms.md prices a replica: each alarm and fleet count reads it).
            share = 0
        elif query.metric in faults:
            share *= FAULT_HOUR_SHARE
        elif query.metric == SILENT_GPUS_METRIC or (spec.shard is None and not whole):
            share = 0  # not sharded: the silence alarm's sparse series
        analyzed += share
    standard = [spec for spec in specs if insights_query(spec.metric) is None]
    promql = promql_alarms(d.settings.alarm_settings())
    # Each metric an alarm lists is an alarm metric; the notifier's dead-letter and
    # refused-documents alarms are one each.
    standard_metrics = sum(2 if isinstance(s.metric, Difference) else 1 for s in standard) + 2
    eks = sum(
        1
        for a in standard
        if isinstance(a.metric, MetricStat) and a.metric.namespace == NAMESPACE_EKS
    )
    return [
        *([_insights_alarms(d, insights, analyzed)] if insights else []),
        *([_promql_alarms(d, promql)] if promql else []),
        LineItem(
            "Standard alarms",
            standard_metrics,
            "alarm metrics",
            standard_metrics * STANDARD_ALARM.usd,
            STANDARD_ALARM,
            f"{len(standard)} catalog alarms ({standard_metrics - 2} metrics) and the "
            "notifier's dead-letter and refused-documents alarms"
            + (
                f"; {eks} of them on the control plane's AWS/EKS metrics, which EKS vends free "
                "(cdk/alarms/cluster.py): their alarm metrics are all they cost"
                if eks
                else ""
            ),
        ),
        LineItem(
            "Notifier custom metric (refused documents)",
            NOTIFIER_METRICS,
            "metric-months",
            notifier_usd,
            CUSTOM_METRIC,
            f"{NOTIFIER_REFUSED_METRIC} per cluster (lambdas/notifier/refused.py); "
            f"{FAIL_SLOW_CULPRIT_METRIC} adds one for each node a fail-slow page names a "
            "culprit in the month (lambdas/notifier/culprit_record.py), not counted: how many "
            "nodes slow a job is not known before it happens",
        ),
        LineItem(
            "Composite alarm (fleet health)",
            1,
            "alarms",
            COMPOSITE_ALARM.usd,
            COMPOSITE_ALARM,
            "cdk/constructs/gpu_alarms.py",
        ),
    ]


def _insights_alarms(d: Deployment, insights: Sequence[AlarmSpec], analyzed: float) -> LineItem:
    return LineItem(
        "Metrics Insights alarms",
        analyzed,
        "metrics analyzed",
        analyzed * INSIGHTS_ALARM.usd,
        INSIGHTS_ALARM,
        f"{len(insights)} alarms in {d.settings.alarm_shards} shard(s) (the alarm catalog), "
        f"each reading its shard's GPUs or jobs; fault gauges in {FAULT_HOUR_SHARE:.0%} of "
        "hours",
    )


def _promql_alarms(d: Deployment, alarms: Sequence[AlarmSpec]) -> LineItem:
    """OTel mode's PromQL alarms, by the samples their evaluations scan: each reads every GPU's
    (or job's) series over its look back, every evaluation interval, an upper bound for the
    sparse series (fault gauges, XID counters)."""
    samples = 0.0
    for spec in alarms:
        query = spec.metric
        assert isinstance(query, PromQLQuery)
        kind = spec.counts or spec.kind
        job = kind in JOB_ALARM_KINDS
        # A serving replica holds a GPU at least: the GPUs bound the replicas (none without an
        # inference server) unless --serving-replicas counts them (a series per replica and
        # model), scraped by the add-on as often as DCGM.
        serving = kind in SERVING_ALARM_KINDS
        series = d.jobs if job else d.gpus
        if serving and d.serving_replicas:
            series = d.serving_replicas * d.serving_models
        # The emitter flushes a window a minute by default (emitter/training.py's flush_s);
        # serving replicas and Kube State Metrics' pod series (at most one a GPU each) come
        # every add-on scrape.
        interval: float = d.settings.exporter_interval_seconds
        if job:
            interval = EMITTER_FLUSH_S
        elif serving or kind in (GPU_PENDING, *NODE_ALARM_KINDS):
            interval = ADDON_DCGM_INTERVAL_S
        per_series = max(1.0, query.lookback_s / interval)
        evaluations = MINUTES_PER_MONTH * 60 / query.evaluation_interval_s
        samples += series * per_series * evaluations
    return LineItem(
        "PromQL alarms",
        samples / 1e6,
        "million samples scanned",
        samples / 1e6 * PROMQL_ALARM.usd,
        PROMQL_ALARM,
        f"{len(alarms)} alarms (one per kind and its fleet count, no shard), each evaluated "
        "every minute over every GPU's, job's, serving replica's or GPU pod's series in its "
        "look back, at most"
        + (
            f"; the serving alarms over {d.serving_replicas:,} replicas x {d.serving_models} "
            "model(s)"
            if d.serving_replicas
            else "; the serving alarms over a replica a GPU (--serving-replicas not given)"
        ),
    )


def _dashboards(s: Settings) -> LineItem:
    # The mode's: OTel mode adds the serving dashboards (dashboards/serving.py).
    count = len(
        all_dashboards(
            s.cluster_name,
            list(s.storage_buckets),
            [],
            "us-east-1",
            mode=s.container_insights_mode,
        )
    )
    return LineItem(
        "Dashboards",
        count,
        "dashboards",
        count * DASHBOARD.usd,
        DASHBOARD,
        "dashboards/bodies.py all_dashboards; viewing them requests metrics too (not counted)",
    )


def _get_metric_data(d: Deployment) -> LineItem:
    """The analyzers' and the silence check's GetMetricData reads; with the OTLP sink the
    training analyzer reads its jobs with PromQL (``_promql``), none of them here."""
    s = d.settings
    window_s = s.lookback_days * 86_400
    otlp = s.exporter_sink is ExporterSink.OTLP
    storage = d.volumes * _volume_metrics(window_s) * runs_per_month(s.storage_schedule)
    per_job = 0 if otlp else _job_metrics(window_s)
    training = d.jobs * per_job * runs_per_month(s.training_schedule)
    checked = s.alarm_settings().silence_check
    silence = d.gpus * MINUTES_PER_MONTH / SCHEDULE_MINUTES if checked else 0
    metrics = storage + training + silence
    return LineItem(
        "GetMetricData metrics requested",
        metrics,
        "metrics",
        metrics / 1000 * GET_METRIC_DATA.usd,
        GET_METRIC_DATA,
        f"storage {_volume_metrics(window_s)} a volume a run, "
        + (
            "training none (its jobs' series are read with PromQL: the PromQL line)"
            if otlp
            else f"training {per_job} a job a run"
        )
        + (", the silence check 1 a GPU a run" if checked else "")
        + "; the GPU attribution and the report read a few more"
        + (" (with PromQL too)" if otlp else ""),
    )


def _whose(count: int, noun: str) -> str:
    """``1 node's``, ``40 nodes'``."""
    return counted(count, noun) + ("'s" if count == 1 else "'")


def _promql(d: Deployment) -> LineItem:
    """OTel mode's PromQL through the query API: the GPU-hour attribution's and the GPU memory
    right-sizing's, once a training analyzer run; with the OTLP sink the training analyzer's
    job reads and the exporter's series too, and the weekly report's reads once a week
    (cli/cost/promql_reads.py counts what they send)."""
    s = d.settings
    otlp = s.exporter_sink is ExporterSink.OTLP
    runs = runs_per_month(s.training_schedule)
    fleet = Fleet(d.nodes, d.gpus_per_node, d.jobs, s.exporter_interval_seconds, EMITTER_FLUSH_S)
    reads = analyzer_reads(
        d.nodes, d.gpus_per_node, s.lookback_days, fleet if otlp else None, jobs=d.jobs
    )
    weeks = runs_per_month(s.report_schedule) if otlp else 0.0
    report = report_reads(fleet) if otlp else None
    samples = reads.samples * runs + (report.samples * weeks if report else 0.0)
    stops = (
        f"; over {MAX_SERIES - 1} nodes a node query holds the API's {MAX_SERIES} series a "
        "response and the reads that start from it stop there"
        if reads.truncated
        else ""
    )
    what = (
        f"{counted(reads.requests, 'request')} a training analyzer "
        f"run over the {_whose(d.nodes, 'node')} DCGM and exporter series and the "
        f"{_whose(d.jobs, 'job')} emitter series ({counted(_ranks(d), 'rank')}), "
        f"{reads.samples / 1e6:,.2f} million samples at "
        f"most, x {runs:,.1f} runs ({s.training_schedule}); {report.requests:,} a weekly "
        f"report, {report.samples / 1e6:,.2f} million, x {weeks:,.1f} runs ({s.report_schedule})"
        if report
        else f"{counted(reads.requests, 'request')} a run over the "
        f"{_whose(d.nodes, 'node')} DCGM series, {reads.samples / 1e6:,.2f} million samples "
        "at most, "
        f"x {runs:,.1f} runs ({s.training_schedule})"
    )
    return LineItem(
        "PromQL queries (analyzers and weekly report, query API)"
        if otlp
        else "PromQL queries (GPU-hours and GPU memory, query API)",
        samples / 1e6,
        "million samples scanned",
        samples / 1e6 * PROMQL_QUERIES.usd,
        PROMQL_QUERIES,
        f"{what}; free of charge in the preview; the dashboards' PromQL is free after it too, "
        f"`gpu-insights status` reads on demand (not counted){stops}",
    )


def table(deployment: Deployment, items: Sequence[LineItem]) -> str:
    d = deployment
    total = sum(i.usd for i in items)
    rows = [
        f"Fleet: {counted(d.nodes, 'GPU node')} x {counted(d.gpus_per_node, 'GPU')} = "
        f"{counted(d.gpus, 'GPU')}; exporter every {d.settings.exporter_interval_seconds} s; "
        f"{counted(d.volumes, 'volume')}, {counted(d.jobs, 'job')}",
        "",
        f"{'per month':>12}  {'line item':<60} {'quantity':>18}",
    ]
    for i in items:
        rows.append(f"${i.usd:>11,.2f}  {i.name:<60} {i.quantity:>14,.1f} {i.unit}")
        rows.append(f"{'':14}{i.basis}")
        rows.append(
            f"{'':14}at {i.price.label()} ({i.price.source}, read {i.price.read})"
            + (f"; {i.price.note}" if i.price.note else "")
        )
    rows += [
        "",
        f"${total:>11,.2f}  a month, us-east-1 list prices (free tiers not taken off; other "
        "Regions differ)",
    ]
    return "\n".join(rows)


def as_json(deployment: Deployment, items: Sequence[LineItem]) -> dict[str, Any]:
    return {
        "nodes": deployment.nodes,
        "gpus_per_node": deployment.gpus_per_node,
        "total_usd": round(sum(i.usd for i in items), 2),
        "line_items": [
            {
                "name": i.name,
                "quantity": i.quantity,
                "unit": i.unit,
                "usd": round(i.usd, 2),
                "basis": i.basis,
                "price": asdict(i.price),
            }
            for i in items
        ],
    }
