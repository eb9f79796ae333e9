import pytest

from lambdas.training_analyzer.analysis import JobData, JobSeries, RankStats, analyze_job
from lambdas.training_analyzer.gpu_hours.attribution import (
    GpuHour,
    GpuKey,
    Hold,
    HourClass,
    attribute,
)
from lambdas.training_analyzer.gpu_hours.findings import day_table, held_not_working
from lambdas.training_analyzer.gpu_hours.metrics import waste_metric_data
from lambdas.weekly_report.actions import week_actions
from lambdas.weekly_report.waste import week_waste

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


def _bert_day(stepping_hours: int) -> object:
    """bert-data-bound on two GPUs for a day at 22% of their power limit and 8% SM activity
    (its ranks wait for data), its emitter reporting steps in the first ``stepping_hours``."""
    day = [H - H % 86_400 + 3600 * i for i in range(24)]
    pods = {f"bert-data-bound-worker-{g}": G[g] for g in (0, 1)}
    return attribute(
        [
            GpuHour(gpu=g, hour=h, power_utilization=22.0, sm_active=8.0, in_use=True)
            for g in pods.values()
            for h in day
        ],
        [
            Hold(gpu=g, hour=h, namespace="nlp", pod=pod, share=1)
            for pod, g in pods.items()
            for h in day
        ],
        exact_jobs=dict.fromkeys(pods, "bert-data-bound"),
        stepping={"bert-data-bound": set(day[:stepping_hours])},
    )


def _data_bound(stepping_hours: int) -> float:
    """The training analyzer's data-bound finding over the same day: 0.8 s of each 2.0 s step
    waiting for data (40%), two ranks; its waste a month."""
    day = [H - H % 86_400 + 3600 * i for i in range(stepping_hours)]
    series = JobSeries(
        job="bert-data-bound",
        steps=dict.fromkeys(day, 3600.0),
        step_time=dict.fromkeys(day, 2.0),
        data_wait=dict.fromkeys(day, 0.8),
    )
    ranks = [RankStats(rank=str(r), steps=1800.0 * len(day), mean_step_time=2.0) for r in "01"]
    found = analyze_job(JobData(series=series, ranks=ranks, lookback_hours=24))
    (bound,) = [f for f in found if f.kind == "training_data_bound"]
    assert bound.estimated_monthly_waste_usd is not None
    return bound.estimated_monthly_waste_usd


def test_a_data_bound_jobs_stepping_hours_are_priced_once_by_its_training_finding() -> None:
    # Two GPUs cost 2 x 730 x $6.88 = $10,044.80 a month. The job steps all day, waiting 40%
    # of each step: $4,017.92 of that is waste, the data-bound finding's; the same GPU-hours
    # are not also "held without work" (which priced all $10,044.80 of them).
    attribution = _bert_day(stepping_hours=24)
    day_start = H - H % 86_400
    held = held_not_working(
        attribution,  # type: ignore[arg-type]
        gpu_hour_usd=6.88,
        window_hours=24,
        window_start=day_start,
        training_findings={"bert-data-bound": ["training_data_bound job/bert-data-bound"]},
    )
    assert held == []
    assert _data_bound(24) == pytest.approx(0.4 * 2 * 730 * 6.88)
    (row,) = day_table(attribution, 6.88)["jobs"]  # type: ignore[arg-type]
    assert (row["held_gpu_hours"], row["stepping_gpu_hours"], row["working_gpu_hours"]) == (
        48.0,
        48.0,
        48.0,
    )
    assert (row["not_working_gpu_hours"], row["waste_usd"], row["efficiency"]) == (0.0, 0.0, 1.0)


def test_a_job_that_steps_part_of_the_day_is_priced_per_gpu_hour_by_one_finding_each() -> None:
    # Steps in 6 of 24 hours: those 12 GPU-hours are the data-bound finding's (40% of them
    # waste), the other 36 held without work; together no more than the GPUs cost.
    attribution = _bert_day(stepping_hours=6)
    (held,) = held_not_working(
        attribution,  # type: ignore[arg-type]
        gpu_hour_usd=6.88,
        window_hours=24,
        window_start=H - H % 86_400,
    )
    assert held.evidence["held_gpu_hours"] == 48.0
    assert held.evidence["stepping_gpu_hours"] == 12.0
    assert held.evidence["not_working_gpu_hours"] == 36.0
    assert held.evidence["waste_in_window_usd"] == pytest.approx(36 * 6.88)
    assert "it stepped in 12.0, which its training findings price" in held.summary
    assert "reported no training steps" in held.recommendation
    assert held.estimated_monthly_waste_usd is not None
    priced = held.estimated_monthly_waste_usd + _data_bound(6)
    assert priced == pytest.approx((36 + 0.4 * 12) * 6.88 * 730 / 24)
    assert priced < 2 * 730 * 6.88


def test_gpu_hours_no_pod_held_are_counted_by_node_for_the_idle_capacity_action() -> None:
    """A node whose GPUs no pod holds: its GPU-hours are not held, by node in the day table,
    and the weekly report makes them an action with the nodes as evidence, first when they
    are worth the most."""
    hours = [h * 3600 + H for h in range(10)]
    spare = [GpuKey("n2", str(i)) for i in range(8)]
    gpu_hours = [GpuHour(gpu=g, hour=h, power_utilization=9.0) for g in spare for h in hours]
    gpu_hours += [GpuHour(gpu=G[2], hour=h, power_utilization=9.0) for h in hours[:3]]
    day = attribute(gpu_hours, [])
    assert dict(day.not_held_by_node) == {"n2": 80.0, "n1": 3.0}
    table = day_table(day, 6.88)
    assert table["not_held_by_node"] == {"n1": 3.0, "n2": 80.0}
    week = week_waste({"2025-11-24": table}, gpu_hour_usd=6.88)
    assert week["not_held_by_node"] == {"n2": 80.0, "n1": 3.0}  # the most first
    (action,) = week_actions(week, [], [])
    assert action["title"] == "idle GPU capacity: 83.0 GPU-hours not held by any pod"
    assert action["usd"] == pytest.approx(83 * 6.88)
    assert action["evidence"] == (
        "83.0 GPU-hours of the week no pod held, on 2 node(s): n2 80.0, n1 3.0"
    )
    assert action["what_to_do"].startswith("Scale down or consolidate the GPU nodes")


#: A vLLM production-stack Deployment's replicas (cli/demo/realistic/serving.py): the
#: ReplicaSet names its pods ``<deployment>-<pod-template-hash>-<5>``.
DEPLOYMENT = "vllm-llama3-8b-deployment-vllm"
REPLICAS = [f"{DEPLOYMENT}-7c9b4d6f8-{s}" for s in ("x2v9k", "q8hzt", "b5wlm")]


def _serving_day(kind: str | None) -> object:
    """Three replicas of a Deployment for 10 hours; the third at 8% of its power limit (its
    model loaded, no request routed to it). ``kind``: the controller's kind as the pods' labels
    name it (OTel mode), or None where only its name is known (Classic's PodName)."""
    hours = [h * 3600 + H for h in range(10)]
    gpu_hours = [
        GpuHour(gpu=G[i], hour=h, power_utilization=8.0 if i == 2 else 75.0, in_use=True)
        for i in range(3)
        for h in hours
    ]
    holds = [
        Hold(gpu=G[i], hour=h, namespace="inference", pod=pod, share=1, controller=DEPLOYMENT,
             controller_kind=kind)
        for i, pod in enumerate(REPLICAS)
        for h in hours
    ]  # fmt: skip
    return attribute(gpu_hours, holds)


@pytest.mark.parametrize("kind", ["Deployment", None])
def test_a_deployments_idle_replica_names_the_deployment_with_serving_advice(
    kind: str | None,
) -> None:
    day = _serving_day(kind)
    (finding,) = held_not_working(
        day,  # type: ignore[arg-type]
        gpu_hour_usd=6.88,
        window_hours=24,
        window_start=H - H % 86_400,
    )
    assert finding.resource == f"namespace/inference/Deployment/{DEPLOYMENT}"
    assert finding.evidence["not_working_gpu_hours"] == 10.0
    assert finding.evidence["pods"] == sorted(REPLICAS)
    advice = finding.recommendation
    assert advice.startswith(
        f"Its replicas held GPUs without serving in these hours: scale {DEPLOYMENT} "
    )
    for said in ("vllm:num_requests_waiting", "KEDA"):
        assert said in advice
    for unsaid in ("notebook", "finished"):
        assert unsaid not in advice
    # The week's action names the same resource, with the same advice, and without the
    # finding (a week whose findings were not read) the serving advice still.
    waste = week_waste({"2025-11-24": day_table(day, 6.88)}, gpu_hour_usd=6.88)  # type: ignore[arg-type]
    found = {"kind": finding.kind, "resource": finding.resource, "summary": finding.summary,
             "recommendation": advice}  # fmt: skip
    (action,) = week_actions(waste, [], [found])
    assert action["finding"] == f"gpu_held_not_working namespace/inference/Deployment/{DEPLOYMENT}"
    assert action["usd"] == pytest.approx(68.8)
    (bare,) = week_actions(waste, [], [])
    assert bare["what_to_do"] == advice
