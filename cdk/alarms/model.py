"""What an alarm watches and how it decides, in CloudWatch's own terms."""

from dataclasses import dataclass, field
from enum import StrEnum

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


AlarmMetric = MetricStat | InsightsQuery | Difference
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
