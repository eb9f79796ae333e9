"""PodName as the CloudWatch agent sets it, held to the agent's own test cases
(amazon-contributing/opentelemetry-collector-contrib receiver/awscontainerinsightreceiver/
internal/stores/podstore_test.go, ``TestPodStore_addPodOwnersAndPodName``, ``TestGetJobNamePrefix``)
and to the pods the controllers make."""

import pytest

from cli.demo.realistic import container_insights as ci
from cli.demo.realistic import pods as k8s


def _owned(kind: str, owner: str, name: str = "cpu-limit") -> k8s.Pod:
    """The agent's test pod ("cpu-limit") with one owner reference (the agent's test names,
    some shortened)."""
    return k8s.Pod("default", name, kind, owner, owner, kind)


CASES = [
    (_owned("DaemonSet", "DaemonSetTest"), True, "DaemonSetTest", ("DaemonSet", "DaemonSetTest")),
    # A ReplicaSet whose name has no hash suffix, and no Deployment the informer knows.
    (_owned("ReplicaSet", "RSTest"), True, "RSTest", ("ReplicaSet", "RSTest")),
    (_owned("StatefulSet", "SSTest"), True, "cpu-limit", ("StatefulSet", "SSTest")),
    (_owned("ReplicationController", "RC"), True, "RC", ("ReplicationController", "RC")),
    # prefer_full_pod_name (enhanced mode) keeps the Job's name; without it, its prefix.
    (_owned("Job", "JobTest.088123x12"), True, "JobTest.088123x12", ("Job", "JobTest.088123x12")),
    (_owned("Job", "JobTest.088123x12"), False, "JobTest", ("Job", "JobTest")),
    # The ReplicaSet's Deployment, parsed from its name when the informer has none.
    (_owned("ReplicaSet", "DepTest-sftrz2785"), True, "DepTest", ("Deployment", "DepTest")),
    # A 10-digit Job suffix is read as the legacy CronJob controller's.
    (_owned("Job", "CronJobTest-1556582405"), True, "CronJobTest", ("CronJob", "CronJobTest")),
    (k8s.bare_pod("kube-system", "kube-proxy-xyz1"), True, "kube-proxy-xyz1", None),
    (k8s.bare_pod("kube-system", "kube-proxy-xyz1"), False, "kube-proxy", None),
]


@pytest.mark.parametrize(("pod", "prefer_full", "pod_name", "owner"), CASES)
def test_the_agents_own_cases(
    pod: k8s.Pod, prefer_full: bool, pod_name: str, owner: tuple[str, str] | None
) -> None:
    assert ci.pod_name(pod, prefer_full_pod_name=prefer_full) == pod_name
    assert ci.owner(pod, prefer_full_pod_name=prefer_full) == owner


@pytest.mark.parametrize(
    ("name", "prefix"),
    [("abcd-efg", "abcd"), ("abcd.efg", "abcd"), ("abc.d-efg", "abc"), ("abcd.-efg", "abcd"),
     ("abcdefg", "abcdefg"), ("abcdefg-", "abcdefg"), (".abcd-efg", ""), ("", "")],
)  # fmt: skip
def test_job_name_prefix(name: str, prefix: str) -> None:
    assert ci.job_name_prefix(name) == prefix


def test_podname_is_the_controllers_for_job_replicaset_daemonset_pods_and_own_otherwise() -> None:
    job = k8s.job_pods("vision", "resnet-sweep", 2)
    indexed = k8s.job_pods("vision", "resnet-ddp", 2, indexed=True)
    deploy = k8s.deployment_pods("serve", "llm-api", 2)
    cron = k8s.cronjob_pods("research", "nightly-eval", 1_764_000_000)
    jobset = k8s.jobset_pods("nlp", "pretrain", "trainer", 1, 2)
    launcher, *workers = k8s.mpijob_pods("nlp", "bert-mpi", 2)
    torch = k8s.pytorchjob_pods("nlp", "llama-ft", 1)
    ray = k8s.rayjob_pods("ray", "tune", "gpu", 1)
    notebook = k8s.notebook_pod("research", "jupyter-alice")
    assert {ci.pod_name(p) for p in job} == {"resnet-sweep"}
    assert {ci.pod_name(p) for p in indexed} == {"resnet-ddp"}
    assert {ci.pod_name(p) for p in deploy} == {"llm-api"}
    # Today's CronJob Jobs end in 8 digits (minutes): not the agent's 10, so the Job's name.
    assert [ci.pod_name(p) for p in cron] == ["nightly-eval-29400000"]
    assert {ci.pod_name(p) for p in jobset} == {"pretrain-trainer-0"}
    assert ci.pod_name(launcher) == "bert-mpi-launcher"
    # Custom resources' pods and StatefulSets' keep their own names.
    for pod in [*workers, *torch, *ray, notebook]:
        assert ci.pod_name(pod) == pod.name
    # FullPodName is always the pod's own name, so pods of one Job differ only there.
    dims = [ci.pod_gpu_dimensions("c", p, "nvidia0") for p in job]
    assert dims[0]["PodName"] == dims[1]["PodName"]
    assert [d["FullPodName"] for d in dims] == [p.name for p in job]


def test_pod_gpu_series_carry_no_node_and_only_the_last_set_a_gpu() -> None:
    (pod,) = k8s.job_pods("vision", "resnet-sweep", 1)
    sets = ci.pod_gpu_dimension_sets("c", pod, "nvidia3")
    assert [sorted(d) for d in sets] == [
        ["ClusterName"],
        ["ClusterName", "Namespace"],
        ["ClusterName", "Namespace", "PodName"],
        ["ClusterName", "FullPodName", "Namespace", "PodName"],
        ["ClusterName", "FullPodName", "GpuDevice", "Namespace", "PodName"],
    ]  # no Service set: no Service selects the pod
    assert not any("NodeName" in d for d in sets)
    assert ci.pod_gpu_dimensions("c", pod, "nvidia3") == {
        "ClusterName": "c",
        "FullPodName": pod.name,
        "GpuDevice": "nvidia3",
        "Namespace": "vision",
        "PodName": "resnet-sweep",
    }
    with_service = ci.pod_gpu_dimension_sets("c", pod, "nvidia3", service="resnet")
    assert {"ClusterName": "c", "Namespace": "vision", "Service": "resnet"} in with_service
    assert "NodeName" in ci.NODE_GPU_DIMENSION_SETS[-1]


def test_the_gpu_metrics_include_tensor_core_utilization() -> None:
    # getGPUMetricDeclarations declares seven pod and seven node GPU metrics.
    assert len(ci.POD_GPU_METRICS) == len(ci.NODE_GPU_METRICS) == 7
    assert "pod_gpu_tensor_core_utilization" in ci.POD_GPU_METRICS
    assert "node_gpu_tensor_core_utilization" in ci.NODE_GPU_METRICS


def test_high_frequency_gpu_mode_puts_sub_minute_samples_in_each_minute() -> None:
    assert not ci.high_frequency(60)
    assert ci.samples_per_minute() == 1
    assert ci.high_frequency(1)
    assert ci.samples_per_minute(1) == 60
    assert ci.samples_per_minute(10) == 6
    with pytest.raises(ValueError, match="collection_interval 0"):
        ci.high_frequency(0)
