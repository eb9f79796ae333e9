"""The demo's week is drawn from the realistic cluster model: its pods as their controllers
name them, so Container Insights' PodName differs from FullPodName where Kubernetes makes it."""

from datetime import UTC, datetime

from cli.demo import week as demo_week
from cli.demo.exporter import REPLAY_PODS, START_EPOCH
from cli.demo.otel import capacity_week_samples
from cli.demo.realistic import container_insights as ci
from cli.demo.spare_gpus import DEMO_WEEK, spare_holds
from cli.demo.training import RANK_PODS
from gpu_insights_agent.contract.metrics import CI_NODE_GPU_LIMIT_METRIC, GpuMetric


def test_the_weeks_pods_and_the_names_container_insights_gives_them() -> None:
    named = {p.name: ci.pod_name(p) for p in [*demo_week.VISION_JOB, *demo_week.NLP_JOB]}
    # The Indexed Job's pods share the Job's name; the PyTorchJob's keep their own.
    assert sorted(set(named.values())) == [
        "bert-data-bound-master-0",
        "bert-data-bound-worker-0",
        "resnet-healthy",
    ]
    assert all(
        name.startswith("resnet-healthy-") for name, v in named.items() if v == "resnet-healthy"
    )
    assert ci.pod_name(demo_week.NOTEBOOK) == "jupyter-alice-0"
    assert [ci.pod_name(p) for p in REPLAY_PODS] == [p.name for p in REPLAY_PODS]
    # Every rank's pod is the one the week simulates on its node, or another workload's.
    assert RANK_PODS["resnet-healthy"] == demo_week.VISION_JOB
    assert len({p.name for pods in RANK_PODS.values() for p in pods}) == 10


def test_each_night_a_new_cronjob_run_holds_the_research_nodes_second_gpu() -> None:
    node, gpu = demo_week.NIGHTLY_GPU
    runs = []
    for hour in range(demo_week.HOURS):
        sample = demo_week._behaviour(node, gpu, hour)
        if sample.pod is not None:
            runs.append((hour % 24, sample.pod.name, ci.pod_name(sample.pod), sample.power))
    assert len(runs) == 7
    assert {(h, power) for h, _, _, power in runs} == {(demo_week.NIGHTLY_HOUR, 75.0)}
    first_start = demo_week.START + demo_week.NIGHTLY_HOUR * 3600
    minutes = int(first_start) // 60
    assert datetime.fromtimestamp(first_start, UTC).hour == 2
    # Its Job is nightly-eval-<scheduled minute>; the pod is that Job's, with 5 more characters.
    assert runs[0][2] == f"nightly-eval-{minutes}"
    assert runs[0][1].startswith(f"nightly-eval-{minutes}-")
    assert len({pod for _, pod, _, _ in runs}) == 7


def test_every_gpu_of_each_node_reports_and_its_capacity_is_the_instance_types() -> None:
    """Each p5.48xlarge of the week reports all eight GPUs (the exporter sees every GPU of the
    node), the ones no pod holds idle with no allocated reading, and its node_gpu_limit and
    Kube State Metrics' capacity are eight: what EC2 bills, not the GPUs pods asked for."""
    assert len(demo_week.GPUS) == 3 * 8
    hour = 12  # Monday noon: the notebook working, the nightly run done
    data = demo_week.exporter_data("c", demo_week.THIS_WEEK, [hour])
    per_gpu = {
        (dims["NodeName"], dims["GpuIndex"]): d["MetricName"]
        for d in data
        for dims in [{x["Name"]: x["Value"] for x in d["Dimensions"]}]
        if "GpuIndex" in dims and d["MetricName"] == str(GpuMetric.ALLOCATED_POWER_UTILIZATION)
    }
    reporting = {
        (dims["NodeName"], dims["GpuIndex"])
        for d in data
        for dims in [{x["Name"]: x["Value"] for x in d["Dimensions"]}]
        if "GpuIndex" in dims and d["MetricName"] == str(GpuMetric.HEALTHY)
    }
    assert len(reporting) == 24
    # In use: vision's two, nlp's two, the notebook's one.
    assert len(per_gpu) == 5
    limits = [
        d["StatisticValues"]["Sum"] / d["StatisticValues"]["SampleCount"]
        for d in demo_week.capacity_data("c", hour, demo_week.START)
        if d["MetricName"] == CI_NODE_GPU_LIMIT_METRIC
    ]
    assert limits == [8.0, 8.0, 8.0]
    ksm = {labels["node"]: value for _, labels, _, value in capacity_week_samples("c", hours=1)}
    assert ksm == dict.fromkeys(demo_week.NODES, 8.0)


def test_a_spare_gpu_job_holds_its_gpus_for_the_minutes_its_run_lasts() -> None:
    """mixtral-nccl-timeout's two pods hold GPUs 6 and 7 of the nlp node for the 50 minutes
    from the replay's start to its failure: the hour's Container Insights pod series hold 50
    samples at the job's power, the exporter's allocated reading 50, and the GPU's own mean
    over the hour (what the exporter and node_gpu_* report) is 50 minutes working and 10 idle."""
    node, gpus = demo_week.SPARE_GPUS["mixtral-nccl-timeout"]
    hour = int((START_EPOCH - DEMO_WEEK.start) // 3600)
    sample = demo_week._behaviour(node, gpus[0], hour, DEMO_WEEK)
    assert sample.pod is not None
    assert sample.pod.workload == "mixtral-nccl-timeout"
    assert (sample.minutes, sample.power) == (50, 85.0)
    assert sample.gpu_power == (85.0 * 50 + 5.0 * 10) / 60
    data = demo_week.exporter_data("c", DEMO_WEEK, [hour])
    counts = {
        d["MetricName"]: d["StatisticValues"]["SampleCount"]
        for d in data
        if {"Name": "GpuIndex", "Value": str(gpus[0])} in d["Dimensions"]
        and {"Name": "NodeName", "Value": node} in d["Dimensions"]
    }
    assert counts[str(GpuMetric.ALLOCATED_POWER_UTILIZATION)] == 50
    assert counts[str(GpuMetric.POWER_UTILIZATION)] == 60
    assert sample.gpu_power is not None
    insights = list(demo_week._container_insights_data("c", sample, DEMO_WEEK.start))
    pod_counts = {d["MetricName"]: d["StatisticValues"]["SampleCount"] for d in insights}
    assert pod_counts["pod_gpu_power_draw"] == 50
    assert pod_counts["node_gpu_power_draw"] == 60
    # The week without them has the GPU idle and held by none, and every job is placed once.
    assert demo_week._behaviour(node, gpus[0], hour).pod is None
    assert {h.pod.workload for h in spare_holds()} == set(demo_week.SPARE_GPUS)
