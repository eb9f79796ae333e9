"""What each widget of a dashboard body would show over a metric history.

Pattern variables are applied first, as the console does (the pattern replaced in the body's
JSON). Each metric widget's rows are then evaluated the way CloudWatch evaluates them:
metric arrays with their statistic per period, Metrics Insights queries with
:mod:`cli.backtest.insights`, the metric-math expressions the bodies use (ids, numbers, ``+ - * /``,
parentheses, ``PERIOD(id)``), and ``SEARCH``/``SORT(SEARCH(...), FUNC, ASC|DESC, n)`` for the
storage and findings widgets (a SEARCH returns at most 500 series), and
``SORT(METRICS(), FUNC, ASC|DESC, n)`` over the widget's metric rows (the storage dashboard's
EBS widgets, one hidden row a volume). Rows with
``"visible": false`` are inputs, not drawn. A chart widget's PromQL queries (OTel mode's GPU
widgets, ``dashboards.widgets.promql_widget``) are run on a Prometheus-compatible query API
(``PromQLSource``): a real engine, not a reading of the query.

Before a widget is evaluated, it is held to the rules CloudWatch documents for what a metric
widget may hold (``widget_rule_errors``): a widget that breaks one does not render in
CloudWatch, so it is refused here, not drawn; a PromQL query is held to the rules in
:mod:`cli.backtest.promql_widgets`.
"""

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cdk.alarms.model import MetricStat
from cdk.alarms.sizing import MAX_SERIES_PER_QUERY
from cli.backtest import insights, promql_widgets
from cli.backtest.history import Sample
from cli.backtest.series import Values, aggregate, metric_values
from dashboards.widgets import CHART_WIDGET, chart_queries, is_promql
from lambdas.shared.promql import MAX_SCAN_S, PromQLClient

#: The most series one SEARCH returns.
SEARCH_MAX_SERIES = MAX_SERIES_PER_QUERY  # a SEARCH stops at 500 series too

_SEARCH = re.compile(
    r"SEARCH\('\{(?P<schema>[^}]*)\}(?P<terms>[^']*)',\s*'(?P<stat>\w+)',\s*(?P<period>\d+)\)"
)
_SORTED = re.compile(r"^SORT\((?P<search>SEARCH\(.*\)),\s*(\w+),\s*(ASC|DESC),\s*(\d+)\)")
#: ``SORT(METRICS(), FUNC, ASC|DESC, n)``: the widget's metric rows before it, ranked.
_SORTED_ROWS = re.compile(r"^SORT\(METRICS\(\),\s*(\w+),\s*(ASC|DESC),\s*(\d+)\)$")
_TERM = re.compile(r'(\w+)="([^"]*)"')
_TOKEN = re.compile(r"\s*(\d+(?:\.\d+)?|[A-Za-z_][A-Za-z0-9_]*|[()+\-*/])")
_SELECT = re.compile(r"\bSELECT\b", re.IGNORECASE)
_LIMIT = re.compile(r"\bLIMIT\s+(\d+)\s*$", re.IGNORECASE)
_RELATIVE_START = re.compile(
    r"^-P(?:(?P<days>\d+)D|(?P<weeks>\d+)W|T(?:(?P<hours>\d+)H|(?P<minutes>\d+)M))$"
)

# What a metric widget may hold, in AWS's words (Amazon CloudWatch API Reference, "Dashboard
# Body Structure and Syntax", the metric widget's ``metrics`` property,
# https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/CloudWatch-Dashboard-Body-Structure.html,
# and the User Guide's "Metrics Insights query components and syntax" and "Metrics Insights
# quotas", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-metrics-insights-querylanguage.html,
# https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-metrics-insights-limits.html).
#: "One ``metrics`` array can include 0-500 metrics and expressions."
MAX_ROWS = 500
#: "One metrics array can include no more than one Metrics Insights query."
MAX_INSIGHTS_QUERIES = 1
#: LIMIT: "The maximum value that you can specify is 500".
MAX_INSIGHTS_LIMIT = MAX_SERIES_PER_QUERY
#: "Query up to two weeks of data for visualization in your metrics, widgets, and alarm graphs."
MAX_INSIGHTS_RANGE_S = 14 * 86_400


#: The widgets that draw series: metric widgets, and chart widgets of PromQL queries.
DRAWN = frozenset({"metric", CHART_WIDGET})
#: A metric widget's period where it names none (the page's default), and a PromQL query's step
#: where it aggregates over no window.
DEFAULT_STEP_S = 300


@dataclass(frozen=True)
class PromQLSource:
    """Where a widget's PromQL queries are run (a Prometheus-compatible query API), and the
    end of the dashboard's time range, in epoch seconds."""

    client: PromQLClient
    end: float


class WidgetEvaluationError(ValueError):
    """A widget row this evaluator cannot read; the message names it."""


class WidgetRuleError(WidgetEvaluationError):
    """A widget that breaks a rule CloudWatch documents: it would not render."""


@dataclass(frozen=True)
class Line:
    label: str
    #: The value the widget shows for the series: the latest period's for a single value,
    #: the ranking value (ORDER BY function over the range, else the mean) otherwise.
    value: float


@dataclass(frozen=True)
class WidgetView:
    title: str
    lines: list[Line]

    @property
    def series(self) -> int:
        return len(self.lines)


def apply_variables(body: dict[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
    """The body with each pattern variable's pattern replaced by the value chosen for its id."""
    text = json.dumps({k: v for k, v in body.items() if k != "variables"})
    for variable in body.get("variables", []):
        if variable["type"] == "pattern" and variable["id"] in values:
            text = re.sub(variable["pattern"], values[variable["id"]], text)
    result: dict[str, Any] = json.loads(text)
    return result


Result = Values | list[tuple[str, Values, float]]


def _binary(op: str, left: Values | float, right: Values | float) -> Values | float:
    def apply(a: float, b: float) -> float | None:
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        return a / b if b else None

    if isinstance(left, dict) or isinstance(right, dict):
        keys = set(left) if isinstance(left, dict) else set()
        if isinstance(right, dict):
            keys = keys & set(right) if isinstance(left, dict) else set(right)
        out: Values = {}
        for t in keys:
            a = left[t] if isinstance(left, dict) else left
            b = right[t] if isinstance(right, dict) else right
            value = apply(a, b)
            if value is not None:
                out[t] = value
        return out
    value = apply(left, right)
    if value is None:
        raise WidgetEvaluationError("division by zero in a constant")
    return value


def math(expression: str, env: Mapping[str, Values], period: int) -> Values:
    """The metric-math subset the bodies use, over single series."""
    tokens: list[str] = _TOKEN.findall(expression)
    if "".join(tokens) != re.sub(r"\s+", "", expression):
        raise WidgetEvaluationError(f"unsupported expression {expression!r}")
    pos = 0

    def peek() -> str | None:
        return tokens[pos] if pos < len(tokens) else None

    def take() -> str:
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def factor() -> Values | float:
        token = take()
        if token == "(":
            value = expr()
            take()
            return value
        if token == "PERIOD":
            take(), take(), take()  # ( id )
            return float(period)
        if token[0].isdigit():
            return float(token)
        if token not in env:
            raise WidgetEvaluationError(f"{expression!r} names {token!r}, not a row of the widget")
        return env[token]

    def term() -> Values | float:
        value = factor()
        while peek() in {"*", "/"}:
            value = _binary(take(), value, factor())
        return value

    def expr() -> Values | float:
        value = term()
        while peek() in {"+", "-"}:
            value = _binary(take(), value, term())
        return value

    result = expr()
    return result if isinstance(result, dict) else {}


def _search(expression: str, samples: Sequence[Sample]) -> list[tuple[str, Values, float]]:
    sorted_match = _SORTED.match(expression)
    inner = sorted_match["search"] if sorted_match else expression
    found = _SEARCH.search(inner)
    if found is None:
        raise WidgetEvaluationError(f"unsupported SEARCH {expression!r}")
    namespace, *dimensions = found["schema"].split(",")
    # Terms of one name are alternatives (the bodies OR a name's values in parentheses:
    # ``(BucketName="a" OR BucketName="b")``); terms of different names must all hold.
    terms: dict[str, set[str]] = defaultdict(set)
    for name, value in _TERM.findall(found["terms"]):
        terms[name].add(value)
    (metric,) = terms.pop("MetricName")
    period = int(found["period"])
    groups: dict[frozenset[tuple[str, str]], dict[float, list[float]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for s in samples:
        if s.namespace != namespace or s.metric != metric:
            continue
        named = dict(s.dimensions)
        if set(named) != set(dimensions) or any(named.get(k) not in v for k, v in terms.items()):
            continue
        groups[s.dimensions][s.timestamp - s.timestamp % period].append(s.value)
    series = []
    for dims, periods in sorted(groups.items(), key=lambda kv: sorted(kv[0])):
        values = {t: aggregate(found["stat"], vs) for t, vs in periods.items()}
        label = " ".join(v for _, v in sorted(dims))
        series.append((label, values, sum(values.values()) / len(values)))
    series = series[:SEARCH_MAX_SERIES]
    if sorted_match:
        function, order, limit = sorted_match.group(2, 3, 4)
        series = [
            (label, values, aggregate(function, list(values.values())))
            for label, values, _ in series
        ]
        series.sort(key=lambda s: s[2], reverse=order == "DESC")
        series = series[: int(limit)]
    return series


Index = dict[tuple[str, str], list[Sample]]


def index(samples: Iterable[Sample]) -> Index:
    """Samples by namespace and metric: each row reads only its own metric's samples."""
    by_metric: Index = defaultdict(list)
    for s in samples:
        by_metric[(s.namespace, s.metric)].append(s)
    return by_metric


def _promql(query: str, span_s: float, promql: PromQLSource | None) -> Result:
    """The query's series over the dashboard's range, or over as much of its end as one
    request of the query API scans (24 hours, the query's lookback included: a day's range
    starts a lookback later), so that ``@ end()`` is the range's one end, at a step of the
    window each point aggregates (its longest unpinned range selector, ``[5m]``: 300 s; a chart
    widget names no period); each series labelled by its label values in label-name order and
    ranked by its mean, in the order its ``topk``/``bottomk`` picks."""
    if promql is None:
        raise WidgetEvaluationError(f"a PromQL query and no PromQL engine to run it: {query!r}")
    end = promql.end
    lookback = promql_widgets.lookback_seconds(query)
    step = lookback or DEFAULT_STEP_S
    start = max(end - span_s, end - MAX_SCAN_S + lookback)
    found = promql.client.query_range(query, start, end, step, lookback_s=lookback)
    series = []
    for s in found:
        values = dict(s.points)
        label = " ".join(v for k, v in sorted(s.labels.items()) if k != "__name__")
        series.append((label, values, sum(values.values()) / len(values) if values else 0.0))
    ascending = "bottomk(" in query
    series.sort(key=lambda s: (s[2] if ascending else -s[2], s[0]))
    return series


def _row(
    row: list[Any],
    by_metric: Index,
    period: int,
    env: dict[str, Values],
    env_labels: dict[str, tuple[str, Values]],
) -> tuple[dict[str, Any], Result]:
    """One row's options and result; a metric row's series is also kept, by its id, with its
    label (its own, else its dimension values) for a ``SORT(METRICS(), ...)`` after it."""
    if isinstance(row[0], str):
        samples: Sequence[Sample] = by_metric.get((row[0], row[1]), [])
        options = row[-1] if isinstance(row[-1], dict) else {}
        pairs = row[2:-1] if options else row[2:]
        dims = tuple(zip(pairs[::2], pairs[1::2], strict=True))
        stat = MetricStat(row[0], row[1], dims, options.get("stat", "Average"))
        values = metric_values(stat, samples, options.get("period", period))
        key = options.get("id", f"row{len(env_labels)}")
        env_labels[key] = (options.get("label") or " ".join(v for _, v in dims), values)
        return options, values
    options = row[0]
    expression: str = options["expression"]
    row_period = options.get("period", period)
    if expression.startswith("SELECT"):
        query = insights.parse(expression)
        found = insights.run(query, by_metric.get((query.namespace, query.metric), []), row_period)
        if not query.group_by:
            return options, found[0].values if found else {}
        return options, [(" ".join(s.group), s.values, s.score) for s in found]
    if "SEARCH(" in expression:
        return options, _search(expression, [s for group in by_metric.values() for s in group])
    ranked = _SORTED_ROWS.match(expression)
    if ranked:
        function, order, limit = ranked.groups()
        series = [
            (label, values, aggregate(function, list(values.values())))
            for label, values in env_labels.values()
            if values
        ]
        series.sort(key=lambda s: s[2], reverse=order == "DESC")
        return options, series[: int(limit)]
    return options, math(expression, env, row_period)


def _lines(label: str, result: Result, single: bool) -> list[Line]:
    if isinstance(result, dict):
        if not result:
            return []
        value = result[max(result)] if single else sum(result.values()) / len(result)
        return [Line(label, value)]
    return [
        Line(group or label, values[max(values)] if single else score)
        for group, values, score in result
        if values
    ]


def _insights_queries(rows: Sequence[list[Any]]) -> list[str]:
    return [
        row[0]["expression"]
        for row in rows
        if row and isinstance(row[0], dict) and _SELECT.search(row[0].get("expression", ""))
    ]


def _chart_rule_errors(title: str, widget: Mapping[str, Any]) -> list[str]:
    """A chart widget's queries: each PromQL over CloudWatch's metrics, held to the rules of
    :mod:`cli.backtest.promql_widgets`."""
    queries = chart_queries(widget)
    if not queries:
        return [f"{title!r}: a chart widget without a query"]
    errors = []
    for query in queries:
        if not is_promql(query):
            errors.append(f"{title!r}: a chart query that is not PromQL over metrics: {query!r}")
        else:
            errors += promql_widgets.rule_errors(title, query["query"])
    return errors


def widget_rule_errors(widget: Mapping[str, Any]) -> list[str]:
    """The documented rules the metric or chart widget breaks (none for any other widget),
    each named."""
    properties = widget["properties"]
    title = properties.get("title", "")
    if widget["type"] == CHART_WIDGET:
        return _chart_rule_errors(title, widget)
    if widget["type"] != "metric":
        return []
    rows = properties.get("metrics", [])
    errors = []
    if len(rows) > MAX_ROWS:
        errors.append(f"{title!r}: {len(rows)} rows, more than {MAX_ROWS} in one metrics array")
    queries = _insights_queries(rows)
    if len(queries) > MAX_INSIGHTS_QUERIES:
        errors.append(
            f"{title!r}: {len(queries)} Metrics Insights queries in one metrics array, "
            f"more than {MAX_INSIGHTS_QUERIES}"
        )
    for query in queries:
        if not query.lstrip().upper().startswith("SELECT"):
            errors.append(f"{title!r}: a Metrics Insights query inside a math expression {query!r}")
        limit = _LIMIT.search(query)
        if limit and int(limit[1]) > MAX_INSIGHTS_LIMIT:
            errors.append(f"{title!r}: LIMIT {limit[1]} above {MAX_INSIGHTS_LIMIT} in {query!r}")
    return errors


def _range_s(start: str) -> float | None:
    found = _RELATIVE_START.match(start)
    if found is None:
        return None  # an absolute range: nothing to check without the end
    days, weeks, hours, minutes = (int(v or 0) for v in found.group(1, 2, 3, 4))
    return ((weeks * 7 + days) * 24 + hours) * 3600.0 + minutes * 60.0


def body_rule_errors(body: Mapping[str, Any]) -> list[str]:
    """Every documented rule the body's widgets break (``widget_rule_errors``), and a default
    time range longer than the two weeks a Metrics Insights widget can show."""
    errors = [e for w in body["widgets"] for e in widget_rule_errors(w)]
    span = _range_s(body.get("start", ""))
    queries = any(
        _insights_queries(w["properties"].get("metrics", []))
        for w in body["widgets"]
        if w["type"] == "metric"
    )
    if queries and span is not None and span > MAX_INSIGHTS_RANGE_S:
        errors.append(
            f"start {body['start']!r}: Metrics Insights queries show at most two weeks of data"
        )
    return errors


def evaluate_widget(
    widget: dict[str, Any],
    by_metric: Index,
    promql: PromQLSource | None = None,
    span_s: float = 86_400,
) -> WidgetView:
    """What the widget shows; a chart widget's PromQL queries run by ``promql`` over the
    ``span_s`` before its end."""
    properties = widget["properties"]
    title = properties.get("title", "")
    if widget["type"] not in DRAWN:
        return WidgetView(title, [])
    errors = widget_rule_errors(widget)
    if errors:
        raise WidgetRuleError("; ".join(errors))
    lines: list[Line] = []
    for query in chart_queries(widget):
        found = _promql(query["query"], span_s, promql)
        lines += _lines(query.get("label") or query["id"], found, single=False)
    if widget["type"] == CHART_WIDGET:
        return WidgetView(title, lines)
    period = properties.get("period", DEFAULT_STEP_S)
    single = properties.get("view") == "singleValue"
    env: dict[str, Values] = {}
    env_labels: dict[str, tuple[str, Values]] = {}
    for row in properties["metrics"]:
        options, result = _row(row, by_metric, period, env, env_labels)
        if isinstance(result, dict) and "id" in options:
            env[options["id"]] = result
        if options.get("visible", True):
            lines += _lines(options.get("label") or options.get("id", ""), result, single)
    return WidgetView(title, lines)


def evaluate_body(
    body: dict[str, Any],
    samples: Sequence[Sample] | Index,
    variables: Mapping[str, str] | None = None,
    promql: PromQLSource | None = None,
) -> list[WidgetView]:
    """Every metric and chart widget of the body, in order, with what it shows; PromQL widgets
    run by ``promql`` over the body's default range (a day where it names none) before its
    end."""
    applied = apply_variables(body, variables or {})
    errors = body_rule_errors(applied)
    if errors:
        raise WidgetRuleError("; ".join(errors))
    by_metric = samples if isinstance(samples, dict) else index(samples)
    span = _range_s(applied.get("start", "")) or 86_400.0
    return [
        evaluate_widget(w, by_metric, promql, span)
        for w in applied["widgets"]
        if w["type"] in DRAWN
    ]
