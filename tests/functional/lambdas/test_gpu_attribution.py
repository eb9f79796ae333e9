"""The GPU analyzer's reads against moto: the exporter's per-GPU series and Container Insights'
pod and node GPU series, joined to one attribution. The pods and their dimensions are the
realistic cluster model's (cli/demo/realistic: pods as their controllers name them, PodName and
FullPodName as the CloudWatch agent sets them in enhanced mode)."""

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import boto3
import pytest
from moto import mock_aws

from cli.demo.indexed_cloudwatch import indexed_cloudwatch
from cli.demo.realistic import container_insights as ci
from cli.demo.realistic import pods as k8s
from lambdas.shared.aws_clients import client
from lambdas.training_analyzer.gpu_hours.attribution import GpuHour, Hold, HourClass, attribute
from lambdas.training_analyzer.gpu_hours.aws import observe

START = 1_764_000_000 - 1_764_000_000 % 3600
#: A notebook's pod (PodName = FullPodName = nb-0) and a Job's (PodName r, FullPodName r-<5>).
NOTEBOOK = k8s.notebook_pod("research", "nb")
(RUN,) = k8s.job_pods("vision", "r", 1)


def _put(
    cw: object,
    namespace: str,
    metric: str,
    dims: dict[str, str],
    values: list[float],
    step: int = 300,
) -> None:
    data = [
        {
            "MetricName": metric,
            "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
            "Timestamp": datetime.fromtimestamp(START + step * i, UTC),
            "Value": v,
        }
        for i, v in enumerate(values)
    ]
    cw.put_metric_data(Namespace=namespace, MetricData=data)  # type: ignore[attr-defined]


def test_pods_are_joined_to_their_node_gpu_and_classified() -> None:
    with mock_aws(), indexed_cloudwatch():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        cw = client("cloudwatch", session=session)
        for node, power in (("n1", 12.0), ("n2", 88.0)):
            gpu = {"ClusterName": "c", "NodeName": node, "GpuIndex": "0"}
            # The alarm metrics' per-GPU series carry the GPU's alarm shard, as the exporter
            # writes them; the analyzer must read them with it.
            alarmed = {**gpu, "Shard": "0"}
            _put(cw, "GpuInsights", "gpu_power_utilization", gpu, [power] * 12)
            _put(cw, "GpuInsights", "gpu_allocated_power_utilization", alarmed, [power] * 12)
            _put(cw, "GpuInsights", "gpu_healthy", alarmed, [1.0] * 12)
            ci_node = ci.node_gpu_dimensions("c", node, f"i-{node}", "p5.48xlarge", "nvidia0")
            # Once a minute, as the agent samples by default.
            _put(cw, "ContainerInsights", "node_gpu_power_draw", ci_node, [power * 7] * 60, 60)
        for pod, watts, minutes in ((NOTEBOOK, 84.0, 12), (RUN, 616.0, 6)):
            dims = ci.pod_gpu_dimensions("c", pod, "nvidia0")
            # Container Insights samples once a minute: the notebook all hour, r for half.
            _put(cw, "ContainerInsights", "pod_gpu_utilization", dims, [1.0] * minutes * 5, 60)
            _put(cw, "ContainerInsights", "pod_gpu_power_draw", dims, [watts] * 12)
        observed = observe(cw, "c", start=START, end=START + 3600)
    # gpu_allocated_power_utilization (read with the GPU's Shard) says both GPUs were in use.
    assert {(h.gpu.node, h.gpu.gpu, h.in_use) for h in observed.gpu_hours} == {
        ("n1", "0", True),
        ("n2", "0", True),
    }
    result = attribute(observed.gpu_hours, observed.holds)
    notebook = result.pods[("research", "nb-0")]
    assert {(g.node, g.gpu) for g in notebook.gpus} == {("n1", "0")}
    assert notebook.hours[HourClass.NOT_WORKING] == 1.0
    vision = result.pods[("vision", RUN.name)]
    assert {(g.node, g.gpu) for g in vision.gpus} == {("n2", "0")}
    assert vision.hours[HourClass.WORKING] == 0.5
    assert result.classes[HourClass.NOT_HELD] == 0.5


def _fleet(
    node_watts: Mapping[str, Sequence[float]],
    holds: Sequence[tuple[k8s.Pod, int, float | None, int]],
    pod_nodes: dict[str, str] | None = None,
) -> tuple[list[GpuHour], list[Hold]]:
    """p5 nodes' GPUs for one hour (node -> each GPU's watts: the exporter's percent of a 700 W
    limit, Container Insights' node power), and pods holding them: (pod, GPU index, the pod's
    watts or None, minutes held), published with the dimensions the agent gives that pod."""
    with mock_aws(), indexed_cloudwatch():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        cw = client("cloudwatch", session=session)
        for node, gpus in node_watts.items():
            for index, watts in enumerate(gpus):
                gpu = {"ClusterName": "c", "NodeName": node, "GpuIndex": str(index)}
                alarmed = {**gpu, "Shard": "0"}
                percent = [watts / 7] * 12
                _put(cw, "GpuInsights", "gpu_power_utilization", gpu, percent)
                _put(cw, "GpuInsights", "gpu_allocated_power_utilization", alarmed, percent)
                _put(cw, "GpuInsights", "gpu_healthy", alarmed, [1.0] * 12)
                device = ci.gpu_device(index)
                ci_node = ci.node_gpu_dimensions("c", node, f"i-{node}", "p5.48xlarge", device)
                # Once a minute, as the agent samples by default.
                _put(cw, "ContainerInsights", "node_gpu_power_draw", ci_node, [watts] * 60, 60)
        for pod, index, pod_watts, minutes in holds:
            # Every dimension set the agent publishes a pod's GPU datapoint with; only the last
            # names the GPU.
            for dims in ci.pod_gpu_dimension_sets("c", pod, ci.gpu_device(index)):
                _put(cw, "ContainerInsights", "pod_gpu_utilization", dims, [50.0] * minutes, 60)
                if pod_watts is not None:
                    power = [pod_watts] * minutes
                    _put(cw, "ContainerInsights", "pod_gpu_power_draw", dims, power, 60)
        observed = observe(cw, "c", start=START, end=START + 3600, pod_nodes=pod_nodes)
    return observed.gpu_hours, observed.holds


def _two_nodes(
    node_watts: dict[str, float],
    pods: list[tuple[k8s.Pod, float | None, int]],
    pod_nodes: dict[str, str] | None = None,
) -> tuple[list[GpuHour], list[Hold]]:
    """Two p5 nodes' nvidia0 for one hour, and pods on nvidia0 (power, minutes held)."""
    return _fleet(
        {node: [watts] for node, watts in node_watts.items()},
        [(pod, 0, watts, minutes) for pod, watts, minutes in pods],
        pod_nodes,
    )


def _bare(*names: str) -> list[k8s.Pod]:
    return [k8s.bare_pod("team", name) for name in names]


def test_two_pods_at_the_same_power_are_placed_on_two_gpus_not_one() -> None:
    # Both nodes' nvidia0 at 699 W all hour, each held by its own pod: matching by closest
    # power alone put both pods on one node (time-sliced) and left the other GPU "not held".
    a, b = k8s.pytorchjob_pods("team", "llama", 1)  # llama-master-0, llama-worker-0
    gpu_hours, holds = _two_nodes({"n1": 699.0, "n2": 699.0}, [(a, 699.0, 60), (b, 699.0, 60)])
    assert sorted(h.gpu.node for h in holds) == ["n1", "n2"]
    result = attribute(gpu_hours, holds)
    assert result.classes[HourClass.WORKING] == 2.0
    assert result.classes[HourClass.NOT_HELD] == 0.0
    assert not any(p.time_sliced for p in result.pods.values())


def test_pods_holding_part_of_the_hour_fill_a_gpu_before_sharing_one() -> None:
    # n1/nvidia0: x at 600 W for 15 minutes, then y at 100 W for 45 (mean 225 W); n2/nvidia0:
    # z at 400 W all hour. By closest power alone x (600 W) went to n2 (400 W) and z shared it.
    x, y, z = _bare("x", "y", "z")
    gpu_hours, holds = _two_nodes(
        {"n1": 225.0, "n2": 400.0}, [(x, 600.0, 15), (y, 100.0, 45), (z, 400.0, 60)]
    )
    assert {h.pod: h.gpu.node for h in holds} == {"x": "n1", "y": "n1", "z": "n2"}
    result = attribute(gpu_hours, holds)
    # Each pod classed by its own power: x worked (600 W of 700), y did not (100 W).
    assert result.pods[("team", "x")].hours[HourClass.WORKING] == pytest.approx(0.25)
    assert result.pods[("team", "y")].hours[HourClass.NOT_WORKING] == pytest.approx(0.75)
    assert sum(result.classes.values()) == pytest.approx(2.0)


def test_the_emitters_node_is_an_exact_join() -> None:
    # Container Insights' pod series carry no NodeName (kubernetes.go above); the training
    # emitter reports its pod with its node, which decides where power cannot.
    a, b = _bare("a", "b")
    _, holds = _two_nodes(
        {"n1": 699.0, "n2": 699.0}, [(a, 699.0, 60), (b, 699.0, 60)], pod_nodes={"b": "n1"}
    )
    assert {h.pod: h.gpu.node for h in holds} == {"a": "n2", "b": "n1"}


def test_a_pod_without_power_takes_the_one_gpu_left() -> None:
    (train,) = k8s.job_pods("team", "train", 1)
    gpu_hours, holds = _two_nodes(
        {"n1": 84.0, "n2": 616.0}, [(NOTEBOOK, None, 60), (train, 616.0, 60)]
    )
    assert {h.pod: h.gpu.node for h in holds} == {"nb-0": "n1", train.name: "n2"}
    result = attribute(gpu_hours, holds)
    assert sum(result.classes.values()) == 2.0
    assert result.pods[("research", "nb-0")].hours[HourClass.NOT_WORKING] == 1.0


def test_two_pods_of_one_job_on_gpu_0_of_two_nodes_are_two_pods() -> None:
    # A Job's pods share their PodName (the Job's) and differ by FullPodName (their own):
    # keyed by PodName, one pod's series replaced the other's, and one GPU-hour read "not held".
    first, second = k8s.job_pods("vision", "resnet-sweep", 2)
    assert ci.pod_name(first) == ci.pod_name(second) == "resnet-sweep"
    gpu_hours, holds = _two_nodes(
        {"n1": 616.0, "n2": 84.0}, [(first, 616.0, 60), (second, 84.0, 60)]
    )
    assert {h.pod: h.gpu.node for h in holds} == {first.name: "n1", second.name: "n2"}
    result = attribute(gpu_hours, holds)
    assert result.classes[HourClass.NOT_HELD] == 0.0
    (job,) = result.jobs()
    assert job == ("vision", "resnet-sweep")
    pods = result.jobs()[job]
    assert sorted(p.pod for p in pods) == sorted([first.name, second.name])
    assert sum(p.held for p in pods) == 2.0
    # The second pod held its GPU at 12% of the limit: held without work, the job's hour.
    assert sum(p.hours[HourClass.NOT_WORKING] for p in pods) == 1.0


def test_the_emitters_pod_names_are_the_pods_own_names() -> None:
    # The emitter reports metadata.name (the downward API), FullPodName: a JobSet's child Job's
    # two pods on nvidia0 of two nodes at the same power, each rank naming its pod and node.
    first, second = k8s.jobset_pods("nlp", "pretrain", "trainer", 1, 2)
    assert ci.pod_name(first) == "pretrain-trainer-0" != first.name
    exact = {first.name: "pretrain-run-3", second.name: "pretrain-run-3"}
    gpu_hours, holds = _two_nodes(
        {"n1": 699.0, "n2": 699.0},
        [(first, 699.0, 60), (second, 699.0, 60)],
        pod_nodes={first.name: "n2", second.name: "n1"},
    )
    assert {h.pod: h.gpu.node for h in holds} == {first.name: "n2", second.name: "n1"}
    result = attribute(gpu_hours, holds, exact_jobs=exact)
    assert {(ns, job) for ns, job in result.jobs()} == {("nlp", "pretrain-run-3")}
    assert not any(p.job.inferred for p in result.pods.values())


def test_a_pods_job_is_the_controller_container_insights_names() -> None:
    # One node's eight GPUs, each held by a pod of another kind of workload, with the
    # dimensions the agent gives each (PodName by its owner, FullPodName its own name).
    cron = k8s.cronjob_pods("research", "nightly-eval", START - 3600)
    mpi = k8s.mpijob_pods("nlp", "bert-mpi", 2)  # a launcher Job's pod and two workers
    torch = k8s.pytorchjob_pods("nlp", "llama-ft", 1)
    serve = k8s.deployment_pods("serve", "llm-api", 1)
    notebook = [k8s.notebook_pod("research", "jupyter-alice")]
    pods = [*cron, *mpi, *torch, *serve, *notebook]
    gpu_hours, holds = _fleet(
        {"n1": [616.0] * len(pods)}, [(pod, i, 616.0, 60) for i, pod in enumerate(pods)]
    )
    result = attribute(gpu_hours, holds)
    jobs = {key: (len(p), {q.job.kind for q in p}) for key, p in result.jobs().items()}
    assert jobs == {
        # The CronJob's run is a Job <cronjob>-<minutes>, which the agent names the pod by.
        ("research", "nightly-eval"): (1, {"CronJob"}),
        # The launcher Job's pod with the workers, whose names a PyTorchJob's could have.
        ("nlp", "bert-mpi"): (3, {"MPIJob", "PyTorchJob or MPIJob"}),
        ("nlp", "llama-ft"): (2, {"PyTorchJob", "PyTorchJob or MPIJob"}),
        ("serve", "llm-api"): (1, {"Deployment"}),
        ("research", "jupyter-alice"): (1, {"StatefulSet"}),
    }
    assert sum(result.classes.values()) == len(pods)


def _put_minutes(
    cw: object, metric: str, dims: dict[str, str], minutes: int, per_minute: int, value: float
) -> None:
    """``minutes`` one-minute datapoints of ``per_minute`` samples each, as the agent's EMF
    exporter compacts sub-minute samples into a minute's values and counts."""
    data = [
        {
            "MetricName": metric,
            "Dimensions": [{"Name": k, "Value": v} for k, v in dims.items()],
            "Timestamp": datetime.fromtimestamp(START + 60 * i, UTC),
            "StatisticValues": {
                "SampleCount": per_minute,
                "Sum": value * per_minute,
                "Minimum": value,
                "Maximum": value,
            },
        }
        for i in range(minutes)
    ]
    cw.put_metric_data(Namespace="ContainerInsights", MetricData=data)  # type: ignore[attr-defined]


def test_a_pods_share_is_its_minutes_at_the_agents_high_frequency_interval() -> None:
    # accelerated_compute_gpu_metrics_collection_interval = 1: 60 samples in each minute
    # (cli/demo/realistic/container_insights.py, samples_per_minute). The Job's pod held the GPU
    # for 30 minutes: half an hour, not the whole hour 1,800 samples over 60 would make it.
    per_minute = ci.samples_per_minute(1)
    with mock_aws(), indexed_cloudwatch():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        cw = client("cloudwatch", session=session)
        gpu = {"ClusterName": "c", "NodeName": "n1", "GpuIndex": "0"}
        alarmed = {**gpu, "Shard": "0"}
        _put(cw, "GpuInsights", "gpu_power_utilization", gpu, [80.0] * 12)
        _put(cw, "GpuInsights", "gpu_allocated_power_utilization", alarmed, [80.0] * 12)
        _put(cw, "GpuInsights", "gpu_healthy", alarmed, [1.0] * 12)
        node = ci.node_gpu_dimensions("c", "n1", "i-n1", "p5.48xlarge", "nvidia0")
        _put_minutes(cw, "node_gpu_power_draw", node, 60, per_minute, 560.0)
        pod = ci.pod_gpu_dimensions("c", RUN, "nvidia0")
        _put_minutes(cw, "pod_gpu_utilization", pod, 30, per_minute, 90.0)
        _put_minutes(cw, "pod_gpu_power_draw", pod, 30, per_minute, 560.0)
        observed = observe(cw, "c", start=START, end=START + 3600)
    (hold,) = observed.holds
    assert hold.share == 0.5
    result = attribute(observed.gpu_hours, observed.holds)
    assert result.pods[("vision", RUN.name)].hours[HourClass.WORKING] == 0.5
    assert result.classes[HourClass.NOT_HELD] == 0.5
