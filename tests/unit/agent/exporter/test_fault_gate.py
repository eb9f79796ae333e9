"""The exporter's fault gate sends, sample by sample, exactly what
``tests.oracles.sparse.published`` keeps of a whole history, so the backtest that proves the
alarms unchanged covers the exporter.

CloudWatch bills a custom metric for the hours it is published: "metrics are prorated by the
hour" (https://aws.amazon.com/cloudwatch/pricing/).
"""

import pytest

from cdk.alarms.catalog import AlarmSettings, gpu_alarms
from cli.backtest.history import Sample
from gpu_insights_agent.exporter.exporter import ExporterConfig
from gpu_insights_agent.exporter.fault_gate import FaultGate, FaultPeriodError
from tests.oracles.sparse import published
from tests.unit.oracles.test_sparse import FAULTS, _history

FAULT_ALARMS = ("gpu-ecc-uncorrected", "gpu-thermal-throttling", "gpu-power-brake")


def test_the_gate_sends_what_the_proven_policy_keeps() -> None:
    specs = [s for s in gpu_alarms(AlarmSettings(cluster_name="train")) if s.key in FAULT_ALARMS]
    period = max(s.period_s for s in specs)
    # The exporter's default is the catalog's: a shorter one would cut a throttle period.
    assert ExporterConfig(cluster_name="c", node_name="n").fault_period_s == period == 300
    history = [s for s in _history() if s.metric in FAULTS]
    gate = FaultGate(period)
    sent: list[Sample] = []
    for s in history:
        for t, v in gate.offer((s.metric, s.dimensions), s.timestamp, s.value):
            sent.append(Sample(s.namespace, s.metric, s.dimensions, t, v))
    expected = published(history, FAULTS, period_s=period)
    key = lambda s: (s.timestamp, s.metric, sorted(s.dimensions))  # noqa: E731
    assert sorted(sent, key=key) == sorted(expected, key=key)
    assert 0 < len(sent) < len(history) / 4


def test_held_zeros_of_the_period_go_out_with_their_own_timestamps() -> None:
    gate = FaultGate(300)
    hour = 1_764_000_000 - 1_764_000_000 % 3600
    assert gate.offer("g", hour + 250, 0.0) == []  # previous period: dropped for good
    assert gate.offer("g", hour + 300, 0.0) == []
    assert gate.offer("g", hour + 310, 0.0) == []
    assert gate.offer("g", hour + 320, 1.0) == [
        (hour + 300, 0.0),
        (hour + 310, 0.0),
        (hour + 320, 1.0),
    ]
    assert gate.offer("g", hour + 3590, 0.0) == [(hour + 3590, 0.0)]  # open to the hour's end
    assert gate.offer("g", hour + 3600, 0.0) == []  # a new hour starts closed


@pytest.mark.parametrize("period", [0, 7 * 60, 7200, 30.5])
def test_a_period_that_does_not_divide_the_hour_is_refused(period: int) -> None:
    with pytest.raises(FaultPeriodError, match="divides the hour"):
        FaultGate(period)
