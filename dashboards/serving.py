"""The inference serving dashboards, OTel mode only: one per cluster over its models, and one
per deployment over its replicas and their GPUs. Every widget is a PromQL chart written with the
serving alarms' own builders (lambdas/shared/serving_queries.py), so it draws what they read.

Classic mode has none: its agent drops the servers' histograms ("The Prometheus metrics with the
unsupported histogram metric type are dropped by the CloudWatch agent",
ContainerInsights-Prometheus-metrics-conversion.html) and PromQL reads no Classic metric, so
neither the latencies nor the models' series are there to draw.

Bounds, as the GPU dashboards' (dashboards/promql.py): each widget keeps the models (or
replicas) among the ``MODELS_DRAWN`` busiest over the day that ends the range (their finished
requests, ``increase(...[1d] @ end())``), picked once, so a widget draws at most that many lines
per server whatever the cluster serves; a count says how many models that leaves out. A widget
holds one query per server that has the signal (the servers' model labels differ), each bounded
by its own text (cli/backtest/promql_widgets.py).

Thresholds: a chart widget draws no annotation (``dashboards.bodies._gpu_widget``), and a
constant line would be a query without a metric, which CloudWatch refuses ("The expression must
select a metric by name", CloudWatch-PromQL-API-QueryMetrics.html): the alarms' targets
(``ServingTargets``, built by the CDK app from the deployed settings) are written in the titles
of the widgets that show what the alarms read.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from dashboards.body import body, typed_input
from dashboards.promql import RANK_WINDOW_S
from dashboards.promql import selector as dcgm_selector
from dashboards.widgets import Widget, promql_chart, text
from gpu_insights_agent.contract.metrics import DCGM_GPU_METRICS, GpuMetric
from gpu_insights_agent.contract.serving import (
    FINISH_REASON_LABEL,
    LENGTH_HISTOGRAMS,
    HistogramForm,
    ServingMetric,
    Signal,
    servers_with,
    serving_metric,
)
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.promql import quote_label
from lambdas.shared.serving_queries import (
    by_labels,
    error_ratio,
    gauge,
    increase,
    minutes_of,
    model_group,
    newest_first,
    per_second,
    quantile,
    replica_group,
    selector,
)

SERVING_DASHBOARD: Final = "serving"
DEPLOYMENT_DASHBOARD: Final = "serving-deployment"
#: Models a serving widget draws (per server), the busiest of the day.
MODELS_DRAWN: Final = 10
#: Replicas a deployment widget draws: more than a deployment usually runs.
REPLICAS_DRAWN: Final = 20
QUANTILES: Final = (0.5, 0.9, 0.99)
NAMESPACE_PATTERN: Final = "NAMESPACE_TO_SHOW"
DEPLOYMENT_PATTERN: Final = "DEPLOYMENT_TO_SHOW"
NAMESPACE_VARIABLE: Final = "namespace"
DEPLOYMENT_VARIABLE: Final = "deployment"
MODELS_SERVING: Final = "Models serving"
MODELS_NOT_DRAWN: Final = f"Models not drawn (beyond the {MODELS_DRAWN} busiest)"
#: Drift's charts (docs/drift.md) read an hour of requests, as its tests do.
DRIFT_WINDOW_S: Final = 3600
#: vLLM's finish reason of an output cut at max_tokens (vllm/v1/engine/__init__.py
#: ``FinishReason.LENGTH``: "max_tokens was consumed, or max_model_len was reached").
TRUNCATED: Final = "length"


@dataclass(frozen=True)
class ServingTargets:
    """The serving alarms' thresholds, as deployed (cdk/alarms/serving_promql.py
    ``ServingAlarmSettings``); None where that alarm is not deployed."""

    ttft_p99_s: float | None = None
    ttft_p99_targets: tuple[tuple[str, float], ...] = ()
    e2e_p99_s: float | None = None
    e2e_p99_targets: tuple[tuple[str, float], ...] = ()
    #: More than this many waiting on one replica, for ``waiting_minutes``.
    waiting_requests: int | None = None
    waiting_minutes: int = 0
    #: KV cache full at this fraction (0-1) while the replica preempts.
    kv_cache_full: float | None = None
    error_percent: float | None = None

    def latency(self, signal: Signal) -> str:
        """``alarm above 2 s (llama 1.5 s)``, or "" where no p99 alarm reads ``signal``."""
        default, own = {
            Signal.TTFT: (self.ttft_p99_s, self.ttft_p99_targets),
            Signal.E2E: (self.e2e_p99_s, self.e2e_p99_targets),
        }.get(signal, (None, ()))
        parts = [f"{m} {t:g} s" for m, t in own]
        if default is None and not parts:
            return ""
        head = f"alarm above {default:g} s" if default is not None else "alarm above"
        return f"{head} ({', '.join(parts)})" if parts else head


#: No serving alarm deployed: no target in a title.
NO_TARGETS: Final = ServingTargets()


def _titled(title: str, alarm: str) -> str:
    return f"{title}; {alarm}" if alarm else title


@dataclass(frozen=True)
class _Reads:
    cluster: str
    labels: DcgmLabels
    form: HistogramForm
    #: Extra matchers every serving series is selected with (the drill-down's deployment).
    where: tuple[tuple[str, str], ...] = ()


def _requests_ranked(reads: _Reads, group: Callable[[ServingMetric], Sequence[str]]) -> str:
    """Each group's finished requests over the day that ends the range, every server's."""
    parts = []
    for m in servers_with(Signal.REQUESTS):
        by = by_labels(group(m))
        window = minutes_of(RANK_WINDOW_S)
        parts += [
            f"sum by ({by}) (increase("
            f"{selector(n, reads.cluster, m, reads.labels, where=reads.where)}[{window}] @ end()))"
            for n in m.names
        ]
    return newest_first(parts)


def _bounded(shown: str, keys: Sequence[str], ranked: str, limit: int, scale: int = 1) -> str:
    """``shown`` (one series per ``keys``), times ``scale``, kept where its keys are among the
    ``limit`` first of ``ranked``."""
    by = by_labels(keys)
    left = f"max by ({by}) ({shown})" + (f" * {scale}" if scale != 1 else "")
    return f"({left}) and on ({by}) topk({limit}, {ranked})"


def _chart(
    title: str,
    signal: Signal,
    query: Callable[[ServingMetric], str | None],
    *,
    width: int = 8,
) -> Widget:
    """One bounded query per server with ``signal``, labelled with the server."""
    queries = [(q, str(m.server)) for m in servers_with(signal) if (q := query(m)) is not None]
    return promql_chart(title, queries, width=width)


def _model_widgets(reads: _Reads, targets: ServingTargets) -> list[list[Widget]]:
    c, lb, f = reads.cluster, reads.labels, reads.form
    ranked = _requests_ranked(reads, lambda m: model_group(m, lb))

    def top(m: ServingMetric, shown: str, scale: int = 1) -> str:
        return _bounded(shown, model_group(m, lb), ranked, MODELS_DRAWN, scale)

    def rate(signal: Signal, title: str, scale: int = 1) -> Widget:
        return _chart(
            title, signal, lambda m: top(m, per_second(m, c, model_group(m, lb), labels=lb), scale)
        )

    def latency(signal: Signal, name: str, q: float) -> Widget:
        return _chart(
            _titled(
                f"{name} p{q * 100:g} (s), {MODELS_DRAWN} models",
                targets.latency(signal) if q == max(QUANTILES) else "",
            ),
            signal,
            lambda m: top(m, quantile(m, q, c, model_group(m, lb), form=f, labels=lb)),
        )

    def latency_row(signal: Signal, name: str) -> list[Widget]:
        return [latency(signal, name, q) for q in QUANTILES]

    def replicas_summed(m: ServingMetric) -> str:
        replicas = gauge(m, c, replica_group(m, lb), labels=lb)
        return f"sum by ({by_labels(model_group(m, lb))}) ({replicas})"

    waiting = ""
    if targets.waiting_requests is not None:
        waiting = (
            f"alarm above {targets.waiting_requests} on a replica for {targets.waiting_minutes} min"
        )
    kv = ""
    if targets.kv_cache_full is not None:
        kv = f"alarm at {targets.kv_cache_full:.0%} while preempting"
    errors = "" if targets.error_percent is None else f"alarm above {targets.error_percent:g}%"
    counted = f"count({_requests_ranked(reads, lambda m: model_group(m, lb))})"
    # All the models less those drawn: 0 where none is left out (a count of nothing would be
    # no data, which reads as a broken widget).
    not_drawn = f"{counted} - count(topk({MODELS_DRAWN}, {ranked}))"
    return [
        [
            promql_chart(MODELS_SERVING, [(counted, "models")], width=4, height=3),
            promql_chart(MODELS_NOT_DRAWN, [(not_drawn, "models")], width=4, height=3),
        ],
        [
            rate(Signal.REQUESTS, f"Requests a second, {MODELS_DRAWN} models"),
            rate(Signal.PROMPT_TOKENS, "Prompt tokens a second"),
            rate(Signal.GENERATION_TOKENS, "Generation tokens a second"),
        ],
        latency_row(Signal.TTFT, "Time to first token"),
        latency_row(Signal.INTER_TOKEN, "Inter-token latency"),
        latency_row(Signal.E2E, "End-to-end latency"),
        [
            _chart(
                "Requests running (all replicas)",
                Signal.RUNNING,
                lambda m: top(m, replicas_summed(m)),
            ),
            _chart(
                _titled("Requests waiting, the busiest replica", waiting),
                Signal.WAITING,
                lambda m: top(m, gauge(m, c, model_group(m, lb), labels=lb)),
            ),
            _chart(
                _titled("KV cache used, the fullest replica (%)", kv),
                Signal.KV_CACHE,
                # vLLM's gauge is a 0-1 fraction ("1 means 100 percent usage",
                # vllm/v1/metrics/loggers.py): shown in percent.
                lambda m: top(m, gauge(m, c, model_group(m, lb), labels=lb), 100),
            ),
        ],
        [
            rate(Signal.PREEMPTIONS, "Preemptions a minute", 60),
            _chart(
                _titled("Errors (% of finished requests)", errors),
                Signal.ERRORS,
                lambda m: top(m, error_ratio(m, c, labels=lb), 100),
            ),
        ],
    ]


def _drift_widgets(reads: _Reads) -> list[Widget]:
    """Each model's mean prompt and generation length and its share of truncated outputs, over
    the hour: what drift (lambdas/training_analyzer/serving/drift) tests, to see a shift by."""
    c, lb = reads.cluster, reads.labels
    ranked = _requests_ranked(reads, lambda m: model_group(m, lb))
    window = minutes_of(DRIFT_WINDOW_S)

    def mean(m: ServingMetric, name: str) -> str:
        by = by_labels(model_group(m, lb))
        native = f"sum by ({by}) (rate({selector(name, c, m, lb)}[{window}]))"
        classic = " / ".join(
            f"sum by ({by}) ({increase(selector(name + part, c, m, lb), DRIFT_WINDOW_S)})"
            for part in ("_sum", "_count")
        )
        shown = f"(histogram_sum({native}) / histogram_count({native})) or ({classic})"
        return _bounded(shown, model_group(m, lb), ranked, MODELS_DRAWN)

    def lengths(signal: Signal, title: str) -> Widget:
        rows = [m for m in LENGTH_HISTOGRAMS if m.signal is signal]
        return promql_chart(title, [(mean(m, m.names[0]), str(m.server)) for m in rows])

    truncated = []
    for server, label in FINISH_REASON_LABEL.items():
        m = serving_metric(server, Signal.REQUESTS)
        if m is None:
            continue
        by = by_labels(model_group(m, lb))
        cut = selector(m.names[0], c, m, lb, where=((label, TRUNCATED),))
        every = selector(m.names[0], c, m, lb)
        share = (
            f"sum by ({by}) ({increase(cut, DRIFT_WINDOW_S)}) / "
            f"sum by ({by}) ({increase(every, DRIFT_WINDOW_S)})"
        )
        truncated.append(
            (_bounded(share, model_group(m, lb), ranked, MODELS_DRAWN, 100), str(server))
        )
    return [
        lengths(Signal.PROMPT_LENGTH, "Mean prompt length (tokens, the hour), drift"),
        lengths(Signal.GENERATION_LENGTH, "Mean generation length (tokens, the hour), drift"),
        promql_chart("Outputs cut at max_tokens (% of finished, the hour), drift", truncated),
    ]


def serving(
    cluster: str,
    region: str,
    targets: ServingTargets = NO_TARGETS,
    labels: DcgmLabels = CLOUDWATCH,
    form: HistogramForm = HistogramForm.NATIVE,
) -> dict[str, Any]:
    """The cluster's models: the ``MODELS_DRAWN`` busiest of the day, per model its requests,
    latencies, tokens, queue, KV cache, preemptions and errors."""
    reads = _Reads(cluster, labels, form)
    return body(
        [
            [
                text(
                    f"# Inference serving of {cluster}\nThe {MODELS_DRAWN} models with the most "
                    "finished requests in the day, one line per model (namespace, deployment, "
                    "model) and server; the alarms' targets are in the titles. Open the "
                    f"{DEPLOYMENT_DASHBOARD} dashboard for one deployment's replicas and GPUs."
                )
            ],
            *_model_widgets(reads, targets),
            _drift_widgets(reads),
        ],
        region,
    )


def _gpu_power(reads: _Reads, metric: str, function: str, ranked: str, scale: int = 1) -> str:
    """Each replica pod's GPUs' ``metric`` (each GPU's mean over five minutes, ``function``
    over the pod's GPUs), for
    the pods of the deployment among the ``REPLICAS_DRAWN`` busiest."""
    lb = reads.labels
    pod = (lb.namespace, lb.pod)
    series = dcgm_selector(metric, [(lb.cluster, reads.cluster), (lb.namespace, NAMESPACE_PATTERN)])
    by = ", ".join(quote_label(k) for k in pod)
    shown = f"{function} by ({by}) (avg_over_time({series}[{minutes_of(300)}]))"
    return _bounded(shown, pod, ranked, REPLICAS_DRAWN, scale)


def deployment(
    cluster: str,
    region: str,
    targets: ServingTargets = NO_TARGETS,
    labels: DcgmLabels = CLOUDWATCH,
    form: HistogramForm = HistogramForm.NATIVE,
    *,
    exporter_otlp: bool = False,
) -> dict[str, Any]:
    """One deployment (namespace and name typed above) replica by replica: its latencies,
    queue and KV cache a line per pod, beside its GPUs' power per pod. DCGM's power in watts
    always (the add-on's DCGM fields have no power limit: ``ADDON_DCGM_FIELDS``); the
    exporter's power against the limit where it sends OTLP (``exporter_otlp``), the pod being
    a resource attribute of its series while the pod holds the GPU (lambdas/shared/dcgm.py)."""
    lb = labels
    where = ((lb.namespace, NAMESPACE_PATTERN), (lb.deployment, DEPLOYMENT_PATTERN))
    reads = _Reads(cluster, lb, form, where)
    c = cluster
    ranked = _requests_ranked(reads, lambda m: replica_group(m, lb))
    pods_ranked = _requests_ranked(reads, lambda m: (lb.namespace, lb.pod))

    def per_replica(m: ServingMetric, shown: str, scale: int = 1) -> str:
        return _bounded(shown, replica_group(m, lb), ranked, REPLICAS_DRAWN, scale)

    def latency(signal: Signal, name: str) -> Widget:
        return _chart(
            _titled(f"{name} p99 (s), per replica", targets.latency(signal)),
            signal,
            lambda m: per_replica(
                m, quantile(m, 0.99, c, replica_group(m, lb), form=form, labels=lb, where=where)
            ),
        )

    def replica_gauge(signal: Signal, title: str, scale: int = 1) -> Widget:
        return _chart(
            title,
            signal,
            lambda m: per_replica(
                m, gauge(m, c, replica_group(m, lb), labels=lb, where=where), scale
            ),
        )

    power = [
        promql_chart(
            "GPU power per replica (W, DCGM)",
            [
                (
                    _gpu_power(reads, DCGM_GPU_METRICS[GpuMetric.POWER_DRAW], "sum", pods_ranked),
                    "W",
                )
            ],
        )
    ]
    if exporter_otlp:
        power.append(
            promql_chart(
                "GPU power against the limit per replica (%, the busiest GPU)",
                [(_gpu_power(reads, str(GpuMetric.POWER_UTILIZATION), "max", pods_ranked), "%")],
            )
        )
    return body(
        [
            [
                text(
                    f"# One inference deployment of {cluster}\nType the namespace and the "
                    f"deployment above: one line per replica (pod), the {REPLICAS_DRAWN} busiest "
                    "of the day; beside them their GPUs' power."
                )
            ],
            [
                latency(Signal.TTFT, "Time to first token"),
                latency(Signal.INTER_TOKEN, "Inter-token latency"),
                latency(Signal.E2E, "End-to-end latency"),
            ],
            [
                replica_gauge(Signal.KV_CACHE, "KV cache used, per replica (%)", 100),
                replica_gauge(Signal.WAITING, "Requests waiting, per replica"),
                replica_gauge(Signal.RUNNING, "Requests running, per replica"),
            ],
            power,
        ],
        region,
        [
            typed_input(NAMESPACE_VARIABLE, "Namespace", NAMESPACE_PATTERN),
            typed_input(DEPLOYMENT_VARIABLE, "Deployment", DEPLOYMENT_PATTERN),
        ],
    )
