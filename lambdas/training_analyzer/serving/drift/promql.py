"""A day of each served model's traffic read with PromQL (OTel Container Insights mode), hour by
hour, and the same hours of the weeks before: the prompt-length and generation-length histograms
(contract/serving.py ``LENGTH_HISTOGRAMS``), the requests by finish reason
(``FINISH_REASON_LABEL``), and the serving team's quality proxy (``QUALITY_METRIC``), each
grouped by namespace and model.

A histogram's counts per bucket: in a Prometheus that scraped the server (``HistogramForm``
CLASSIC, the local engine of the tests and the demo) each ``<name>_bucket`` series' hourly
increase by ``le``; in CloudWatch (NATIVE: one query asks both, ``DriftQueries``), which "stores
both [explicit-bucket and exponential histograms] as exponential histograms" ("How CloudWatch
stores histogram metrics", metrics-otel-histograms.html), the hour's count under each bound of
``NATIVE_*`` (``histogram_fraction(-Inf, b, h) * histogram_count(h)``, Prometheus 3 PromQL, the
specification CloudWatch's PromQL follows). The bounds are powers of two: an exponential
histogram's bucket bounds are ``base^i`` with ``base = 2^(2^-scale)`` (OpenTelemetry metrics
data model, "ExponentialHistogram"), so every power of two is a bound at any scale of 0 or more
and the fraction under it is exact, not interpolated. Either form's sum is read beside its
buckets (``le="sum"``) for the mean.

One query per signal and day read (two requests: an increase scans two hours back), the day and
its ``DRIFT_BASELINE_WEEKS`` weeks before; where a model has none of those weeks yet (its first
week served), the six days before, so a new model is watched from its second day, against a
weaker baseline the finding names.
"""

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from gpu_insights_agent.contract.serving import (
    FINISH_REASON_LABEL,
    LENGTH_HISTOGRAMS,
    QUALITY_METRIC,
    QUALITY_MODEL_LABEL,
    Signal,
    serving_metric,
)
from gpu_insights_agent.quality.histogram import DEFAULT_BOUNDS
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.exporter_promql import EDGE, HOUR, hourly
from lambdas.shared.promql import PromQLClient, Series, quote_label, quote_string
from lambdas.shared.serving_queries import by_labels, increase, newest_first, selector
from lambdas.shared.thresholds import DRIFT_BASELINE_WEEKS
from lambdas.training_analyzer.serving.drift.detect import DriftSignal, ModelDay, Window
from lambdas.training_analyzer.serving.drift.finding import DriftModel

DAY_S: Final = 86_400
WEEK_S: Final = 7 * DAY_S
#: Days before a model's first week whose same hours make its baseline.
FALLBACK_DAYS: Final = 6
#: The bucket label of a histogram's sum, beside its bounds.
SUM: Final = "sum"
#: The prefix of a native histogram's share under a bound (``f:64``), beside its count.
FRACTION: Final = "f:"
INF: Final = "+Inf"
#: Bounds a native histogram's counts are read under: token counts from 1 to 2^17 (131,072,
#: past any context window served today)...
NATIVE_LENGTH_BOUNDS: Final = tuple(2.0**e for e in range(18))
#: ... and a quality proxy: the sender's default bounds (tenths from 0.1 to 1: the agent's
#: quality/histogram.py ``DEFAULT_BOUNDS``) and powers of two from -256 to 256 around them (a
#: score on another scale, a log-probability).
NATIVE_QUALITY_BOUNDS: Final = tuple(
    sorted(
        {
            *DEFAULT_BOUNDS,
            *(-(2.0**e) for e in range(-8, 9)),
            0.0,
            *(2.0**e for e in range(-8, 9)),
        }
    )
)


def _tag(expr: str, value: str) -> str:
    """``expr`` with its ``le`` label set to ``value`` (an aggregate has no ``__name__``: the
    empty value matches)."""
    return f'label_replace({expr}, "le", {quote_string(value)}, "__name__", ".*")'


@dataclass(frozen=True)
class DriftQueries:
    """The hourly queries, each every server's rows of one signal, each histogram read in
    both forms (``native or classic``): a store holds one, the other part answers nothing, so
    one query serves CloudWatch and a Prometheus that scraped the servers alike."""

    cluster: str
    labels: DcgmLabels = CLOUDWATCH

    def _histogram(
        self,
        name: str,
        sel: Callable[[str], str],
        by: Sequence[str],
        bounds: Sequence[float],
    ) -> str:
        """Each hour's count per bucket (cumulative, by ``le``) and sum, per ``by`` group, of
        the histogram ``name`` (``sel`` writes its selector)."""
        group = by_labels(by)
        h = f"sum by ({group}) (rate({sel(name)}[1h]))"
        # The share under each bound (``FRACTION``-tagged), the count and the sum: each reads
        # the histogram once, the counts under the bounds made here (``_window``).
        native = [
            *(_tag(f"histogram_fraction(-Inf, {b:g}, {h})", f"{FRACTION}{b:g}") for b in bounds),
            _tag(f"histogram_count({h}) * {HOUR}", INF),
            _tag(f"histogram_sum({h}) * {HOUR}", SUM),
        ]
        classic = [
            f"sum by ({by_labels((*by, 'le'))}) ({increase(sel(name + '_bucket'), HOUR)})",
            _tag(f"sum by ({group}) ({increase(sel(name + '_sum'), HOUR)})", SUM),
        ]
        return " or ".join([*native, *classic])

    def lengths(self, signal: Signal) -> str:
        """Every server's prompt- or generation-length histogram, per namespace and model."""
        parts = []
        for m in LENGTH_HISTOGRAMS:
            if m.signal is signal:
                by = (self.labels.namespace, m.model_label)
                parts += [
                    self._histogram(
                        n,
                        lambda x, m=m: selector(x, self.cluster, m, self.labels),  # type: ignore[misc]
                        by,
                        NATIVE_LENGTH_BOUNDS,
                    )
                    for n in m.names
                ]
        return newest_first(parts)

    def quality(self) -> str:
        """The quality proxy's histogram per namespace and model."""
        cluster = f"{quote_label(self.labels.cluster)}={quote_string(self.cluster)}"
        by = (self.labels.namespace, QUALITY_MODEL_LABEL)
        return self._histogram(
            QUALITY_METRIC,
            lambda name: f"{{__name__={quote_string(name)}, {cluster}}}",
            by,
            NATIVE_QUALITY_BOUNDS,
        )

    def finish(self) -> str:
        """Each hour's finished requests per namespace, model and finish reason."""
        parts = []
        for server, label in FINISH_REASON_LABEL.items():
            m = serving_metric(server, Signal.REQUESTS)
            if m is None:
                continue
            by = by_labels((self.labels.namespace, m.model_label, label))
            parts.append(
                newest_first(
                    [f"sum by ({by}) ({increase(selector(n, self.cluster, m, self.labels), HOUR)})"
                     for n in m.names]
                )
            )  # fmt: skip
        return newest_first(parts)

    def all(self) -> dict[DriftSignal, str]:
        return {
            DriftSignal.PROMPT_LENGTH: self.lengths(Signal.PROMPT_LENGTH),
            DriftSignal.GENERATION_LENGTH: self.lengths(Signal.GENERATION_LENGTH),
            DriftSignal.FINISH_REASON: self.finish(),
            DriftSignal.QUALITY: self.quality(),
        }


#: (model, signal) to each hour's window, by the hour's start.
Hours = dict[DriftModel, dict[DriftSignal, dict[int, Window]]]


def _model(found: Mapping[str, str], labels: DcgmLabels) -> DriftModel | None:
    model = found.get(QUALITY_MODEL_LABEL) or next(
        (found[m.model_label] for m in LENGTH_HISTOGRAMS if found.get(m.model_label)), ""
    )
    return DriftModel(found.get(labels.namespace, ""), model) if model else None


def windows(
    signal: DriftSignal, series: Iterable[Series], labels: DcgmLabels = CLOUDWATCH
) -> Hours:
    """Each model's hourly windows from one query's answer: a finish mix's counts by reason, a
    histogram's per bucket (its cumulative ``le`` series told apart) with its sum."""
    cells: dict[DriftModel, dict[int, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    reason_label = next(iter(FINISH_REASON_LABEL.values()))
    for s in series:
        model = _model(s.labels, labels)
        key = s.labels.get(reason_label if signal.categorical else "le", "")
        if model is None or not key:
            continue
        for hour, value in hourly(s).items():
            if not math.isnan(value):  # a rate over no samples
                cells[model][hour][key] = cells[model][hour].get(key, 0.0) + value
    found: Hours = defaultdict(dict)
    for model, hours in cells.items():
        found[model][signal] = {
            hour: w for hour, counts in hours.items() if (w := _window(signal, counts)).total > 0
        }
    return found


def _window(signal: DriftSignal, counts: Mapping[str, float]) -> Window:
    if signal.categorical:
        return Window({k: max(0.0, v) for k, v in counts.items()})
    if any(k.startswith(FRACTION) for k in counts):
        every = counts.get(INF, 0.0)
        counts = {
            k.removeprefix(FRACTION): v * every if k.startswith(FRACTION) else v
            for k, v in counts.items()
        }
    bounds = sorted(
        (k for k in counts if k != SUM), key=lambda k: float("inf") if k == INF else float(k)
    )
    per_bin, below = {}, 0.0
    for k in bounds:
        cumulative = max(below, counts[k])
        per_bin[k] = cumulative - below
        below = cumulative
    return Window(per_bin, counts.get(SUM))


@dataclass
class DriftReads:
    """What ``read_drift`` found: each model's day and what its baseline is."""

    days: dict[DriftModel, ModelDay] = field(default_factory=dict)
    baselines: dict[DriftModel, str] = field(default_factory=dict)


def _read(
    promql: PromQLClient, queries: Mapping[DriftSignal, str], start: float, labels: DcgmLabels
) -> Hours:
    found: Hours = defaultdict(dict)
    for signal, query in queries.items():
        # Each hour's end, a millisecond before it (exporter_promql.py ``EDGE``); an increase
        # reads back two hours (``offset 1h``), which each page's scan counts.
        answer = promql.query_range_paged(
            query, start + HOUR - EDGE, start + DAY_S - EDGE, HOUR, lookback_s=2 * HOUR
        )
        for model, by_signal in windows(signal, answer, labels).items():
            found[model].update(by_signal)
    return found


def _shifted(hours: Mapping[int, Window], by: int) -> dict[int, Window]:
    return {hour + by: w for hour, w in hours.items()}


def read_drift(
    promql: PromQLClient,
    cluster: str,
    *,
    start: float,
    labels: DcgmLabels = CLOUDWATCH,
) -> DriftReads:
    """The day from ``start`` of every model that served, and its baselines."""
    queries = DriftQueries(cluster, labels).all()
    today = _read(promql, queries, start, labels)
    reads = DriftReads()
    if not today:
        return reads
    weeks = [(w * WEEK_S, _read(promql, queries, start - w * WEEK_S, labels))
             for w in range(1, DRIFT_BASELINE_WEEKS + 1)]  # fmt: skip
    before: list[tuple[int, Hours]] | None = None
    for model in sorted(today):
        lags = [(lag, hours[model]) for lag, hours in weeks if model in hours]
        baseline = f"the same hours of {len(lags)} of the {DRIFT_BASELINE_WEEKS} weeks before"
        if not lags:
            if before is None:
                before = [(d * DAY_S, _read(promql, queries, start - d * DAY_S, labels))
                          for d in range(1, FALLBACK_DAYS + 1)]  # fmt: skip
            lags = [(lag, hours[model]) for lag, hours in before if model in hours]
            baseline = (
                f"the same hours of {len(lags)} of the {FALLBACK_DAYS} days before (less than a "
                "week of history)"
            )
        if not lags:
            continue
        day = ModelDay(current=today[model])
        for signal in today[model]:
            summed: dict[int, Window] = {}
            for lag, hours in lags:
                for hour, w in _shifted(hours.get(signal, {}), lag).items():
                    summed[hour] = summed[hour] + w if hour in summed else w
            day.baseline[signal] = summed
        reads.days[model] = day
        reads.baselines[model] = baseline
    return reads
