import pytest

from lambdas.gpu_analyzer.attribution import GpuHour, GpuKey, Hold, HourClass, attribute
from lambdas.gpu_analyzer.findings import day_table, held_not_working
from lambdas.gpu_analyzer.metrics import waste_metric_data

H = 1_764_000_000 - 1_764_000_000 % 3600
G = [GpuKey("n1", str(i)) for i in range(4)]


def _week_day() -> object:
    hours = [h * 3600 + H for h in range(10)]
    gpu_hours = [GpuHour(gpu=G[0], hour=h, power_utilization=90.0, in_use=True) for h in hours] + [
        GpuHour(gpu=G[1], hour=h, power_utilization=12.0, in_use=True) for h in hours
    ]
    holds = [Hold(gpu=G[0], hour=h, namespace="vision", pod="resnet-7xk2p", share=1) for h in hours]
    holds += [Hold(gpu=G[1], hour=h, namespace="research", pod="nb-0", share=1) for h in hours]
    return attribute(gpu_hours, holds, exact_jobs={"resnet-7xk2p": "resnet"})


def test_a_job_that_held_gpus_idle_is_priced_with_its_pods_gpus_and_hours() -> None:
    (finding,) = held_not_working(
        _week_day(),  # type: ignore[arg-type]
        gpu_hour_usd=6.88,
        window_hours=24,
        window_start=H - H % 86_400,
        training_findings={"nb": ["training_data_bound job/nb", "training_slow_checkpoint job/nb"]},
    )
    assert finding.kind == "gpu_held_not_working"
    # The day it covers, said: the run comes the morning after, beside a weekly figure.
    assert finding.summary.startswith("nb in research held GPUs for 10.0 GPU-hours on 2025-11-24,")
    assert finding.evidence["window_start"] == "2025-11-24T00:00:00+00:00"
    assert finding.resource == "namespace/research/job/nb"
    assert finding.evidence["not_working_gpu_hours"] == 10.0
    assert finding.evidence["waste_in_window_usd"] == pytest.approx(68.8)
    assert finding.estimated_monthly_waste_usd == pytest.approx(68.8 * 730 / 24)
    assert finding.evidence["pods"] == ["nb-0"]
    assert finding.evidence["gpus"] == ["n1/1"]
    assert len(finding.evidence["idle_hours"]) == 10
    assert finding.evidence["idle_hours"][0] == "2025-11-24T16:00:00+00:00"  # the hour, ISO
    assert finding.evidence["inferred"]
    assert "StatefulSet" in finding.evidence["job_source"]
    # Only the causes of waiting are linked.
    assert finding.related == ("training_data_bound job/nb",)


def test_the_day_table_has_classes_costs_and_per_namespace_efficiency() -> None:
    table = day_table(_week_day(), 6.88)  # type: ignore[arg-type]
    assert table["classes"][str(HourClass.WORKING)] == 10.0
    assert table["cost_usd"][str(HourClass.NOT_WORKING)] == pytest.approx(68.8)
    rows = {r["namespace"]: r for r in table["namespaces"]}
    assert rows["vision"]["efficiency"] == 1.0
    assert rows["vision"]["waste_usd"] == 0.0
    assert rows["research"]["efficiency"] == 0.0
    jobs = {r["job"]: r for r in table["jobs"]}
    assert jobs["resnet"]["inferred"] is False
    assert jobs["nb"]["inferred"]
    data = waste_metric_data(table, "c", H)
    assert {(d["MetricName"], d["Dimensions"][1]["Value"], d["Value"]) for d in data} >= {
        ("gpu_waste_usd", "research", 68.8),
        ("gpu_hours_held", "vision", 10.0),
    }
