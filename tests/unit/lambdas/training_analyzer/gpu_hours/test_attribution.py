from dataclasses import replace

import pytest

from lambdas.training_analyzer.gpu_hours.attribution import (
    UNKNOWN_NAMESPACE,
    UNKNOWN_POD,
    UNPLACED_NODE,
    UNPLACED_POD,
    GpuHour,
    GpuKey,
    Hold,
    HourClass,
    Thresholds,
    attribute,
    classify,
)

G0, G1 = GpuKey("node-a", "0"), GpuKey("node-a", "1")
H = 1_700_000_000 - 1_700_000_000 % 3600


def busy(gpu: GpuKey, hour: int = H, **kw: object) -> GpuHour:
    return GpuHour(gpu=gpu, hour=hour, power_utilization=85.0, in_use=True, **kw)  # type: ignore[arg-type]


def idle(gpu: GpuKey, hour: int = H, **kw: object) -> GpuHour:
    return GpuHour(gpu=gpu, hour=hour, power_utilization=12.0, in_use=True, **kw)  # type: ignore[arg-type]


def hold(gpu: GpuKey, pod: str, share: float = 1.0, hour: int = H, ns: str = "team") -> Hold:
    return Hold(gpu=gpu, hour=hour, namespace=ns, pod=pod, share=share)


def test_a_gpu_no_pod_holds_is_not_held() -> None:
    result = attribute([idle(G0), busy(G1)], [hold(G1, "job-a-7xk2p")])
    assert result.classes[HourClass.NOT_HELD] == 1.0
    assert result.classes[HourClass.WORKING] == 1.0


def test_under_the_low_power_threshold_is_held_not_working() -> None:
    result = attribute([idle(G0)], [hold(G0, "alice-notebook-0", ns="research")])
    pod = result.pods[("research", "alice-notebook-0")]
    assert pod.hours[HourClass.NOT_WORKING] == 1.0
    assert pod.idle_hours == {H}
    assert result.namespaces()["research"][HourClass.NOT_WORKING] == 1.0


def test_under_the_sm_threshold_is_not_working_even_at_high_power() -> None:
    hour = GpuHour(gpu=G0, hour=H, power_utilization=55.0, sm_active=4.0)
    assert classify(hour, Thresholds()) is HourClass.NOT_WORKING
    # Without GPM (no SM activity), power alone decides.
    assert classify(GpuHour(gpu=G0, hour=H, power_utilization=55.0), Thresholds()) is (
        HourClass.WORKING
    )


def test_the_thresholds_are_the_settings() -> None:
    hour = GpuHour(gpu=G0, hour=H, power_utilization=28.0)
    assert classify(hour, Thresholds(low_power_percent=25.0)) is HourClass.WORKING
    assert classify(hour, Thresholds(low_power_percent=30.0)) is HourClass.NOT_WORKING


def test_a_lost_or_faulted_gpu_hour_is_its_own_class_held_or_not() -> None:
    result = attribute(
        [GpuHour(gpu=G0, hour=H, faulted=True), GpuHour(gpu=G1, hour=H, faulted=True)],
        [hold(G0, "job-b-7xk2p")],
    )
    assert result.classes[HourClass.FAULTED] == 2.0
    assert result.pods[("team", "job-b-7xk2p")].hours[HourClass.FAULTED] == 1.0


def test_a_pod_moving_between_gpus_mid_hour_holds_each_for_its_part() -> None:
    result = attribute(
        [busy(G0), idle(G1)],
        [hold(G0, "job-c-7xk2p", share=0.25), hold(G1, "job-c-7xk2p", share=0.75)],
    )
    pod = result.pods[("team", "job-c-7xk2p")]
    assert pod.hours[HourClass.WORKING] == pytest.approx(0.25)
    assert pod.hours[HourClass.NOT_WORKING] == pytest.approx(0.75)
    assert pod.gpus == {G0, G1}
    # The rest of each GPU-hour was held by nobody.
    assert result.classes[HourClass.NOT_HELD] == pytest.approx(1.0)
    assert sum(result.classes.values()) == pytest.approx(2.0)


def test_time_sliced_gpus_are_split_evenly_and_marked() -> None:
    result = attribute(
        [idle(G0)],
        [hold(G0, "nb-a-0", ns="a"), hold(G0, "nb-b-0", ns="b"), hold(G0, "nb-c-0", ns="c")],
    )
    shares = [result.pods[(ns, f"nb-{ns}-0")].hours[HourClass.NOT_WORKING] for ns in "abc"]
    assert shares == pytest.approx([1 / 3] * 3)
    assert all(p.time_sliced for p in result.pods.values())
    assert sum(result.classes.values()) == pytest.approx(1.0)


def test_two_pods_one_after_the_other_are_not_time_sliced() -> None:
    result = attribute([busy(G0)], [hold(G0, "a-0", share=0.5), hold(G0, "b-0", share=0.5)])
    assert not any(p.time_sliced for p in result.pods.values())
    assert result.pods[("team", "a-0")].held == pytest.approx(0.5)


def test_an_hour_without_container_insights_data_uses_the_exporters_in_use_signal() -> None:
    later = H + 3600
    result = attribute(
        [busy(G0), idle(G0, later), GpuHour(gpu=G1, hour=later, power_utilization=5.0)],
        [hold(G0, "job-d-7xk2p")],  # Container Insights has only the first hour
    )
    unknown = result.pods[(UNKNOWN_NAMESPACE, UNKNOWN_POD)]
    assert unknown.no_container_insights
    assert unknown.hours[HourClass.NOT_WORKING] == 1.0
    assert result.no_container_insights == 1.0
    # G1 was not in use in that hour: not held.
    assert result.classes[HourClass.NOT_HELD] == 1.0


def test_a_hold_the_exporter_never_saw_adds_no_gpu_hours_and_is_unattributed() -> None:
    result = attribute([], [hold(G0, "job-e-7xk2p", share=0.5)])
    assert sum(result.classes.values()) == 0.0
    assert ("team", "job-e-7xk2p") not in result.pods
    assert result.unattributed == 0.5


def test_jobs_group_pods_by_namespace_and_exact_job() -> None:
    result = attribute(
        [idle(G0), idle(G1)],
        [hold(G0, "llama-worker-0"), hold(G1, "llama-worker-1")],
        exact_jobs={"llama-worker-0": "llama-run-7", "llama-worker-1": "llama-run-7"},
    )
    assert [p.pod for p in result.jobs()[("team", "llama-run-7")]] == [
        "llama-worker-0",
        "llama-worker-1",
    ]


N1, N2 = GpuKey("node-1", "0"), GpuKey("node-2", "0")


def test_a_hold_placed_on_no_node_adds_no_gpu_hours_and_idle_stays_not_working() -> None:
    # Two GPUs (nvidia0 of two nodes). The job's pod was placed on node-2; the notebook's pod
    # had no power series and two candidates, so it could not be placed: its hour is reported
    # as unattributed, not added on top, and node-1's GPU (in use at 12%) is held without work
    # by a pod the hour cannot name.
    result = attribute(
        [idle(N1), busy(N2)],
        [
            hold(N2, "train-7xk2p"),
            Hold(gpu=GpuKey(UNPLACED_NODE, "0"), hour=H, namespace="research", pod="nb-0", share=1),
        ],
    )
    assert sum(result.classes.values()) == pytest.approx(2.0)  # two GPUs, two GPU-hours
    assert result.classes[HourClass.NOT_WORKING] == pytest.approx(1.0)
    assert result.classes[HourClass.WORKING] == pytest.approx(1.0)
    assert result.unattributed == pytest.approx(1.0)
    assert result.pods[(UNKNOWN_NAMESPACE, UNPLACED_POD)].hours[HourClass.NOT_WORKING] == 1.0


def test_a_pod_moving_mid_hour_is_classed_by_its_own_power() -> None:
    # Working at 88% of the limit on G0 for 15 minutes, then on G1 for 45; the unheld parts
    # idle at 5%. G0's hourly mean is 0.25*88 + 0.75*5 = 25.75% (under 30%), G1's 67.25%.
    g0 = GpuHour(gpu=G0, hour=H, power_utilization=25.75, in_use=True)
    g1 = GpuHour(gpu=G1, hour=H, power_utilization=67.25, in_use=True)
    moves = [
        Hold(gpu=G0, hour=H, namespace="team", pod="job-m-7xk2p", share=0.25, power_utilization=88),
        Hold(gpu=G1, hour=H, namespace="team", pod="job-m-7xk2p", share=0.75, power_utilization=88),
    ]
    result = attribute([g0, g1], moves)
    pod = result.pods[("team", "job-m-7xk2p")]
    assert pod.hours[HourClass.WORKING] == pytest.approx(1.0)
    assert pod.hours[HourClass.NOT_WORKING] == 0.0
    assert result.classes[HourClass.NOT_HELD] == pytest.approx(1.0)
    # Without the pod's own power, the GPU's mean stands in.
    fallback = attribute([g0, g1], [replace(h, power_utilization=None) for h in moves])
    assert fallback.pods[("team", "job-m-7xk2p")].hours[HourClass.NOT_WORKING] == 0.25


def test_time_slicing_with_unequal_shares_is_split_evenly() -> None:
    # One pod all hour, another for 24 minutes, on the same GPU at once: half each.
    result = attribute([idle(G0)], [hold(G0, "nb-a-0", ns="a"), hold(G0, "nb-b-0", 0.4, ns="b")])
    assert result.pods[("a", "nb-a-0")].hours[HourClass.NOT_WORKING] == pytest.approx(0.5)
    assert result.pods[("b", "nb-b-0")].hours[HourClass.NOT_WORKING] == pytest.approx(0.5)
    assert all(p.time_sliced for p in result.pods.values())
    assert sum(result.classes.values()) == pytest.approx(1.0)


def test_a_node_without_container_insights_data_falls_back_to_in_use_on_its_own() -> None:
    # node-1 has no Container Insights data this hour; node-2 has (its pod's hold).
    result = attribute([idle(N1), busy(N2)], [hold(N2, "train-7xk2p")])
    unknown = result.pods[(UNKNOWN_NAMESPACE, UNKNOWN_POD)]
    assert unknown.hours[HourClass.NOT_WORKING] == 1.0
    assert unknown.gpus == {N1}
    assert result.no_container_insights == 1.0
    assert result.classes[HourClass.NOT_HELD] == 0.0


def test_container_insights_data_on_a_node_with_no_pod_means_not_held() -> None:
    # node_gpu_* series say Container Insights ran on node-1 this hour and saw no pod on it.
    result = attribute(
        [idle(N1), busy(N2)],
        [hold(N2, "train-7xk2p")],
        ci_node_hours={("node-1", H), ("node-2", H)},
    )
    assert result.classes[HourClass.NOT_HELD] == 1.0
    assert result.no_container_insights == 0.0


def test_an_unplaced_hold_explains_at_most_its_own_hours() -> None:
    # One unplaced 1-hour hold on device 0; five nodes' GPU 0 in use at 12%, and Container
    # Insights saw every node this hour with no pod on it. The hold explains one GPU-hour,
    # not five: the other four stay not held.
    nodes = [GpuKey(f"node-{i}", "0") for i in range(5)]
    result = attribute(
        [idle(gpu) for gpu in nodes],
        [Hold(gpu=GpuKey(UNPLACED_NODE, "0"), hour=H, namespace="research", pod="nb-0", share=1)],
        ci_node_hours={(gpu.node, H) for gpu in nodes},
    )
    assert result.unattributed == pytest.approx(1.0)
    unplaced = result.pods[(UNKNOWN_NAMESPACE, UNPLACED_POD)]
    assert unplaced.hours[HourClass.NOT_WORKING] == pytest.approx(1.0)
    assert result.classes[HourClass.NOT_WORKING] == pytest.approx(1.0)
    assert result.classes[HourClass.NOT_HELD] == pytest.approx(4.0)
    assert sum(result.classes.values()) == pytest.approx(5.0)


def test_an_unplaced_half_hour_claims_half_a_gpu_hour() -> None:
    # Where the hold covered half the hour, half the in-use GPU-hour is its; the node had
    # no Container Insights data, so the rest is held by a pod the hour cannot name.
    result = attribute(
        [idle(N1)],
        [Hold(gpu=GpuKey(UNPLACED_NODE, "0"), hour=H, namespace="ml", pod="nb-0", share=0.5)],
    )
    assert result.pods[(UNKNOWN_NAMESPACE, UNPLACED_POD)].held == pytest.approx(0.5)
    assert result.pods[(UNKNOWN_NAMESPACE, UNKNOWN_POD)].held == pytest.approx(0.5)
    assert result.no_container_insights == pytest.approx(0.5)
    assert sum(result.classes.values()) == pytest.approx(1.0)


def test_an_hour_the_jobs_emitter_stepped_in_is_work_whatever_its_gpus_drew() -> None:
    # bert-data-bound's ranks wait for data 40% of each step: its GPUs draw 22% of their limit,
    # under the low-power threshold, in the hours it steps (H) and in the hour it does not.
    later = H + 3600
    hours = [replace(idle(g, h), power_utilization=22.0) for g in (G0, G1) for h in (H, later)]
    pods = {"bert-data-bound-worker-0": G0, "bert-data-bound-worker-1": G1}
    holds = [hold(g, pod, hour=h, ns="nlp") for pod, g in pods.items() for h in (H, later)]
    result = attribute(
        hours,
        holds,
        exact_jobs=dict.fromkeys(pods, "bert-data-bound"),
        stepping={"bert-data-bound": {H}},
    )
    assert result.classes[HourClass.WORKING] == 2.0  # the two GPUs' stepping hour
    assert result.classes[HourClass.NOT_WORKING] == 2.0  # the hour without steps
    assert result.stepping_under_threshold == 2.0
    worker = result.pods[("nlp", "bert-data-bound-worker-0")]
    assert worker.stepping == 1.0
    assert worker.idle_hours == {later}


def test_stepping_counts_only_for_pods_the_emitter_named_and_not_for_a_lost_gpu() -> None:
    hours = [idle(G0), GpuHour(gpu=G1, hour=H, faulted=True)]
    holds = [hold(G0, "bert-data-bound-worker-0"), hold(G1, "bert-data-bound-worker-1")]
    # Inferred from its name alone, a pod is not the emitter's job: power decides.
    inferred = attribute(hours, holds, stepping={"bert-data-bound": {H}})
    assert inferred.classes[HourClass.NOT_WORKING] == 1.0
    assert inferred.pods[("team", "bert-data-bound-worker-0")].stepping == 0.0
    # Named, its lost GPU stays lost: a step does not bring a GPU back.
    named = attribute(
        hours,
        holds,
        exact_jobs={"bert-data-bound-worker-0": "bert", "bert-data-bound-worker-1": "bert"},
        stepping={"bert": [H]},
    )
    assert named.classes[HourClass.WORKING] == 1.0
    assert named.classes[HourClass.FAULTED] == 1.0
    assert named.pods[("team", "bert-data-bound-worker-1")].stepping == 0.0


def test_a_serving_pods_hours_are_its_controllers_that_its_labels_named() -> None:
    # Two replicas of KServe's raw-mode Deployment llama-predictor, labelled with their
    # InferenceService ``llama``: one workload of two GPU-hours, not the Deployment's.
    holds = [
        Hold(
            gpu=gpu,
            hour=H,
            namespace="serving",
            pod=f"llama-predictor-7c9b4d6f8-{suffix}",
            share=1.0,
            controller="llama",
            controller_kind="InferenceService",
        )
        for gpu, suffix in ((G0, "x2v9k"), (G1, "q8hzt"))
    ]
    result = attribute([busy(G0), busy(G1)], holds)
    ((key, pods),) = result.jobs().items()
    assert key == ("serving", "llama")
    assert {p.job.kind for p in pods} == {"InferenceService"}
    assert sum(p.held for p in pods) == pytest.approx(2.0)


def test_a_workloads_gpu_hours_and_mean_power_are_its_pods_held_hours() -> None:
    from lambdas.training_analyzer.gpu_hours.by_workload import by_workload

    # One replica held GPU 0 all hour at 20% of its limit, the other GPU 1 half the hour at
    # 50%: 1.5 GPU-hours at (20 x 1 + 50 x 0.5) / 1.5 = 30%.
    holds = [
        Hold(gpu=G0, hour=H, namespace="serving", pod="api-7c9b4d6f8-x2v9k", share=1.0,
             power_utilization=20.0, controller="api", controller_kind="Deployment"),
        Hold(gpu=G1, hour=H, namespace="serving", pod="api-7c9b4d6f8-q8hzt", share=0.5,
             power_utilization=50.0, controller="api", controller_kind="Deployment"),
    ]  # fmt: skip
    result = attribute([busy(G0), busy(G1)], holds)
    workload = by_workload(result, holds)[("serving", "api")]
    assert workload.kind == "Deployment"
    assert workload.gpu_hours == pytest.approx(1.5)
    assert workload.mean_power_percent == pytest.approx(30.0)
