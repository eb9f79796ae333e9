"""Inference serving in OTel mode: PromQL over the servers' own metrics (contract/serving.py),
and the serving SLO alarms built from them.

The queries group by the labels the add-on puts on a pod's series (lambdas/shared/dcgm.py:
``@resource.k8s.cluster.name``, ``...namespace.name``, ``...deployment.name``, ``...pod.name``,
``...node.name``; the add-on's ``k8sattributes`` processor walks a pod's ReplicaSet to its
Deployment, cli/demo/realistic/otel.py ``POD_METADATA``) and the server's model label, a
datapoint attribute CloudWatch also gives bare ("Datapoint attributes also support bare
(un-prefixed) access", CloudWatch-PromQL-Querying.html). A model's SLO is read across its
replicas (``model_group``: cluster, namespace, deployment, model); a replica's queue and KV cache
on the replica (``replica_group``: the same with pod and node), so its page names both.

Histograms: CloudWatch stores an OTLP histogram as an exponential histogram, which PromQL reads
as a native histogram under the metric's name (contract/serving.py ``HistogramForm``):
``histogram_quantile(0.99, sum by (...) (rate(name[5m])))``. A Prometheus that scraped the
server (the tests' engine) holds classic ``name_bucket`` series with ``le`` instead, and the
same builders write ``sum by (le, ...)`` there. Counters and classic buckets are cumulative as
the Prometheus receiver reads them, so ``rate`` applies.

Classic Container Insights: "The CloudWatch agent supports the counter, gauge, and summary metric
types. The Prometheus metrics with the unsupported histogram metric type are dropped by the
CloudWatch agent" (ContainerInsights-Prometheus-metrics-conversion.html): no latency
percentile there, so these alarms are OTel mode's only (docs/alarms.md says what Classic shows).
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from cdk.alarms.model import AlarmSpec, Comparison, MissingData, Severity
from cdk.alarms.promql import (
    EVALUATION_INTERVAL_S,
    MAX_QUERY_CHARS,
    RECOVERY_S,
    PromQLAlarmError,
    PromQLQuery,
)
from cdk.alarms.sizing import CAP_ALARM_SERIES
from gpu_insights_agent.contract.serving import (
    FINISH_REASON_LABEL,
    HistogramForm,
    ServingMetric,
    Signal,
    servers_with,
    serving_metric,
)
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels

# The query builders live in lambdas/shared/serving_queries.py, where the dashboards read them
# too (dashboards/ imports nothing from cdk/); imported here under the names the alarms and
# their tests use.
from lambdas.shared.serving_queries import (
    RATE_RANGE_S,
    ModelFilter,
    error_ratio,
    gauge,
    minutes_of,
    model_group,
    per_second,
    quantile,
    replica_group,
    selector,
)
from lambdas.shared.serving_queries import by_labels as _by
from lambdas.shared.serving_queries import newest_first as _newest_first
from lambdas.shared.thresholds import (
    DRIFT_FALSE_ALARMS_PER_MODEL_DAY,
    DRIFT_MIN_SHARE_POINTS,
    DRIFT_MIN_SHARE_RATIO,
    SERVING_WAITING_REQUESTS,
)
from lambdas.training_analyzer.serving.drift.statistic import normal_threshold

#: The builders' names, re-exported for the alarms' callers (the module's own names stand).
__all__ = [
    "RATE_RANGE_S",
    "ModelFilter",
    "error_ratio",
    "gauge",
    "model_group",
    "per_second",
    "quantile",
    "replica_group",
    "selector",
]

#: A latency or error SLO pages after five more minutes over its target: ten minutes of it.
SLO_PENDING_S: Final = 300
#: KV cache at or above this fraction of its blocks (vLLM's gauge is 0-1: "1 means 100 percent
#: usage", vllm/v1/metrics/loggers.py) while the replica preempts requests.
KV_CACHE_FULL: Final = 0.95
#: A replica's queue is read a minute at a time: every sample of the minute over N.
QUEUE_RANGE_S: Final = 60
#: MLPerf Inference's LLM server scenario holds p99 time to first token to 2 s (Llama 2 70B,
#: MLPerf Inference v4.0: mlcommons.org, "Llama 2 70B: An MLPerf Inference Benchmark for Large
#: Language Models"): a starting target; set each model's own.
DEFAULT_TTFT_P99_S: Final = 2.0
SERVING_ALARM_KINDS: Final = (
    "serving-ttft-p99",
    "serving-e2e-p99",
    "serving-requests-waiting",
    "serving-kv-cache-full",
    "serving-errors",
    "serving-drift-truncated",
)


class ServingAlarmSettingsError(ValueError):
    """A serving target the alarms cannot use; the message names it."""


@dataclass(frozen=True, kw_only=True)
class ServingAlarmSettings:
    """The serving SLOs. Targets are p99 seconds; a model without its own target has the
    default (None: no alarm for models without one)."""

    ttft_p99_seconds: float | None = DEFAULT_TTFT_P99_S
    ttft_p99_targets: tuple[tuple[str, float], ...] = ()
    #: End-to-end latency depends on the output length a model is asked for: no default.
    e2e_p99_seconds: float | None = None
    e2e_p99_targets: tuple[tuple[str, float], ...] = ()
    #: A replica with more than this many requests waiting ...
    waiting_requests: int = SERVING_WAITING_REQUESTS
    #: ... for this many minutes pages.
    waiting_minutes: int = 5
    #: Percent of a model's finished requests that ended in an error.
    error_percent: float = 5.0
    #: The optional drift alarm (``drift_truncated_query``): off by default, the daily
    #: ``serving_drift`` finding reports drift without paging.
    drift: bool = False

    def __post_init__(self) -> None:
        for key in ("ttft_p99", "e2e_p99"):
            default = getattr(self, f"{key}_seconds")
            if default is not None and not 0 < default <= 3600:
                raise ServingAlarmSettingsError(
                    f"serving_{key}_seconds={default} must be above 0 and at most 3600"
                )
            seen: set[str] = set()
            for model, seconds in getattr(self, f"{key}_targets"):
                if not model or model in seen:
                    raise ServingAlarmSettingsError(
                        f"serving_{key}_targets: model {model!r} is empty or given twice"
                    )
                seen.add(model)
                if not 0 < seconds <= 3600:
                    raise ServingAlarmSettingsError(
                        f"serving_{key}_targets[{model!r}]={seconds} must be above 0 and at "
                        "most 3600 seconds"
                    )
        if self.waiting_requests < 0:
            raise ServingAlarmSettingsError(
                f"serving_waiting_requests={self.waiting_requests} must be 0 or more"
            )
        if not 1 <= self.waiting_minutes <= 60:
            raise ServingAlarmSettingsError(
                f"serving_waiting_minutes={self.waiting_minutes} must be 1 to 60"
            )
        if not 0 < self.error_percent < 100:
            raise ServingAlarmSettingsError(
                f"serving_error_percent={self.error_percent} must be above 0 and below 100"
            )


# --- The alarms --------------------------------------------------------------------------------


def _targets(
    default: float | None, targets: Sequence[tuple[str, float]]
) -> list[tuple[ModelFilter, float]]:
    """One (models, target) per model with its own target, and the rest at the default."""
    clauses = [(ModelFilter(only=m), s) for m, s in targets]
    if default is not None:
        clauses.append((ModelFilter(excluding=tuple(m for m, _ in targets)), default))
    return clauses


def latency_slo_query(
    signal: Signal,
    cluster: str,
    default: float | None,
    targets: Sequence[tuple[str, float]],
    *,
    form: HistogramForm = HistogramForm.NATIVE,
    labels: DcgmLabels = CLOUDWATCH,
) -> PromQLQuery | None:
    """Each model whose p99 ``signal`` over the last five minutes is over its target, one
    series per model group (its value the p99 in seconds), from every server that has the
    histogram; None where no model has a target."""
    clauses = [
        f"{quantile(m, 0.99, cluster, model_group(m, labels), form=form, labels=labels, models=f)}"
        f" > {seconds:g}"
        for m in servers_with(signal)
        for f, seconds in _targets(default, targets)
    ]
    if not clauses:
        return None
    return PromQLQuery(
        query=_newest_first(clauses),
        evaluation_interval_s=EVALUATION_INTERVAL_S,
        pending_period_s=SLO_PENDING_S,
        recovery_period_s=RECOVERY_S,
        labels=labels,
        lookback_s=RATE_RANGE_S,
    )


def waiting_query(
    cluster: str, requests: int, minutes: int, labels: DcgmLabels = CLOUDWATCH
) -> PromQLQuery:
    """Each replica every sample of whose last minute had more than ``requests`` waiting,
    pending the rest of ``minutes``: over N for M minutes."""
    clauses = [
        f"({gauge(m, cluster, replica_group(m, labels), 'min_over_time', labels=labels, range_s=QUEUE_RANGE_S)})"  # noqa: E501
        f" > {requests}"
        for m in servers_with(Signal.WAITING)
    ]
    return PromQLQuery(
        query=_newest_first(clauses),
        evaluation_interval_s=EVALUATION_INTERVAL_S,
        pending_period_s=max(0, minutes * 60 - QUEUE_RANGE_S),
        recovery_period_s=RECOVERY_S,
        labels=labels,
        lookback_s=QUEUE_RANGE_S,
    )


def kv_cache_full_query(cluster: str, labels: DcgmLabels = CLOUDWATCH) -> PromQLQuery:
    """Each replica whose KV cache reached ``KV_CACHE_FULL`` in the last five minutes while it
    preempted requests (its preemptions counter rose): a cache too small for its load, not a
    cache merely well used. Servers with both metrics only (vLLM)."""
    clauses = []
    for kv in servers_with(Signal.KV_CACHE):
        preemptions = serving_metric(kv.server, Signal.PREEMPTIONS)
        if preemptions is None:
            continue
        by = replica_group(kv, labels)
        full = f"({gauge(kv, cluster, by, labels=labels)}) >= {KV_CACHE_FULL:g}"
        rising = f"({per_second(preemptions, cluster, by, labels=labels)}) > 0"
        clauses.append(f"({full}) and on ({_by(by)}) ({rising})")
    return PromQLQuery(
        query=_newest_first(clauses),
        evaluation_interval_s=EVALUATION_INTERVAL_S,
        pending_period_s=0,
        recovery_period_s=RECOVERY_S,
        labels=labels,
        lookback_s=RATE_RANGE_S,
    )


def errors_query(cluster: str, percent: float, labels: DcgmLabels = CLOUDWATCH) -> PromQLQuery:
    """Each model whose errors were more than ``percent`` of its finished requests over the
    last five minutes (a model with no requests divides by 0 and is not returned)."""
    clauses = [
        f"({error_ratio(m, cluster, labels=labels)}) > {percent / 100:g}"
        for m in servers_with(Signal.ERRORS)
    ]
    return PromQLQuery(
        query=_newest_first(clauses),
        evaluation_interval_s=EVALUATION_INTERVAL_S,
        pending_period_s=SLO_PENDING_S,
        recovery_period_s=RECOVERY_S,
        labels=labels,
        lookback_s=RATE_RANGE_S,
    )


#: The drift alarm's hour, and the hours before it its baseline reads: the API's range
#: selectors reach back at most 24 hours (lambdas/shared/promql_limits.py), an offset's
#: included, so the same hours of the weeks before (the daily finding's baseline) are out of an
#: alarm's reach: it compares the last hour with the 22 before it.
DRIFT_HOUR_S: Final = 3600
DRIFT_BASELINE_S: Final = 22 * 3600
#: The alarm's query runs every minute: its false alarms per model-day,
#: ``DRIFT_FALSE_ALARMS_PER_MODEL_DAY``, split over a day's evaluations (Bonferroni).
DRIFT_EVALUATIONS_PER_DAY: Final = 86_400 // EVALUATION_INTERVAL_S
#: vLLM's finish reason of an output cut at max_tokens (vllm/v1/engine/__init__.py).
TRUNCATED: Final = "length"


def _requests(
    m: ServingMetric,
    cluster: str,
    by: Sequence[str],
    labels: DcgmLabels,
    where: Sequence[tuple[str, str]],
    offset_s: int,
    range_s: int,
) -> str:
    """A model's finished requests (of ``where``) over ``range_s`` ending ``offset_s`` ago:
    the rate times the range, every name of the row."""
    shift = f" offset {minutes_of(offset_s)}" if offset_s else ""
    return _newest_first(
        [f"sum by ({_by(by)}) (rate({selector(n, cluster, m, labels, where=where)}"
         f"[{minutes_of(range_s)}]{shift})) * {range_s}" for n in m.names]
    )  # fmt: skip


def drift_truncated_query(cluster: str, labels: DcgmLabels = CLOUDWATCH) -> PromQLQuery:
    """Each model whose share of outputs cut at max_tokens (finish reason ``length``) in the
    last hour is over the 22 hours' before it by more than chance allows: a two-proportion z
    test, z = (p - p0) / sqrt(q (1 - q) (1/n + 1/m)) with q the pooled share, over the line
    that a day's evaluations, each at the false-alarm rate split between them, cross on
    unchanged traffic at most ``DRIFT_FALSE_ALARMS_PER_MODEL_DAY`` of the days; and by enough
    to act on (``DRIFT_MIN_SHARE_RATIO`` times, ``DRIFT_MIN_SHARE_POINTS`` points). Its value
    is the hour's share. Servers that label a finish reason only (vLLM)."""
    z_line = normal_threshold(DRIFT_FALSE_ALARMS_PER_MODEL_DAY / DRIFT_EVALUATIONS_PER_DAY)
    clauses = []
    for server, label in FINISH_REASON_LABEL.items():
        m = serving_metric(server, Signal.REQUESTS)
        if m is None:
            continue
        by = model_group(m, labels)
        cut = ((label, TRUNCATED),)
        n = _requests(m, cluster, by, labels, (), 0, DRIFT_HOUR_S)
        c = _requests(m, cluster, by, labels, cut, 0, DRIFT_HOUR_S)
        base_n = _requests(m, cluster, by, labels, (), DRIFT_HOUR_S, DRIFT_BASELINE_S)
        base_c = _requests(m, cluster, by, labels, cut, DRIFT_HOUR_S, DRIFT_BASELINE_S)
        p, p0 = f"(({c}) / ({n}))", f"(({base_c}) / ({base_n}))"
        q = f"((({c}) + ({base_c})) / (({n}) + ({base_n})))"
        z = f"(({p} - {p0}) / sqrt({q} * (1 - {q}) * (1 / ({n}) + 1 / ({base_n}))))"
        clauses.append(
            f"{p} and ({z} > {z_line:.4g}) and ({p} > {DRIFT_MIN_SHARE_RATIO:g} * {p0})"
            f" and ({p} - {p0} >= {DRIFT_MIN_SHARE_POINTS / 100:g})"
        )
    return PromQLQuery(
        query=_newest_first(clauses),
        evaluation_interval_s=EVALUATION_INTERVAL_S,
        pending_period_s=0,
        recovery_period_s=RECOVERY_S,
        labels=labels,
        lookback_s=DRIFT_HOUR_S + DRIFT_BASELINE_S,
    )


NAMES_THE_MODEL: Final = (
    "Each contributor (the series' cluster, namespace, deployment and model labels) names the "
    "model and the Deployment that serves it."
)
NAMES_THE_REPLICA: Final = (
    "Each contributor (cluster, namespace, deployment, model, pod and node labels) names the "
    "replica and the node it runs on."
)
_ABSENT: Final = (
    "a model or replica the query does not return is within its target (or sends nothing); "
    "absent for the recovery period, its contributor is OK"
)


def _spec(
    key: str,
    title: str,
    description: str,
    severity: Severity,
    query: PromQLQuery,
    threshold: float,
) -> AlarmSpec:
    """A PromQL alarm has no threshold of its own (its query returns only what breaches):
    ``threshold`` is the line the query holds, for docs/alarms.md and the page."""
    return AlarmSpec(
        key=key,
        kind=key,
        title=title,
        description=description,
        severity=severity,
        metric=query,
        period_s=query.evaluation_interval_s,
        evaluation_periods=1,
        datapoints_to_alarm=1,
        threshold=threshold,
        comparison=Comparison.GREATER,
        missing_data=MissingData.NOT_BREACHING,
        missing_data_reason=_ABSENT,
    )


#: The longest latency query whose fleet count alarm (``count(...) >= N``, catalog.cap_alarms)
#: still fits PromQLCriteria's Query.
_MAX_LATENCY_QUERY: Final = MAX_QUERY_CHARS - len(f"count() >= {CAP_ALARM_SERIES}")


def _latency_query_that_fits(
    key: str,
    signal: Signal,
    cluster: str,
    default: float | None,
    targets: Sequence[tuple[str, float]],
    labels: DcgmLabels,
) -> PromQLQuery | None:
    """The latency SLO query, or a one-line refusal naming the targets setting: each model
    with its own target adds a clause per server, and the query and its fleet count must fit
    PromQLCriteria's 10,000 characters (cdk/alarms/promql.py MAX_QUERY_CHARS)."""
    try:
        query = latency_slo_query(signal, cluster, default, targets, labels=labels)
    except PromQLAlarmError:
        chars = f"over {MAX_QUERY_CHARS}"
    else:
        if query is None or len(query.query) <= _MAX_LATENCY_QUERY:
            return query
        chars = str(len(query.query))
    setting = key.replace("-", "_")
    raise ServingAlarmSettingsError(
        f"{setting}_targets: {len(targets)} models' targets make the {key} alarm's query "
        f"{chars} characters, where an alarm and its fleet count take at most "
        f"{_MAX_LATENCY_QUERY}: give fewer models their own target (the rest share "
        f"{setting}_seconds)"
    )


def serving_alarms(
    cluster: str, settings: ServingAlarmSettings, labels: DcgmLabels = CLOUDWATCH
) -> list[AlarmSpec]:
    """OTel mode's serving alarms, one PromQL alarm per kind for every model the cluster
    serves (a kind without a target for any model is left out)."""
    s = settings
    alarms = []
    for signal, key, title, default, targets in (
        (Signal.TTFT, "serving-ttft-p99", "Time to first token over target", s.ttft_p99_seconds,
         s.ttft_p99_targets),
        (Signal.E2E, "serving-e2e-p99", "End-to-end latency over target", s.e2e_p99_seconds,
         s.e2e_p99_targets),
    ):  # fmt: skip
        query = _latency_query_that_fits(key, signal, cluster, default, targets, labels)
        if query is None:
            continue
        named = ", ".join(f"{m} {t:g} s" for m, t in targets)
        alarms.append(
            _spec(
                key,
                title,
                f"A model's p99 {signal.value.replace('_', ' ')} over five minutes of requests "
                f"stayed above its target for {SLO_PENDING_S // 60} more minutes (targets: "
                + (f"{named}; " if named else "")
                + (f"others {default:g} s" if default is not None else "no others")
                + "). The value is the p99 in seconds. Look at the model's requests waiting and "
                "KV cache (a saturated replica queues), its replicas' GPUs, and a traffic "
                f"spike: add replicas or lower the load. {NAMES_THE_MODEL}",
                Severity.CRITICAL,
                query,
                default if default is not None else min(t for _, t in targets),
            )
        )
    alarms.append(
        _spec(
            "serving-requests-waiting",
            "Requests waiting on a replica",
            f"A replica had more than {s.waiting_requests} requests waiting for "
            f"{s.waiting_minutes} minutes: it runs as many as it can and the rest queue. The "
            "value is the fewest waiting in the last minute. Add replicas (or GPUs) to the "
            f"deployment, or check its batch limits. {NAMES_THE_REPLICA}",
            Severity.WARNING,
            waiting_query(cluster, s.waiting_requests, s.waiting_minutes, labels),
            s.waiting_requests,
        )
    )
    alarms.append(
        _spec(
            "serving-kv-cache-full",
            "KV cache full, requests preempted",
            f"A replica's KV cache reached {KV_CACHE_FULL:.0%} of its blocks while it "
            "preempted requests in the last five minutes: requests are evicted and recomputed, "
            "and latency rises. Give the server more GPU memory for its cache, fewer "
            f"concurrent sequences, or more replicas. {NAMES_THE_REPLICA}",
            Severity.WARNING,
            kv_cache_full_query(cluster, labels),
            KV_CACHE_FULL,
        )
    )
    alarms.append(
        _spec(
            "serving-errors",
            "Serving errors over target",
            f"More than {s.error_percent:g}% of a model's finished requests ended in an error "
            f"over five minutes, for {SLO_PENDING_S // 60} more minutes. The value is the "
            "error fraction. Read the server's log in Container Insights' application log "
            f"group. {NAMES_THE_MODEL}",
            Severity.CRITICAL,
            errors_query(cluster, s.error_percent, labels),
            s.error_percent / 100,
        )
    )
    if s.drift:
        alarms.append(
            _spec(
                "serving-drift-truncated",
                "More outputs cut at max_tokens",
                "A model's share of outputs cut at max_tokens (finish reason length) in the "
                "last hour rose over the 22 hours before it, by more than chance allows at its "
                f"traffic and at least {DRIFT_MIN_SHARE_RATIO:g} times and "
                f"{DRIFT_MIN_SHARE_POINTS:g} points (docs/drift.md). The value is the hour's "
                "share. Clients ask for longer answers than max_tokens allows, or the model "
                "writes longer ones: raise max_tokens or read a sample of the outputs; the "
                f"daily serving_drift finding says what else moved. {NAMES_THE_MODEL}",
                Severity.WARNING,
                drift_truncated_query(cluster, labels),
                DRIFT_MIN_SHARE_RATIO,
            )
        )
    return alarms
