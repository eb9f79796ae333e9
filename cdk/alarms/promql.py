"""PromQL alarms: the per-GPU alarms of OTel Container Insights mode, on DCGM's own series.

"A PromQL alarm monitors metrics using a Prometheus Query Language (PromQL) instant query. The
query selects metrics ingested through the CloudWatch OTLP endpoint, and all matching time
series returned by the query are considered to be breaching. The alarm evaluates the query at a
regular interval and tracks each breaching time series independently as a contributor." A
contributor "continues breaching for the duration specified by PendingPeriod" before ALARM and
"remains absent for the duration specified by RecoveryPeriod" before OK; "The alarm is in ALARM
state when at least one contributor has been breaching for longer than the pending period"
("PromQL alarms", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-promql.html).
No GROUP BY: the query returns one series per breaching GPU (or node), and only those. AWS
sets PARTIAL_DATA when the query "returns more than 500 time series" and tracks at most 100
contributors in ALARM ("Limits that apply to alarms based on PromQL queries",
alarm-limits.html): both bound the series that breach at once, not the fleet, so one alarm per
kind covers any fleet while few of its GPUs breach, and each kind's fleet count alarm
(catalog.cap_alarms) pages once past 90 (``promql_limits`` says which limit binds).

Two sources: DCGM's own series from the add-on (``low_power_query``: OTel mode with the
exporter's EMF sink, where only the instance type gives the power limit), and the exporter's
series over OTLP (``exporter_sink=otlp``; the ``otlp_*`` queries), labelled as DCGM labels its
series (lambdas/shared/dcgm.py). Each query keeps only the labels a page needs
(``max by (...)``): cluster, node, GPU, the pod and namespace where a pod holds the GPU, and
the XID code, so a contributor carries a handful of attributes, not the 150 an OTel series may.
The backtest evaluates these alarms as that page says (cli/backtest/promql_alarm.py).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from gpu_insights_agent.contract.metrics import GpuMetric
from lambdas.shared.dcgm import CLOUDWATCH, DCGM_POWER, DcgmLabels

# Kube State Metrics' node capacity series (declared, with its source, in kube_state.py).
from lambdas.shared.kube_state import KSM_CAPACITY, KSM_GPU_RESOURCE, KSM_RESOURCE
from lambdas.shared.promql import quote_label, quote_string

#: AlarmPromQLCriteria: "Query ... Length Constraints: Minimum length of 1. Maximum length of
#: 10000"; "PendingPeriod ... RecoveryPeriod ... Valid Range: Minimum value of 0. Maximum value
#: of 86400" (API Reference, AlarmPromQLCriteria,
#: https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_AlarmPromQLCriteria.html).
MAX_QUERY_CHARS: Final = 10_000
MAX_PERIOD_S: Final = 86_400
#: PromQLAlarmProps.evaluationInterval: "Must be between 10 seconds and 3600 seconds" (CDK API
#: reference, aws-cdk-lib.aws_cloudwatch.PromQLAlarmProps); the SDK examples' wording: "Valid
#: values are 10, 20, 30, and any multiple of 60, up to 3600" (awsdocs code examples,
#: put_metric_alarm with EvaluationCriteria.PromQLCriteria).
SHORT_INTERVALS_S: Final = (10, 20, 30)
MAX_INTERVAL_S: Final = 3600
#: Every minute: a GPU's DCGM samples arrive every 30 s (the add-on's metricResolution).
EVALUATION_INTERVAL_S: Final = 60
#: The range each evaluation reads: five minutes of samples (ten at 30 s), so one late or lost
#: scrape does not make a breaching GPU absent, which would restart its pending period.
RANGE_S: Final = 300
#: Five minutes above the threshold (absent from the result) before a GPU's contributor is OK.
RECOVERY_S: Final = 300


class PromQLAlarmError(ValueError):
    """A PromQL alarm CloudWatch would refuse; the message names the field."""


@dataclass(frozen=True)
class PromQLQuery:
    """What a PromQL alarm evaluates (``EvaluationCriteria.PromQLCriteria`` and
    ``EvaluationInterval``) and the labels that name its contributor's GPU."""

    query: str
    evaluation_interval_s: int
    pending_period_s: int
    recovery_period_s: int
    labels: DcgmLabels = CLOUDWATCH
    #: The longest range selector in the query (``[5m]``: 300): what a replay's scan counts.
    lookback_s: int = 0

    def __post_init__(self) -> None:
        if not 1 <= len(self.query) <= MAX_QUERY_CHARS:
            raise PromQLAlarmError(
                f"query is {len(self.query)} characters; PromQLCriteria takes 1 to "
                f"{MAX_QUERY_CHARS}"
            )
        for key in ("pending_period_s", "recovery_period_s"):
            seconds = getattr(self, key)
            if not 0 <= seconds <= MAX_PERIOD_S:
                raise PromQLAlarmError(f"{key}={seconds} must be 0 to {MAX_PERIOD_S} seconds")
        interval = self.evaluation_interval_s
        if interval not in SHORT_INTERVALS_S and not (
            interval % 60 == 0 and 60 <= interval <= MAX_INTERVAL_S
        ):
            raise PromQLAlarmError(
                f"evaluation_interval_s={interval} must be 10, 20, 30 or a multiple of 60 up "
                f"to {MAX_INTERVAL_S}"
            )


def low_power_query(
    cluster: str,
    threshold_watts: float,
    window_minutes: int,
    labels: DcgmLabels = CLOUDWATCH,
) -> PromQLQuery:
    """Each pod-held GPU whose peak power over the last ``RANGE_S`` stayed under
    ``threshold_watts``: one series per (cluster, node, GPU, namespace, pod), the contributor
    that names the GPU and the pod. DCGM labels a GPU's datapoints with the pod only while a
    pod holds it (cli/demo/realistic/otel.py), so an idle GPU is never returned. Pending for the
    rest of the window: the first breach is seen when a whole range is under the threshold,
    so ALARM comes ``window_minutes`` after the GPU's power fell."""
    q = quote_label
    selector = (
        "{"
        + ", ".join(
            (
                f"__name__={quote_string(DCGM_POWER)}",
                f"{q(labels.cluster)}={quote_string(cluster)}",
                f'{q(labels.pod)}!=""',
            )
        )
        + f"}}[{RANGE_S // 60}m]"
    )
    by = ", ".join(q(n) for n in (labels.cluster, labels.node, labels.gpu, labels.namespace))
    return PromQLQuery(
        query=(f"max by ({by}, {q(labels.pod)}) (max_over_time({selector})) < {threshold_watts:g}"),
        evaluation_interval_s=EVALUATION_INTERVAL_S,
        pending_period_s=window_minutes * 60 - RANGE_S,
        recovery_period_s=RECOVERY_S,
        labels=labels,
        lookback_s=RANGE_S,
    )


# --- The exporter's series over OTLP (exporter_sink=otlp) ---------------------------------------

#: What a page of an "it happened" kind (XID, ECC) reads: five minutes, so that a sample that
#: reaches CloudWatch a little late is still inside the range of some evaluation (a one-minute
#: range at a one-minute interval would miss any sample that arrives after the evaluation of
#: its own minute). The contributor breaches for five minutes after the event, then recovers.
EVENT_RANGE_S: Final = RANGE_S
#: A GPU is lost when every one of its samples in the last two minutes says so (Classic's
#: gpu-lost: two one-minute periods).
LOST_RANGE_S: Final = 120
#: A GPU that sent no ``gpu_healthy`` sample (every cycle, every GPU) in the last ten minutes
#: is silent: three cycles at the longest interval the silence check allows without a wider
#: look back (lambdas/silence_check/config.py, ``MIN_LOOKBACK_S``, ``MISSED_CYCLES``).
SILENT_RANGE_S: Final = 600
#: Kube State Metrics' capacity is read over two scrapes at the add-on's 30 s: a node deleted
#: from the API leaves the result two minutes later, well inside the ten minutes its GPUs'
#: last samples stay in ``SILENT_RANGE_S``, so a node scaled in never breaches.
CAPACITY_RANGE_S: Final = 120
#: A node that just joined has its capacity as soon as the device plugin registers its GPUs;
#: its exporter pod starts beside it. Five minutes for the exporter's first cycle before the
#: node pages (Classic's silence check gives an instance 15 minutes from launch, boot and
#: join included: lambdas/silence_check/config.py ``DEFAULT_GRACE_S``).
SILENT_PENDING_S: Final = 300


def _selector(metric: str, cluster: str, labels: DcgmLabels, *matchers: str) -> str:
    q = quote_label
    return (
        "{"
        + ", ".join(
            (
                f"__name__={quote_string(metric)}",
                f"{q(labels.cluster)}={quote_string(cluster)}",
                *matchers,
            )
        )
        + "}"
    )


def _by(*names: str) -> str:
    return ", ".join(quote_label(n) for n in names)


def gpu_contributor(labels: DcgmLabels = CLOUDWATCH) -> tuple[str, ...]:
    """The labels a per-GPU page needs: cluster, node, GPU, and the namespace and pod that hold
    the GPU (absent where none does: ``max by`` then leaves them out)."""
    return (labels.cluster, labels.node, labels.gpu, labels.namespace, labels.pod)


def _minutes(seconds: int) -> str:
    return f"{seconds // 60}m"


def _query(query: str, labels: DcgmLabels, lookback_s: int, pending_s: int = 0) -> PromQLQuery:
    return PromQLQuery(
        query=query,
        evaluation_interval_s=EVALUATION_INTERVAL_S,
        pending_period_s=pending_s,
        recovery_period_s=RECOVERY_S,
        labels=labels,
        lookback_s=lookback_s,
    )


def otlp_low_power_query(
    cluster: str, percent: float, window_minutes: int, labels: DcgmLabels = CLOUDWATCH
) -> PromQLQuery:
    """Each in-use GPU whose peak ``gpu_allocated_power_utilization`` (its draw as a percent of
    its own enforced limit: an H100's 700 W and an L4's 72 W alike) over the last ``RANGE_S``
    stayed under ``percent``. The exporter sends the series only while the GPU is in use, so an
    idle GPU is never returned. Pending for the rest of the window, as ``low_power_query``."""
    metric = str(GpuMetric.ALLOCATED_POWER_UTILIZATION)
    selector = _selector(metric, cluster, labels)
    return _query(
        f"max by ({_by(*gpu_contributor(labels))}) "
        f"(max_over_time({selector}[{_minutes(RANGE_S)}])) < {percent:g}",
        labels,
        RANGE_S,
        pending_s=window_minutes * 60 - RANGE_S,
    )


def otlp_xid_query(cluster: str, fatal: bool, labels: DcgmLabels = CLOUDWATCH) -> PromQLQuery:
    """Each GPU and XID code whose counter stepped in the last ``EVENT_RANGE_S``: its latest
    value in that range differs from its latest value in the range before, or it has no value
    before (a counter born at its first XID, whose single sample ``increase`` cannot see:
    "increase ... needs at least two samples", and a code's counter is created only when the
    code first happens). The same reading holds whether the exporter sends a counter at
    each event only or every cycle, and after an exporter restart resets it. Compared per GPU
    and code (``on``), so a new pod on the GPU is no new counter; the pod is named from the
    latest range. ``fatal``: ``gpu_xid_fatal_errors`` above 0 (the exporter counts 0 for a code
    that needs no action); else ``gpu_xid_errors`` of the codes without a fatal count."""
    name = GpuMetric.XID_FATAL_ERRORS if fatal else GpuMetric.XID_ERRORS
    gpu = (labels.cluster, labels.node, labels.gpu, labels.xid_code)
    keep = _by(*gpu_contributor(labels), labels.xid_code)
    on = _by(*gpu)
    window = _minutes(EVENT_RANGE_S)
    selector = _selector(str(name), cluster, labels)
    now = f"max by ({keep}) (last_over_time({selector}[{window}]))"
    before = f"max by ({on}) (last_over_time({selector}[{window}] offset {window}))"
    stepped = f"({now} != on ({on}) group_left () {before}) or ({now} unless on ({on}) {before})"
    if fatal:
        return _query(f"({stepped}) > 0", labels, 2 * EVENT_RANGE_S)
    fatal_selector = _selector(str(GpuMetric.XID_FATAL_ERRORS), cluster, labels)
    fatal_codes = f"max by ({on}) (last_over_time({fatal_selector}[{window}])) > 0"
    return _query(f"({stepped}) unless on ({on}) ({fatal_codes})", labels, 2 * EVENT_RANGE_S)


def otlp_ecc_query(cluster: str, labels: DcgmLabels = CLOUDWATCH) -> PromQLQuery:
    """Each GPU that counted new uncorrectable ECC errors in a cycle of the last
    ``EVENT_RANGE_S`` (the gauge is the cycle's new errors; sent only in its non-zero hours)."""
    metric = str(GpuMetric.ECC_UNCORRECTED)
    selector = _selector(metric, cluster, labels)
    return _query(
        f"max by ({_by(*gpu_contributor(labels))}) "
        f"(max_over_time({selector}[{_minutes(EVENT_RANGE_S)}])) >= 1",
        labels,
        EVENT_RANGE_S,
    )


def otlp_throttle_query(
    cluster: str, metric: GpuMetric, window_minutes: int, labels: DcgmLabels = CLOUDWATCH
) -> PromQLQuery:
    """Each GPU throttled (``metric``: 1 or 0 a sample) in at least half its samples of the
    last ``RANGE_S``, continuously for ``window_minutes``: Classic's five-minute averages,
    every one at 0.5 or more for the window. Pending the whole window, not the window less the
    range: the gauge is sent only in its non-zero hours (exporter/fault_gate.py), so a GPU
    throttled from the top of a quiet hour breaches at its first sample, and pages
    ``window_minutes`` after its throttling began (a range of zeros before it, half a range
    later), as Classic's periods do."""
    selector = _selector(str(metric), cluster, labels)
    return _query(
        f"max by ({_by(*gpu_contributor(labels))}) "
        f"(avg_over_time({selector}[{_minutes(RANGE_S)}])) >= 0.5",
        labels,
        RANGE_S,
        pending_s=window_minutes * 60,
    )


def otlp_lost_query(cluster: str, labels: DcgmLabels = CLOUDWATCH) -> PromQLQuery:
    """Each GPU every one of whose ``gpu_healthy`` samples of the last ``LOST_RANGE_S`` is 0."""
    selector = _selector(str(GpuMetric.HEALTHY), cluster, labels)
    return _query(
        f"max by ({_by(*gpu_contributor(labels))}) "
        f"(max_over_time({selector}[{_minutes(LOST_RANGE_S)}])) == 0",
        labels,
        LOST_RANGE_S,
    )


def node_label_matchers(
    expressions: Sequence[Mapping[str, Any]], labels: DcgmLabels = CLOUDWATCH
) -> tuple[str, ...]:
    """PromQL matchers for the nodes a DaemonSet's required ``In``/``NotIn`` node expressions
    admit, on the node labels the add-on puts on Kube State Metrics' series. A node whose
    series lacks the label (the add-on keeps at most 150 attributes, ``awsattributelimit``)
    is admitted: a silent node is never read as one the exporter does not run on."""
    matchers = []
    for expression in expressions:
        name = quote_label(labels.node_label_prefix + str(expression["key"]))
        values = "|".join(str(v) for v in expression["values"])
        if expression["operator"] == "In":
            matchers.append(f"{name}=~{quote_string(values + '|')}")
        elif expression["operator"] == "NotIn":
            matchers.append(f"{name}!~{quote_string(values)}")
        else:
            raise PromQLAlarmError(
                f"node expression operator {expression['operator']!r}: only In and NotIn read"
            )
    return tuple(matchers)


def otlp_silent_query(
    cluster: str,
    node_expressions: Sequence[Mapping[str, Any]] = (),
    labels: DcgmLabels = CLOUDWATCH,
) -> PromQLQuery:
    """Each node Kube State Metrics says has N GPUs (``nvidia_com_gpu`` capacity, on a node the
    exporter's DaemonSet runs on: ``node_expressions``) of which fewer than N sent a
    ``gpu_healthy`` sample in the last ``SILENT_RANGE_S``; its value is how many are silent.

    Read against the capacity, not against the GPUs' own past: a query on a silent GPU's own
    series returns it only while the look back still holds the series, then drops it, and the
    contributor recovers while still silent. The capacity is there while the node exists, so
    the node keeps breaching; once the node leaves the API its capacity leaves the result
    within ``CAPACITY_RANGE_S``, before its GPUs' last samples leave ``SILENT_RANGE_S``: a node
    scaled in never breaches. A node none of whose GPUs report has no count at all: ``or``
    gives it 0. MIG in the device plugin's "single" strategy advertises MIG devices as
    ``nvidia.com/gpu``, more than the exporter's GPUs: such nodes would read as silent."""
    node = (labels.cluster, labels.node)
    on = _by(*node)
    capacity = _selector(
        KSM_CAPACITY,
        cluster,
        labels,
        f"{quote_label(KSM_RESOURCE)}={quote_string(KSM_GPU_RESOURCE)}",
        *node_label_matchers(node_expressions, labels),
    )
    has = f"max by ({on}) (last_over_time({capacity}[{_minutes(CAPACITY_RANGE_S)}]))"
    healthy = _selector(str(GpuMetric.HEALTHY), cluster, labels)
    reporting = (
        f"count by ({on}) (max by ({_by(*node, labels.gpu)}) "
        f"(last_over_time({healthy}[{_minutes(SILENT_RANGE_S)}])))"
    )
    return _query(
        f"({has} - on ({on}) ({reporting} or on ({on}) 0 * {has})) > 0",
        labels,
        SILENT_RANGE_S,
        pending_s=SILENT_PENDING_S,
    )
