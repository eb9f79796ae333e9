"""PromQL over the inference servers' own metrics (contract/serving.py): the pure query
builders that the serving SLO alarms (cdk/alarms/serving_promql.py) and the serving dashboards
(dashboards/serving.py) both write their queries with, so a dashboard draws what an alarm reads.

The queries group by the labels the add-on puts on a pod's series (lambdas/shared/dcgm.py:
``@resource.k8s.cluster.name``, ``...namespace.name``, ``...deployment.name``, ``...pod.name``,
``...node.name``) and the server's model label. Histograms: CloudWatch's native form
(``histogram_quantile(q, sum by (...) (rate(name[5m])))``) or a Prometheus scrape's classic
``name_bucket`` series with ``le`` (``HistogramForm``); cdk/alarms/serving_promql.py's docstring
cites both.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from gpu_insights_agent.contract.serving import (
    ERRORS_APART,
    HTTP_STATUS,
    QUALITY_METRIC,
    QUALITY_MODEL_LABEL,
    SERVERS,
    HistogramForm,
    HttpStatus,
    MetricType,
    ServingMetric,
    Signal,
    name_regex,
    serving_metric,
)
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.promql import quote_label, quote_string

#: A rate or a quantile from five minutes of requests, as the GPU alarms read five minutes of
#: samples (cdk/alarms/promql.py ``RANGE_S``: a test holds the two equal).
RATE_RANGE_S: Final = 300


def model_group(metric: ServingMetric, labels: DcgmLabels = CLOUDWATCH) -> tuple[str, ...]:
    """What names a model's serving: cluster, namespace, deployment, the server's model label."""
    return _model_group(metric.model_label, labels)


def _model_group(model_label: str, labels: DcgmLabels) -> tuple[str, ...]:
    return (labels.cluster, labels.namespace, labels.deployment, model_label)


def replica_group(metric: ServingMetric, labels: DcgmLabels = CLOUDWATCH) -> tuple[str, ...]:
    """One replica of a model: the model's group with its pod and node."""
    return (*model_group(metric, labels), labels.pod, labels.node)


def by_labels(names: Iterable[str]) -> str:
    return ", ".join(quote_label(n) for n in names)


def minutes_of(seconds: int) -> str:
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"


def selector(
    name: str,
    cluster: str,
    metric: ServingMetric,
    labels: DcgmLabels = CLOUDWATCH,
    models: "ModelFilter | None" = None,
    where: Sequence[tuple[str, str]] = (),
) -> str:
    """``{__name__="name", cluster="...", <the row's matchers>, <model matchers>}``; for a
    server whose metrics also arrive under Ray's spelling (vLLM: Ray Serve LLM's
    ``ray_vllm_*``), ``__name__=~`` both spellings."""
    name_matcher = (
        f"__name__=~{quote_string(name_regex(name))}"
        if SERVERS[metric.server].also_under_ray
        else f"__name__={quote_string(name)}"
    )
    matchers = [
        name_matcher,
        f"{quote_label(labels.cluster)}={quote_string(cluster)}",
        *(f"{quote_label(k)}={quote_string(v)}" for k, v in metric.matchers),
        *(models.matchers(metric.model_label) if models else ()),
        *(f"{quote_label(k)}={quote_string(v)}" for k, v in where),
    ]
    return "{" + ", ".join(matchers) + "}"


@dataclass(frozen=True)
class ModelFilter:
    """One model (``only``), or every model but some (``excluding``)."""

    only: str | None = None
    excluding: tuple[str, ...] = ()

    def matchers(self, model_label: str) -> tuple[str, ...]:
        label = quote_label(model_label)
        if self.only is not None:
            return (f"{label}={quote_string(self.only)}",)
        return tuple(f"{label}!={quote_string(m)}" for m in self.excluding)


def increase(sel: str, range_s: int) -> str:
    """A counter series' increase over ``range_s``: its rate times the range where the range
    holds two samples or more (a scrape), else its last sample in the range less the last in
    the range before (a store sampled once a range: the demo's hourly week), never below 0 (a
    restart's range is lost, not read as negative). Per series: aggregate it after."""
    window = minutes_of(range_s)
    last = f"last_over_time({sel}[{window}])"
    before = f"last_over_time({sel}[{window}] offset {window})"
    return f"(rate({sel}[{window}]) * {range_s} or clamp_min({last} - {before}, 0))"


def newest_first(parts: Sequence[str]) -> str:
    """Each rename's aggregate, the newest name's where a group sends it (``or`` keeps the
    left side's series and adds the right's only for groups the left lacks)."""
    return parts[0] if len(parts) == 1 else " or ".join(f"({p})" for p in parts)


def quantile(
    metric: ServingMetric,
    q: float,
    cluster: str,
    by: Sequence[str],
    *,
    form: HistogramForm = HistogramForm.NATIVE,
    labels: DcgmLabels = CLOUDWATCH,
    models: ModelFilter | None = None,
    range_s: int = RATE_RANGE_S,
    where: Sequence[tuple[str, str]] = (),
) -> str:
    """The ``q`` quantile of a latency histogram per ``by`` group, in seconds (of the series
    that also match ``where``: a dashboard's one deployment)."""
    if metric.type is not MetricType.HISTOGRAM or metric.seconds_per_unit is None:
        raise ValueError(f"{metric!r} is no latency histogram")
    window = minutes_of(range_s)
    parts = []
    for name in metric.names:
        if form is HistogramForm.CLASSIC:
            sel = selector(f"{name}_bucket", cluster, metric, labels, models, where)
            parts.append(f"sum by ({by_labels(('le', *by))}) (rate({sel}[{window}]))")
        else:
            sel = selector(name, cluster, metric, labels, models, where)
            parts.append(f"sum by ({by_labels(by)}) (rate({sel}[{window}]))")
    expr = f"histogram_quantile({q:g}, {newest_first(parts)})"
    scale = metric.seconds_per_unit
    return expr if scale == 1 else f"({expr} * {scale:g})"


def quality_buckets(
    cluster: str,
    *,
    range_s: int,
    form: HistogramForm = HistogramForm.NATIVE,
    labels: DcgmLabels = CLOUDWATCH,
) -> str:
    """The serving quality proxy's histogram (``QUALITY_METRIC``, which the agent's
    ``quality.recorder`` sends) per model: the counts of the values of the last ``range_s``
    seconds, each sender's cumulative series increased and summed by the model's group (native:
    one histogram per model; classic: a count per ``le``)."""
    by = _model_group(QUALITY_MODEL_LABEL, labels)
    name = QUALITY_METRIC
    if form is HistogramForm.CLASSIC:
        name, by = f"{QUALITY_METRIC}_bucket", ("le", *by)
    sel = (
        f"{{__name__={quote_string(name)}, {quote_label(labels.cluster)}={quote_string(cluster)}}}"
    )
    return f"sum by ({by_labels(by)}) (increase({sel}[{minutes_of(range_s)}]))"


def per_second(
    metric: ServingMetric,
    cluster: str,
    by: Sequence[str],
    *,
    labels: DcgmLabels = CLOUDWATCH,
    range_s: int = RATE_RANGE_S,
    where: Sequence[tuple[str, str]] = (),
) -> str:
    """A counter's per-second rate per ``by`` group (requests, tokens a second)."""
    if metric.type is not MetricType.COUNTER:
        raise ValueError(f"{metric!r} is no counter")
    return _each_name("sum", "rate", metric, cluster, by, labels, range_s, where)


def gauge(
    metric: ServingMetric,
    cluster: str,
    by: Sequence[str],
    over_time: str = "max_over_time",
    *,
    labels: DcgmLabels = CLOUDWATCH,
    range_s: int = RATE_RANGE_S,
    where: Sequence[tuple[str, str]] = (),
) -> str:
    """A gauge read over the range (``over_time``) and its most per ``by`` group: a replica's
    queue, KV cache."""
    if metric.type is not MetricType.GAUGE:
        raise ValueError(f"{metric!r} is no gauge")
    return _each_name("max", over_time, metric, cluster, by, labels, range_s, where)


def _each_name(
    aggregate: str,
    function: str,
    metric: ServingMetric,
    cluster: str,
    by: Sequence[str],
    labels: DcgmLabels,
    range_s: int,
    where: Sequence[tuple[str, str]],
) -> str:
    """``aggregate by (by) (function(<name>[range]))`` for each of the metric's names, the
    newest name's where a group sends it."""
    window = minutes_of(range_s)
    return newest_first(
        [
            f"{aggregate} by ({by_labels(by)}) "
            f"({function}({selector(n, cluster, metric, labels, where=where)}[{window}]))"
            for n in metric.names
        ]
    )


def error_ratio(
    errors: ServingMetric,
    cluster: str,
    *,
    labels: DcgmLabels = CLOUDWATCH,
    range_s: int = RATE_RANGE_S,
) -> str:
    """A model's errors as a fraction of its finished requests (both from the table), per
    model group; where a server counts errors apart from its requests (Triton) over both."""
    requests = serving_metric(errors.server, Signal.REQUESTS)
    if errors.signal is not Signal.ERRORS or requests is None:
        raise ValueError(f"{errors!r} is no errors row with a requests row beside it")
    by = model_group(errors, labels)
    failed = per_second(errors, cluster, by, labels=labels, range_s=range_s)
    total = per_second(requests, cluster, by, labels=labels, range_s=range_s)
    if errors.server in ERRORS_APART:
        total = f"({total}) + on ({by_labels(by)}) ({failed})"
    engine = f"({failed}) / on ({by_labels(by)}) ({total})"
    if errors.server not in HTTP_STATUS:
        return engine
    http = HTTP_STATUS[errors.server]
    answered = _http_per_model(http, errors, cluster, labels, range_s, ())
    failed_http = _http_per_model(
        http, errors, cluster, labels, range_s, ((http.status_label, http.error),)
    )
    return f"(({failed_http}) / on ({by_labels(by)}) ({answered})) or ({engine})"


def _http_per_model(
    http: HttpStatus,
    errors: ServingMetric,
    cluster: str,
    labels: DcgmLabels,
    range_s: int,
    where: Sequence[tuple[str, str]],
) -> str:
    """The server's HTTP requests a second to its inference handlers per model group: each
    replica's (its pod) joined to the model its ``joined`` gauge names."""
    gauge_row = serving_metric(errors.server, http.joined)
    if gauge_row is None:
        raise ValueError(f"{errors.server} has no {http.joined} row to name a replica's model")
    replica = (labels.cluster, labels.namespace, labels.deployment, labels.pod)
    matchers = ", ".join(
        [
            f"__name__={quote_string(http.name)}",
            f"{quote_label(labels.cluster)}={quote_string(cluster)}",
            f"handler=~{quote_string(http.handlers)}",
            *(f"{quote_label(k)}={quote_string(v)}" for k, v in where),
        ]
    )
    rate = f"sum by ({by_labels(replica)}) (rate({{{matchers}}}[{minutes_of(range_s)}]))"
    model = gauge_row.model_label
    named = newest_first(
        [
            f"group by ({by_labels((*replica, model))}) ({selector(n, cluster, gauge_row, labels)})"
            for n in gauge_row.names
        ]
    )
    joined = f"({rate}) * on ({by_labels(replica)}) group_left ({quote_label(model)}) ({named})"
    return f"sum by ({by_labels(model_group(errors, labels))}) ({joined})"
