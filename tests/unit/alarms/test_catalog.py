import pytest

from alarms.catalog import AlarmSettings, AlarmSettingsError, gpu_alarms, low_power_alarm
from alarms.model import Comparison, InsightsQuery, MissingData, Severity


def _by_key(**kwargs: object) -> dict:  # type: ignore[type-arg]
    return {a.key: a for a in gpu_alarms(AlarmSettings(cluster_name="train", **kwargs))}  # type: ignore[arg-type]


def test_exporter_alarms_and_their_defaults() -> None:
    alarms = _by_key()
    assert sorted(alarms) == sorted(
        ["gpu-low-power", "gpu-xid-fatal", "gpu-xid", "gpu-lost", "gpu-ecc-uncorrected",
         "gpu-thermal-throttling", "gpu-power-brake", "gpu-xid-host-log"]
    )  # fmt: skip
    low = alarms["gpu-low-power"]
    assert (low.threshold, low.comparison, low.period_s) == (30.0, Comparison.LESS, 300)
    assert (low.evaluation_periods, low.datapoints_to_alarm) == (12, 12)
    assert low.missing_data is MissingData.NOT_BREACHING
    assert low.severity is Severity.WARNING
    fatal = alarms["gpu-xid-fatal"]
    assert (fatal.period_s, fatal.evaluation_periods, fatal.threshold) == (60, 1, 1)
    assert fatal.severity is Severity.CRITICAL
    thermal = alarms["gpu-thermal-throttling"]
    assert (thermal.evaluation_periods, thermal.threshold) == (6, 0.5)


def test_low_power_query_watches_in_use_gpus_grouped_by_node_and_gpu() -> None:
    metric = _by_key()["gpu-low-power"].metric
    assert isinstance(metric, InsightsQuery)
    assert metric.sql() == (
        'SELECT MAX(gpu_allocated_power_utilization) FROM SCHEMA("GpuInsights", ClusterName, '
        "GpuIndex, NodeName) WHERE ClusterName = 'train' GROUP BY NodeName, GpuIndex "
        "ORDER BY MAX() ASC LIMIT 1"
    )


def test_container_insights_fallback_converts_the_share_to_watts() -> None:
    spec = low_power_alarm(
        AlarmSettings(cluster_name="train", exporter=False, gpu_instance_type="p5.48xlarge")
    )
    assert spec.threshold == 210.0  # 30% of the H100's 700 W
    assert isinstance(spec.metric, InsightsQuery)
    assert spec.metric.metric == "pod_gpu_power_draw"
    assert "700 W" in spec.description


def test_window_sets_the_evaluation_periods() -> None:
    spec = _by_key(low_power_window_minutes=90, low_power_percent=25)["gpu-low-power"]
    assert (spec.evaluation_periods, spec.threshold) == (18, 25)


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"low_power_percent": 120}, "low_power_percent=120 must be above 0 and below 100"),
        ({"low_power_percent": 0}, "low_power_percent=0"),
        ({"low_power_window_minutes": 3}, "multiple of the 5-minute period"),
        ({"low_power_window_minutes": 62}, "multiple of the 5-minute period"),
        ({"throttle_window_minutes": 240}, "180 minutes"),
        ({"exporter": False}, "gpu_instance_type=None"),
        ({"exporter": False, "gpu_instance_type": "p9.huge"}, "gpu_instance_type='p9.huge'"),
    ],
)
def test_bad_thresholds_are_named(kwargs: dict, problem: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(AlarmSettingsError, match=problem.replace("(", r"\(")):
        AlarmSettings(cluster_name="train", **kwargs)
