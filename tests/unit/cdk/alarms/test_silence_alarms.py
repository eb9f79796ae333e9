"""The two alarms on the silence check's metrics, replayed over what the check publishes
(lambdas/silence_check/aws.py ``metric_data``, run by run) with CloudWatch's rules: a silent
node pages once, named; it clears when it reports again or is gone; a check that stops
running pages too."""

from cdk.alarms.catalog import AlarmSettings, gpu_alarms, silence_check_alarm
from cdk.alarms.model import Comparison, InsightsQuery, MissingData
from cli.backtest.engine import backtest, report
from cli.backtest.evaluator import NO_DATA_FOR_CONTRIBUTOR, AlarmState, evaluate
from cli.backtest.history import Sample
from cli.backtest.series import metric_values
from lambdas.silence_check.silence import GpuNode, find_silent, metric_data

T0 = 1_764_000_000.0 - 1_764_000_000.0 % 3600
SETTINGS = AlarmSettings(cluster_name="train")
NODES = [
    GpuNode(f"i-0{n:016x}", "p5.48xlarge", f"ip-10-0-1-{n}.ec2.internal", 8, T0 - 3600)
    for n in (1, 2, 3)
]


def _published(at: float, silent_node: int | None) -> list[Sample]:
    """One run of the check at ``at``: every node reports but ``silent_node``."""
    reported = {
        node.private_dns_name: {str(g) for g in range(8)}
        for n, node in enumerate(NODES, start=1)
        if n != silent_node
    }
    check = find_silent(NODES, reported, now=at, grace_s=900)
    return [
        Sample(
            "GpuInsights",
            d["MetricName"],
            frozenset((x["Name"], x["Value"]) for x in d["Dimensions"]),
            d["Timestamp"].timestamp(),
            d["Value"],
        )
        for d in metric_data("train", check, at)
    ]


def _runs(silent_from: float, silent_to: float, until: float) -> list[Sample]:
    """A run every five minutes from T0 to ``until``; node 2 silent in [from, to)."""
    samples: list[Sample] = []
    at = T0 + 60
    while at < until:
        samples += _published(at, 2 if silent_from <= at < silent_to else None)
        at += 300
    return samples


def test_the_silent_gpu_alarm_is_one_multi_time_series_alarm_named_by_node_and_gpu() -> None:
    (spec,) = [a for a in gpu_alarms(AlarmSettings(cluster_name="train", shards=25))
               if a.key == "gpu-silent"]  # fmt: skip
    assert isinstance(spec.metric, InsightsQuery)
    assert spec.metric.sql() == (
        'SELECT MAX(gpu_silent) FROM SCHEMA("GpuInsights", ClusterName, GpuIndex, NodeName) '
        "WHERE ClusterName = 'train' GROUP BY ClusterName, NodeName, GpuIndex ORDER BY MAX() DESC"
    )
    assert (spec.period_s, spec.evaluation_periods, spec.threshold) == (300, 1, 1)
    assert spec.comparison is Comparison.GREATER_OR_EQUAL
    assert spec.severity == "critical"
    # Without the exporter there is nothing to be silent about.
    fallback = AlarmSettings(cluster_name="t", exporter=False, gpu_instance_type="p5.48xlarge")
    assert "gpu-silent" not in {a.key for a in gpu_alarms(fallback)}


def test_an_exporter_that_stops_on_one_node_of_three_pages_once_naming_it() -> None:
    """Node 2 is silent for the runs from 12:31 to 13:01, then reports again."""
    (spec,) = [a for a in gpu_alarms(SETTINGS) if a.key == "gpu-silent"]
    samples = _runs(T0 + 1800, T0 + 3600, T0 + 3 * 3600)
    (result,) = backtest([spec], samples, start=T0, end=T0 + 3 * 3600)
    assert result.contributors_alarmed == [("train", "ip-10-0-1-2.ec2.internal", "all")]
    transitions = result.contributors[("train", "ip-10-0-1-2.ec2.internal", "all")]
    assert [(t.time - T0, t.old, t.new) for t in transitions] == [
        (2100, AlarmState.OK, AlarmState.ALARM),  # the period of the first silent run
        # The last silent run (12:56) stays in the range for three periods; then the series
        # is not returned and the contributor goes to OK, as CloudWatch says.
        (4500, AlarmState.ALARM, AlarmState.OK),
    ]
    assert transitions[-1].reason == NO_DATA_FOR_CONTRIBUTOR
    assert result.alarms_raised == 1
    assert "contributor ClusterName=train, NodeName=ip-10-0-1-2.ec2.internal, GpuIndex=all" in (
        report([result], start=T0, end=T0 + 3 * 3600)
    )
    (quiet,) = backtest([spec], _runs(0, 0, T0 + 3 * 3600), start=T0, end=T0 + 3 * 3600)
    assert quiet.alarms_raised == 0


def test_a_check_that_stops_running_pages_after_fifteen_minutes() -> None:
    """Runs every five minutes until 13:00, then none: the heartbeat alarm treats missing
    data as breaching, and with one evaluation period its range is three periods."""
    spec = silence_check_alarm(SETTINGS)
    assert (spec.missing_data, spec.comparison, spec.severity) == (
        MissingData.BREACHING,
        Comparison.LESS,
        "warning",
    )
    assert spec.key not in {a.key for a in gpu_alarms(SETTINGS)}  # not in the backtest
    samples = _runs(0, 0, T0 + 3600)
    values = metric_values(spec.metric, samples, spec.period_s)  # type: ignore[arg-type]
    transitions = evaluate(spec, values, start=T0 + 300, end=T0 + 2 * 3600)
    assert [(t.time - T0, t.new) for t in transitions] == [
        (600, AlarmState.OK),
        (3600 + 900, AlarmState.ALARM),  # 13:00 to 13:15 without a run
    ]
