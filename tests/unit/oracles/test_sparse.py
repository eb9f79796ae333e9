"""Publishing the fault gauges only in their non-zero hours changes no alarm transition: the
backtest over the history with and without the left-out zeros is identical.

CloudWatch treats missing data as the alarm says: notBreaching is "good (within the threshold)",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html#alarms-and-missing-data
"""

from cdk.alarms.catalog import AlarmSettings, gpu_alarms
from cdk.alarms.model import MissingData
from cli.backtest.engine import backtest
from cli.backtest.history import Sample
from gpu_insights_agent.contract.metrics import DIM_SHARD, GpuMetric, alarm_shard
from tests.oracles.sparse import published

T0 = 1_764_000_000.0 - 1_764_000_000.0 % 3600
INTERVAL = 10.0
FAULTS = {
    str(GpuMetric.ECC_UNCORRECTED),
    str(GpuMetric.THROTTLED_THERMAL),
    str(GpuMetric.THROTTLED_POWER),
}


def _history() -> list[Sample]:
    """Six hours of two GPUs every 10 s, per GPU and per cluster, as the exporter's EMF gives
    them: GPU 1 throttles for heat in bursts that start and stop mid-minute (some long enough
    to alarm, some not), draws its power brake for 35 minutes, and counts ECC errors twice."""
    samples = []
    for step in range(int(6 * 3600 / INTERVAL)):
        t = T0 + step * INTERVAL
        second = step * INTERVAL
        values = {
            # 20 zeros then 10 ones in the burst's first 5-minute period (a third throttled).
            (str(GpuMetric.THROTTLED_THERMAL), "1"): float(
                4700 <= second < 8430 or 12020 <= second < 12900 or 17400 <= second < 19800
            ),
            (str(GpuMetric.THROTTLED_POWER), "1"): float(15030 <= second < 17130),
            (str(GpuMetric.ECC_UNCORRECTED), "1"): float(step in (1000, 1800)),
            (str(GpuMetric.THROTTLED_THERMAL), "0"): 0.0,
            (str(GpuMetric.THROTTLED_POWER), "0"): 0.0,
            (str(GpuMetric.ECC_UNCORRECTED), "0"): 0.0,
        }
        for (metric, gpu), value in values.items():
            per_gpu = {("ClusterName", "train"), ("NodeName", "n1"), ("GpuIndex", gpu)}
            # The alarm metrics' per-GPU series carry the GPU's alarm shard (one shard here).
            per_gpu.add((DIM_SHARD, alarm_shard("n1", int(gpu), 1)))
            for dims in (frozenset(per_gpu), frozenset({("ClusterName", "train")})):
                samples.append(Sample("GpuInsights", metric, dims, t, value))
    return samples


def test_fault_gauges_only_in_their_non_zero_hours_raise_the_same_alarms() -> None:
    specs = [
        s
        for s in gpu_alarms(AlarmSettings(cluster_name="train"))
        if s.key in ("gpu-ecc-uncorrected", "gpu-thermal-throttling", "gpu-power-brake")
    ]
    assert {s.missing_data for s in specs} == {MissingData.NOT_BREACHING}
    full = _history()
    sparse = published(full, FAULTS, period_s=max(s.period_s for s in specs))
    assert len(sparse) < len(full) / 2  # GPU 0's series are gone, GPU 1's quiet hours too
    hours = {int(s.timestamp // 3600) for s in sparse if s.metric == str(GpuMetric.ECC_UNCORRECTED)}
    assert len(hours) == 2
    start, end = T0, T0 + 6 * 3600 + 3600
    before = backtest(specs, full, start=start, end=end)
    after = backtest(specs, sparse, start=start, end=end)
    transitions = {r.spec.key: [(t.time, t.old, t.new) for t in r.transitions] for r in before}
    assert transitions == {
        r.spec.key: [(t.time, t.old, t.new) for t in r.transitions] for r in after
    }
    # The history makes each alarm fire, so the equality is about real transitions.
    assert all(r.alarms_raised >= 1 for r in before)


def test_dropping_zeros_before_the_first_non_zero_sample_of_its_minute_would_change_one() -> None:
    """Why the policy keeps the whole alarm period of the first non-zero sample: dropping every
    zero, or only those of earlier minutes, raises a throttle period's average (0.33 -> 1.0
    or 0.83) and the alarm fires a period early."""
    specs = [
        s
        for s in gpu_alarms(AlarmSettings(cluster_name="train"))
        if s.key == "gpu-thermal-throttling"
    ]
    full = _history()
    start, end = T0, T0 + 7 * 3600
    before = [t.time for t in backtest(specs, full, start=start, end=end)[0].transitions]
    for naive in (
        [s for s in full if s.metric not in FAULTS or s.value != 0],
        published(full, FAULTS, period_s=60),
    ):
        after = [t.time for t in backtest(specs, naive, start=start, end=end)[0].transitions]
        assert after != before
