import pytest

from lambdas.gpu_analyzer.workloads import JobRef, infer_job, job_of


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
