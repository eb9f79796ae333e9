import pytest

from cli.demo.realistic import container_insights as ci
from cli.demo.realistic import pods as k8s
from lambdas.training_analyzer.gpu_hours.workloads import (
    JobRef,
    infer_job,
    job_of,
    serving_controller,
)


@pytest.mark.parametrize(
    ("pod", "job", "kind"),
    [
        # Kubernetes Job: <job>-<5 random>, and an Indexed Job's <job>-<index>-<5>.
        ("resnet-sweep-7xk2p", "resnet-sweep", "Job"),
        ("resnet-sweep-3-7xk2p", "resnet-sweep", "Job"),
        # Kubeflow PyTorchJob.
        ("llama-ft-master-0", "llama-ft", "PyTorchJob"),
        ("llama-ft-worker-11", "llama-ft", "PyTorchJob or MPIJob"),
        # MPIJob's launcher (its workers share PyTorchJob's shape).
        ("bert-mpi-launcher-b9x2z", "bert-mpi", "MPIJob"),
        # JobSet: <jobset>-<replicated job>-<job index>-<pod index>-<5>.
        ("pretrain-workers-0-3-q8hzt", "pretrain", "JobSet"),
        # RayJob through KubeRay's RayCluster: head and workers.
        ("tune-raycluster-x2v9k-head-ml4pw", "tune", "RayJob"),
        ("tune-raycluster-x2v9k-gpu-group-worker-ml4pw", "tune", "RayJob"),
        # A notebook's StatefulSet.
        ("alice-notebook-0", "alice-notebook", "StatefulSet"),
        # Nothing a controller makes: the pod is its own job.
        ("debug", "debug", "Pod"),
    ],
)
def test_each_workload_pattern_names_the_job_and_is_marked_inferred(
    pod: str, job: str, kind: str
) -> None:
    assert infer_job(pod) == JobRef(job=job, kind=kind, inferred=True)


def test_a_word_is_not_taken_for_a_generated_suffix() -> None:
    # "train" has a vowel: Kubernetes' name generator never makes it.
    assert infer_job("bert-train").kind == "Pod"


def test_the_emitters_pod_name_wins_over_the_pattern_and_is_exact() -> None:
    exact = {"llama-ft-worker-3": "llama-ft-run-42"}
    assert job_of("llama-ft-worker-3", exact) == JobRef(
        "llama-ft-run-42", "emitter.training", False
    )
    assert job_of("llama-ft-worker-4", exact).inferred


@pytest.mark.parametrize(
    ("pod", "job", "kind"),
    [
        # Container Insights names these pods by their owner (PodName); the job is that owner.
        (k8s.job_pods("vision", "resnet-sweep", 1, indexed=True)[0], "resnet-sweep", "Job"),
        (k8s.job_pods("vision", "resnet-sweep", 1)[0], "resnet-sweep", "Job or DaemonSet"),
        (k8s.deployment_pods("serve", "llm-api", 1)[0], "llm-api", "Deployment"),
        (k8s.daemonset_pod("serve", "triton", "n1"), "triton", "Job or DaemonSet"),
        # Today's CronJob controller: Job <cronjob>-<minutes>, which the agent does not map.
        (k8s.cronjob_pods("research", "nightly-eval", 1_764_000_000)[0], "nightly-eval", "CronJob"),
        # A JobSet's child Job and an MPIJob's launcher Job belong to the JobSet and MPIJob.
        (k8s.jobset_pods("nlp", "pretrain", "trainer", 2, 1)[1], "pretrain", "JobSet"),
        (k8s.mpijob_pods("nlp", "bert-mpi", 1)[0], "bert-mpi", "MPIJob"),
        # Pods Container Insights names by their own name: inferred from it.
        (k8s.pytorchjob_pods("nlp", "llama-ft", 1)[0], "llama-ft", "PyTorchJob"),
        (k8s.rayjob_pods("ray", "tune", "gpu", 1)[1], "tune", "RayJob"),
        (k8s.notebook_pod("research", "jupyter-alice"), "jupyter-alice", "StatefulSet"),
        (k8s.bare_pod("research", "debug"), "debug", "Pod"),
    ],
    ids=lambda value: value.name if isinstance(value, k8s.Pod) else None,
)
def test_the_job_of_a_real_pod_is_its_controller_where_container_insights_names_one(
    pod: k8s.Pod, job: str, kind: str
) -> None:
    assert job_of(pod.name, {}, ci.pod_name(pod)) == JobRef(job, kind, inferred=True)
    assert pod.workload == job


def test_a_job_named_after_a_date_is_not_a_cronjobs() -> None:
    (pod,) = k8s.job_pods("vision", "train-20251130", 1)
    assert job_of(pod.name, {}, ci.pod_name(pod)) == JobRef(
        "train-20251130", "Job or DaemonSet", inferred=True
    )


def test_the_emitters_pod_name_is_the_pods_own_name_not_its_controllers() -> None:
    first, second = k8s.job_pods("vision", "resnet-sweep", 2, indexed=True)
    exact = {first.name: "resnet-sweep-run-9"}
    assert job_of(first.name, exact, "resnet-sweep") == JobRef(
        "resnet-sweep-run-9", "emitter.training", False
    )
    assert job_of(second.name, exact, "resnet-sweep").inferred


def test_a_rayservices_pods_are_its_own_not_a_rayjobs_where_their_labels_say_so() -> None:
    # KubeRay names a RayService's cluster pods as it names a RayJob's; only its labels
    # (ray-operator utils/constant.go) tell them apart.
    pod = "chat-raycluster-x2v9k-head-ml4pw"
    assert infer_job(pod) == JobRef(job="chat", kind="RayJob", inferred=True)
    labels = {"ray.io/originated-from-crd": "RayService", "ray.io/originated-from-cr-name": "chat"}
    kind, name = serving_controller(labels) or ("", "")
    assert job_of(pod, {}, name, kind) == JobRef(job="chat", kind="RayService", inferred=True)
    # A RayJob's cluster is no serving controller.
    rayjob = {"ray.io/originated-from-crd": "RayJob", "ray.io/originated-from-cr-name": "tune"}
    assert serving_controller(rayjob) is None


def test_a_kserve_pod_is_its_inferenceservices_not_its_predictor_deployments() -> None:
    pod = "llama-predictor-7c9b4d6f8-x2v9k"
    labels = {"serving.kserve.io/inferenceservice": "llama", "component": "predictor"}
    assert job_of(pod, {}, "llama-predictor").kind == "Deployment"
    assert serving_controller(labels, "llama-predictor") == ("InferenceService", "llama")
    assert job_of(pod, {}, "llama", "InferenceService").job == "llama"
    assert serving_controller({}, "llm-api") == ("Deployment", "llm-api")
    assert serving_controller({}) is None
