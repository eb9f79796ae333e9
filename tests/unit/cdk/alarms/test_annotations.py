"""The alarms' thresholds drawn on the dashboards: each per-GPU alarm kind once, at its
threshold, shaded on its breaching side, on the widgets that show its metric in a unit the
threshold compares with (cdk-monitoring-constructs' alarm annotations:
cdklabs/cdk-monitoring-constructs lib/common/alarm/IAlarmAnnotationStrategy.ts)."""

from typing import Any

from cdk.alarms.annotations import alarm_lines
from cdk.alarms.catalog import AlarmSettings, deployed_alarms
from dashboards.bodies import (
    COUNT_REPORTING,
    OUTLIER_LOW_POWER,
    OUTLIER_LOW_SM,
    OUTLIER_THERMAL,
    all_dashboards,
)


def _annotated(lines: Any, interval_s: int = 10) -> dict[str, list[dict[str, Any]]]:
    """Widget title -> its horizontal annotations, over every dashboard."""
    bodies = all_dashboards(
        "train", [], [], "us-east-1", exporter_interval_s=interval_s, alarm_lines=lines
    )
    return {
        w["properties"]["title"]: w["properties"]["annotations"]["horizontal"]
        for body in bodies.values()
        for w in body["widgets"]
        if "annotations" in w.get("properties", {})
    }


def test_one_line_per_alarm_kind_whatever_the_shards() -> None:
    lines = alarm_lines(deployed_alarms(AlarmSettings(cluster_name="train", shards=4)))
    assert [(line.metric, line.threshold, line.fill) for line in lines] == [
        ("gpu_allocated_power_utilization", 30.0, "below"),
        ("gpu_healthy", 1, "below"),
        ("gpu_ecc_errors_uncorrected", 1, "above"),
        ("gpu_throttled_thermal", 0.5, "above"),
        ("gpu_throttled_power", 0.5, "above"),
    ]
    assert lines[0].label == "gpu-low-power alarm: MAX < 30"


def test_the_thresholds_land_on_the_widgets_of_their_metrics() -> None:
    settings = AlarmSettings(cluster_name="train", low_power_percent=25, shards=2)
    drawn = _annotated(alarm_lines(deployed_alarms(settings)))
    assert drawn[OUTLIER_LOW_POWER] == [
        {"value": 25, "label": "gpu-low-power alarm: MAX < 25", "fill": "below"}
    ]
    assert drawn["Healthy (0 = lost)"] == [
        {"value": 1, "label": "gpu-lost alarm: MIN < 1", "fill": "below"}
    ]
    # A SUM of throttled samples over the alarm's 5 minutes: half of 30 samples at 10 s.
    assert drawn[OUTLIER_THERMAL] == [
        {
            "value": 15.0,
            "label": "gpu-thermal-throttling alarm: AVG >= 0.5 (15 of 30 samples)",
            "fill": "above",
        }
    ]
    assert drawn["Power brake (samples)"][0]["value"] == 15.0
    # Widgets of metrics no alarm reads, and counts, draw nothing.
    assert OUTLIER_LOW_SM not in drawn
    assert COUNT_REPORTING not in drawn
    assert len(drawn) == 6


def test_the_sample_count_follows_the_exporter_interval() -> None:
    lines = alarm_lines(deployed_alarms(AlarmSettings(cluster_name="train")))
    assert _annotated(lines, interval_s=60)[OUTLIER_THERMAL][0]["value"] == 2.5


def test_without_the_exporter_nothing_is_drawn() -> None:
    """The low-power alarm then reads Container Insights' pod power in watts, which no
    per-GPU widget shows."""
    settings = AlarmSettings(cluster_name="train", exporter=False, gpu_instance_type="p5.48xlarge")
    assert alarm_lines(deployed_alarms(settings)) == ()
    assert _annotated(()) == {}


def test_the_serving_dashboards_get_the_deployed_serving_targets() -> None:
    from cdk.alarms.annotations import serving_targets
    from cdk.alarms.serving_promql import ServingAlarmSettings
    from dashboards.serving import ServingTargets

    assert serving_targets(None) == ServingTargets()
    targets = serving_targets(
        ServingAlarmSettings(ttft_p99_targets=(("llama", 1.5),), waiting_requests=4)
    )
    assert (targets.ttft_p99_s, targets.ttft_p99_targets) == (2.0, (("llama", 1.5),))
    assert (targets.waiting_requests, targets.kv_cache_full, targets.error_percent) == (4, 0.95, 5)
    assert targets.e2e_p99_s is None
