"""Pod names as Kubernetes and the operators make them."""

import re
from datetime import UTC, datetime

from cli.demo.realistic import pods as k8s

RANDOM = f"[{k8s.ALPHANUMS}]{{5}}"


def test_a_jobs_pod_is_its_name_and_five_generated_characters() -> None:
    # The Job docs' example pod of Job "pi" is "pi-5rwd7" (https://kubernetes.io/docs/concepts/
    # workloads/controllers/job/): the same shape.
    (pod,) = k8s.job_pods("default", "pi", 1)
    assert re.fullmatch(f"pi-{RANDOM}", pod.name)
    assert re.fullmatch(f"pi-{RANDOM}", "pi-5rwd7")
    assert (pod.owner_kind, pod.owner_name) == ("Job", "pi")
    indexed = k8s.job_pods("default", "sample-job", 3, indexed=True)
    assert [p.name[: -k8s.RANDOM_LENGTH] for p in indexed] == [
        "sample-job-0-",
        "sample-job-1-",
        "sample-job-2-",
    ]
    # A long base is cut to 58 characters before the five random ones.
    (long,) = k8s.job_pods("default", "x" * 70, 1)
    assert len(long.name) == 63


def test_an_indexed_jobs_long_name_is_shortened_and_keeps_its_index() -> None:
    # podGenerateNameWithIndex (kubernetes/kubernetes pkg/controller/job/indexed_job_utils.go):
    # "a"*60 + "-2-" is 63 > 58, so the name is cut to 55 and "-2-" appended.
    pods = k8s.job_pods("ns", "a" * 60, 3, indexed=True)
    assert [p.name[: -k8s.RANDOM_LENGTH] for p in pods] == [f"{'a' * 55}-{i}-" for i in range(3)]
    assert all(len(p.name) == 63 for p in pods)
    assert len({p.name for p in pods}) == 3
    # Two-digit indexes cut one more character of the name.
    assert k8s.indexed_pod_prefix("a" * 60, 12) == f"{'a' * 54}-12-"
    # A JobSet's child Jobs are Indexed Jobs: a long JobSet keeps each pod's index.
    jobset = k8s.jobset_pods("nlp", "j" * 50, "workers", 1, 2)
    assert [p.name[: -k8s.RANDOM_LENGTH] for p in jobset] == [
        f"{('j' * 50 + '-workers-0')[:55]}-{i}-" for i in range(2)
    ]


def test_a_cronjobs_run_is_a_job_named_by_its_scheduled_minute() -> None:
    scheduled = datetime(2025, 1, 15, 10, 30, tzinfo=UTC).timestamp()
    assert k8s.cronjob_job_name("hello", scheduled) == "hello-28948950"
    # The docs' 52-character limit leaves 11 for "-" and the suffix.
    assert len(k8s.cronjob_job_name("x" * 52, scheduled)) <= 63
    (pod,) = k8s.cronjob_pods("default", "hello", scheduled)
    assert re.fullmatch(f"hello-28948950-{RANDOM}", pod.name)
    assert (pod.owner_kind, pod.owner_name, pod.workload) == ("Job", "hello-28948950", "hello")


def test_a_deployments_pods_belong_to_its_replicaset_with_the_template_hash() -> None:
    pods = k8s.deployment_pods("default", "nginx-deployment", 2)
    replicaset = pods[0].owner_name
    assert replicaset is not None
    # The hash's characters come from decimal digits through SafeEncodeString: the docs'
    # ReplicaSet nginx-deployment-75675f5897 is one of them.
    assert re.fullmatch(r"nginx-deployment-[4-9bcdf]{1,10}", replicaset)
    assert re.fullmatch(r"nginx-deployment-[4-9bcdf]{1,10}", "nginx-deployment-75675f5897")
    assert all(re.fullmatch(f"{replicaset}-{RANDOM}", p.name) for p in pods)
    assert len({p.name for p in pods}) == 2


def test_operator_pods() -> None:
    assert [p.name for p in k8s.pytorchjob_pods("nlp", "llama", 2)] == [
        "llama-master-0",
        "llama-worker-0",
        "llama-worker-1",
    ]
    launcher, *workers = k8s.mpijob_pods("nlp", "pi", 2)
    assert re.fullmatch(f"pi-launcher-{RANDOM}", launcher.name)
    assert (launcher.owner_kind, launcher.owner_name) == ("Job", "pi-launcher")
    assert [(w.name, w.owner_kind) for w in workers] == [
        ("pi-worker-0", "MPIJob"),
        ("pi-worker-1", "MPIJob"),
    ]
    jobset = k8s.jobset_pods("nlp", "js", "workers", 2, 2)
    assert [(p.name[: -k8s.RANDOM_LENGTH], p.owner_name) for p in jobset] == [
        ("js-workers-0-0-", "js-workers-0"),
        ("js-workers-0-1-", "js-workers-0"),
        ("js-workers-1-0-", "js-workers-1"),
        ("js-workers-1-1-", "js-workers-1"),
    ]
    head, worker = k8s.rayjob_pods("ray", "tune", "gpu", 1)
    cluster = head.owner_name
    assert cluster is not None
    assert re.fullmatch(f"tune-raycluster-{RANDOM}", cluster)
    assert re.fullmatch(f"{cluster}-head-{RANDOM}", head.name)
    assert re.fullmatch(f"{cluster}-worker-gpu-{RANDOM}", worker.name)
    assert k8s.notebook_pod("research", "jupyter-alice").name == "jupyter-alice-0"
    assert k8s.bare_pod("x", "debug").owner_kind is None


def test_names_are_the_same_on_every_run() -> None:
    assert k8s.job_pods("a", "b", 2) == k8s.job_pods("a", "b", 2)
    assert k8s.job_pods("a", "b", 1) != k8s.job_pods("a", "c", 1)
