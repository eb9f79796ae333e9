"""What an alarm watches and how it decides, in CloudWatch's own terms."""

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from cdk.alarms.promql import PromQLQuery
from dashboards.metrics_insights import insights_sql
from gpu_insights_agent.contract.resource_names import alarm_name


class Comparison(StrEnum):
    GREATER_OR_EQUAL = "GreaterThanOrEqualToThreshold"
    GREATER = "GreaterThanThreshold"
    LESS = "LessThanThreshold"
    LESS_OR_EQUAL = "LessThanOrEqualToThreshold"

    def breaches(self, value: float, threshold: float) -> bool:
        match self:
            case Comparison.GREATER_OR_EQUAL:
                return value >= threshold
            case Comparison.GREATER:
                return value > threshold
            case Comparison.LESS:
                return value < threshold
            case Comparison.LESS_OR_EQUAL:
                return value <= threshold


class MissingData(StrEnum):
    """CloudWatch's TreatMissingData values."""

    MISSING = "missing"
    NOT_BREACHING = "notBreaching"
    BREACHING = "breaching"
    IGNORE = "ignore"


class Severity(StrEnum):
    CRITICAL = "critical"
    WARNING = "warning"


@dataclass(frozen=True)
class MetricStat:
    """One metric series with a statistic, as in a metric alarm."""

    namespace: str
    metric: str
    dimensions: tuple[tuple[str, str], ...]
    stat: str  # Sum, Average, Maximum, Minimum, SampleCount


@dataclass(frozen=True)
class InsightsQuery:
    """The subset of CloudWatch Metrics Insights this project alarms on:

    ``SELECT <FUNC>(metric) FROM SCHEMA("ns", dims...) WHERE k = 'v' AND ...
    GROUP BY g... ORDER BY <FUNC>() ASC|DESC [LIMIT n]``

    With GROUP BY the query returns one series per group, and an alarm on it is a multi time
    series alarm: each series is a contributor with its own state, named by the GROUP BY
    dimensions ("Create an alarm based on a Multi Time Series Metrics Insights query",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/multi-time-series-alarm.html).
    ORDER BY decides which series are kept when more than ``limit`` (or 500) match: the
    worst ones, ranked by FUNC over the window the query reads.
    """

    namespace: str
    metric: str
    schema: tuple[str, ...]
    where: tuple[tuple[str, str], ...]
    function: str  # MAX, MIN, AVG, SUM
    group_by: tuple[str, ...] = ()
    order: str = "ASC"
    limit: int | None = None

    def sql(self) -> str:
        return insights_sql(
            self.namespace,
            self.schema,
            self.metric,
            self.function,
            self.where,
            group_by=self.group_by,
            order=self.order if self.group_by else None,
            limit=self.limit,
        )


@dataclass(frozen=True)
class Difference:
    """``m1 - FILL(m2, 0)``: what is in the first series and not in the second."""

    minuend: MetricStat
    subtrahend: MetricStat

    def expression(self) -> str:
        return "m1 - FILL(m2, 0)"


#: ``BreachCount.expression``'s bound: FLOOR(value / threshold) / K is in (-1, 1] for every
#: value within K thresholds of 0, which no GPU or job series comes near.
_K: Final = 10**15


@dataclass(frozen=True)
class BreachCount:
    """How many series of a multi time series query breach at once, per period: the series
    CloudWatch would make contributors, counted in one series an alarm can watch.

    "A Metrics Insights query that includes a GROUP BY clause returns multiple time series.
    Therefore, its returned results can be used with any metric math function that takes an
    array of time series as input" ("Use Metrics Insights queries with metric math",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-metrics-insights-math.html).
    The expression uses only what the metric math reference shows on an array (``TS[]``):
    arithmetic with a scalar (``METRICS()*100``, ``SUM(100/[m1, m2])``), FLOOR, CEIL, FILL
    (``FILL(METRICS(), 0)``) and SUM, which "of an array of time series returns a single time
    series" ("Metric math syntax and functions",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html).
    For a threshold t > 0, ``CEIL(FLOOR(v / t) / K)`` is 1 where v >= t and 0 where v < t;
    arithmetic reads a missing value as 0 (the same page), so for ``<`` a series without a
    datapoint in the period is filled with t first, and is no breach, as it is no contributor.
    """

    query: InsightsQuery
    comparison: Comparison
    threshold: float

    def __post_init__(self) -> None:
        if not self.query.group_by:
            raise ValueError(f"{self.query.sql()!r} has no GROUP BY: one series, nothing to count")
        if self.threshold <= 0 or self.comparison not in (
            Comparison.GREATER_OR_EQUAL,
            Comparison.LESS,
        ):
            raise ValueError(
                f"cannot count {self.comparison} {self.threshold:g}: a count takes >= or < a "
                "threshold above 0"
            )

    def expression(self, query_id: str = "q1") -> str:
        t = f"{self.threshold:g}"
        if self.comparison is Comparison.GREATER_OR_EQUAL:
            return f"SUM(CEIL(FLOOR({query_id} / {t}) / {_K}))"
        return f"SUM(1 - CEIL(FLOOR(FILL({query_id}, {t}) / {t}) / {_K}))"

    def breaches(self, value: float) -> bool:
        return self.comparison.breaches(value, self.threshold)


AlarmMetric = MetricStat | InsightsQuery | Difference | BreachCount


def insights_query(metric: "DeployedMetric") -> InsightsQuery | None:
    """The Metrics Insights query an alarm runs (its own, or the one its count reads): such
    an alarm counts against the Metrics Insights alarm quota and is priced by what it reads."""
    if isinstance(metric, BreachCount):
        return metric.query
    return metric if isinstance(metric, InsightsQuery) else None


#: What an alarm the app deploys watches: a metric alarm's, or a PromQL alarm's query.
DeployedMetric = AlarmMetric | PromQLQuery


@dataclass(frozen=True)
class AlarmSpec:
    """One CloudWatch alarm. ``key`` is stable: it names the alarm and its logical id."""

    key: str
    title: str
    description: str
    severity: Severity
    metric: DeployedMetric
    period_s: int
    evaluation_periods: int
    datapoints_to_alarm: int
    threshold: float
    comparison: Comparison
    missing_data: MissingData
    #: Why missing data is treated this way: shown in docs/alarms.md and the alarm description.
    missing_data_reason: str
    tags: tuple[str, ...] = field(default=())
    #: What the alarm watches, the same for every shard (``gpu-low-power``); the key adds the
    #: shard (``gpu-low-power-shard-03``). A notification maps an alarm to its kind by this.
    kind: str = ""
    #: The alarm shard it covers (contract.metrics.alarm_shard), None: not sharded.
    shard: str | None = None

    @property
    def alarm_kind(self) -> str:
        return self.kind or self.key

    #: For a fleet count alarm (catalog.cap_alarms): the kind whose series it counts.
    counts: str = ""

    @property
    def multi_series(self) -> bool:
        """One contributor per series the query returns (a Metrics Insights GROUP BY, or a
        PromQL alarm, whose every returned series is one)."""
        if isinstance(self.metric, PromQLQuery):
            return True
        return isinstance(self.metric, InsightsQuery) and bool(self.metric.group_by)

    def alarm_name(self, cluster_name: str) -> str:
        return alarm_name(cluster_name, self.key)

    def kind_name(self, cluster_name: str) -> str:
        """The alarm's name without its shard: what every shard's name starts with."""
        return alarm_name(cluster_name, self.kind)
