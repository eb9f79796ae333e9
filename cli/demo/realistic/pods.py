"""Pods as their controllers name them, each with the owner reference the CloudWatch agent reads
(``pod.OwnerReferences``: kind and name) and the workload a person would call it by.

Random parts are drawn from a seed, so a name is the same on every run; their length and
alphabet are Kubernetes' own.
"""

import hashlib
from dataclasses import dataclass
from typing import Final

#: k8s.io/apimachinery/pkg/util/rand/rand.go ``alphanums``: "We omit vowels from the set of
#: available characters to reduce the chances of 'bad words' being formed", and 0, 1, 3 (look
#: like o, l, e). The agent keeps the same set (amazon-contributing/opentelemetry-collector-contrib
#: receiver/awscontainerinsightreceiver/internal/stores/utils.go, kubeAllowedStringAlphaNums).
ALPHANUMS: Final = "bcdfghjklmnpqrstvwxz2456789"
#: k8s.io/apiserver/pkg/storage/names/generate.go: ``randomLength = 5`` and
#: ``MaxGeneratedNameLength = maxNameLength - randomLength`` (63 - 5): a ``generateName`` base
#: is cut to 58 characters before its five random ones are appended.
RANDOM_LENGTH: Final = 5
MAX_GENERATED_BASE: Final = 63 - RANDOM_LENGTH

# Owner kinds (ownerReferences[].kind) as Kubernetes and the operators write them.
JOB: Final = "Job"
CRONJOB: Final = "CronJob"
REPLICASET: Final = "ReplicaSet"
DEPLOYMENT: Final = "Deployment"
STATEFULSET: Final = "StatefulSet"
DAEMONSET: Final = "DaemonSet"
REPLICATION_CONTROLLER: Final = "ReplicationController"
PYTORCHJOB: Final = "PyTorchJob"
MPIJOB: Final = "MPIJob"
JOBSET: Final = "JobSet"
RAYCLUSTER: Final = "RayCluster"
RAYJOB: Final = "RayJob"
NOTEBOOK: Final = "Notebook"


@dataclass(frozen=True)
class Pod:
    namespace: str
    #: ``metadata.name``: what ``FullPodName``, dcgm-exporter's ``pod`` label and the downward
    #: API's ``metadata.name`` (the emitter's ``POD_NAME``) carry.
    name: str
    #: The pod's owner reference (kind, name); None for a bare pod.
    owner_kind: str | None
    owner_name: str | None
    #: The workload a person names: the Job, CronJob, Deployment, notebook, PyTorchJob ...
    workload: str
    workload_kind: str


def random_string(seed: str, length: int = RANDOM_LENGTH) -> str:
    """``utilrand.String(length)``'s shape: ``length`` characters of ``ALPHANUMS``, drawn from
    ``seed`` so that a model is the same on every run."""
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(ALPHANUMS[b % len(ALPHANUMS)] for b in digest[:length])


def generated_name(base: str, seed: str) -> str:
    """A ``metadata.generateName`` resolved by the API server: the base cut to 58 characters,
    then five random characters (k8s.io/apiserver/pkg/storage/names/generate.go,
    ``SimpleNameGenerator.GenerateName``)."""
    return base[:MAX_GENERATED_BASE] + random_string(f"{seed}/{base}")


def pod_template_hash(seed: str) -> str:
    """A Deployment's ``pod-template-hash``: ``rand.SafeEncodeString(fmt.Sprint(hash))`` of a
    32-bit FNV hash of the pod template (kubernetes/kubernetes pkg/controller/controller_utils.go
    ``ComputeHash``). SafeEncodeString maps each byte to ``ALPHANUMS[b % 27]``, so a decimal
    digit becomes one of 4-9, b, c, d, f: the Deployment docs' ReplicaSet
    ``nginx-deployment-75675f5897`` is such a name."""
    value = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:4], "big")
    return "".join(ALPHANUMS[ord(c) % len(ALPHANUMS)] for c in str(value))


def indexed_pod_prefix(job: str, index: int) -> str:
    """An Indexed Job's pod ``generateName``: ``<job>-<index>-``, and where that is longer than
    58 characters the Job's name is cut so that ``-<index>-`` stays whole (kubernetes/kubernetes
    pkg/controller/job/indexed_job_utils.go at 78fc8e44052f, ``podGenerateNameWithIndex``:
    ``generateNamePrefix[:names.MaxGeneratedNameLength-len(appendIndex)] + appendIndex``).
    The API server then leaves the 58 alone and appends its five."""
    append = f"-{index}-"
    prefix = job + append
    if len(prefix) > MAX_GENERATED_BASE:
        prefix = prefix[: MAX_GENERATED_BASE - len(append)] + append
    return prefix


def job_pods(
    namespace: str,
    job: str,
    count: int,
    *,
    indexed: bool = False,
    workload: str | None = None,
    workload_kind: str = JOB,
) -> list[Pod]:
    """A Job's pods, owned by the Job. The Job controller gives each pod the Job's name and a
    dash as ``generateName`` (kubernetes/kubernetes pkg/controller/controller_utils.go,
    ``getPodsPrefix``): ``<job>-<5>``; in an Indexed Job "the Pod name takes the form
    ``$(job-name)-$(index)-$(random-string)``" (https://kubernetes.io/docs/concepts/workloads/
    controllers/job/#completion-mode)."""
    bases = [indexed_pod_prefix(job, i) if indexed else f"{job}-" for i in range(count)]
    return [
        Pod(
            namespace=namespace,
            name=generated_name(base, f"{namespace}/{job}/{i}"),
            owner_kind=JOB,
            owner_name=job,
            workload=workload or job,
            workload_kind=workload_kind,
        )
        for i, base in enumerate(bases)
    ]


def cronjob_job_name(cronjob: str, scheduled: float) -> str:
    """The Job a CronJob creates for its run at ``scheduled`` (epoch seconds):
    ``fmt.Sprintf("%s-%d", cj.Name, getTimeHashInMinutes(scheduledTime))``, the scheduled time
    in minutes since the epoch (kubernetes/kubernetes pkg/controller/cronjob/utils.go,
    ``getJobName``; "the CronJob controller will automatically append 11 characters to the name
    you provide", https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/). Eight
    digits from 1989 to 2160."""
    return f"{cronjob}-{int(scheduled) // 60}"


def cronjob_pods(namespace: str, cronjob: str, scheduled: float, count: int = 1) -> list[Pod]:
    """The pods of a CronJob's run: its Job's pods, owned by the Job (the Job is owned by the
    CronJob, the pod is not)."""
    job = cronjob_job_name(cronjob, scheduled)
    return job_pods(namespace, job, count, workload=cronjob, workload_kind=CRONJOB)


def deployment_pods(namespace: str, deployment: str, replicas: int) -> list[Pod]:
    """A Deployment's pods, owned by its ReplicaSet ``<deployment>-<pod-template-hash>``
    (kubernetes/kubernetes pkg/controller/deployment/sync.go ``getNewReplicaSet``: ``Name:
    d.Name + "-" + podTemplateSpecHash``), named ``<replicaset>-<5>``."""
    replicaset = f"{deployment}-{pod_template_hash(f'{namespace}/{deployment}')}"
    return [
        Pod(
            namespace=namespace,
            name=generated_name(f"{replicaset}-", f"{namespace}/{replicaset}/{i}"),
            owner_kind=REPLICASET,
            owner_name=replicaset,
            workload=deployment,
            workload_kind=DEPLOYMENT,
        )
        for i in range(replicas)
    ]


def statefulset_pods(
    namespace: str, statefulset: str, replicas: int, *, workload_kind: str = STATEFULSET
) -> list[Pod]:
    """A StatefulSet's pods: "The pattern for the constructed hostname is $(statefulset
    name)-$(ordinal)" (https://kubernetes.io/docs/concepts/workloads/controllers/statefulset/
    #pod-identity). A Kubeflow notebook is one: its controller makes a StatefulSet named as the
    Notebook (kubeflow/kubeflow components/notebook-controller, ``generateStatefulSet``), so a
    notebook's pod is ``<notebook>-0``."""
    return [
        Pod(
            namespace=namespace,
            name=f"{statefulset}-{i}",
            owner_kind=STATEFULSET,
            owner_name=statefulset,
            workload=statefulset,
            workload_kind=workload_kind,
        )
        for i in range(replicas)
    ]


def notebook_pod(namespace: str, notebook: str) -> Pod:
    """A Kubeflow notebook's pod (one replica of its StatefulSet)."""
    return statefulset_pods(namespace, notebook, 1, workload_kind=NOTEBOOK)[0]


def daemonset_pod(namespace: str, daemonset: str, node: str) -> Pod:
    """One node's pod of a DaemonSet, ``<daemonset>-<5>`` (``getPodsPrefix`` as for a Job)."""
    return Pod(
        namespace=namespace,
        name=generated_name(f"{daemonset}-", f"{namespace}/{daemonset}/{node}"),
        owner_kind=DAEMONSET,
        owner_name=daemonset,
        workload=daemonset,
        workload_kind=DAEMONSET,
    )


def pytorchjob_pods(namespace: str, job: str, workers: int, *, master: bool = True) -> list[Pod]:
    """A Kubeflow PyTorchJob's pods, owned by the PyTorchJob: ``<job>-master-0`` and
    ``<job>-worker-<i>`` (kubeflow/training-operator ``GenGeneralName``: ``jobName + "-" +
    strings.ToLower(rtype) + "-" + index``)."""
    names = ([f"{job}-master-0"] if master else []) + [f"{job}-worker-{i}" for i in range(workers)]
    return [Pod(namespace, name, PYTORCHJOB, job, job, PYTORCHJOB) for name in names]


def mpijob_pods(namespace: str, job: str, workers: int) -> list[Pod]:
    """A Kubeflow MPIJob (v2beta1): its launcher is a batch Job ``<job>-launcher`` whose pod is
    ``<job>-launcher-<5>``, its workers are pods ``<job>-worker-<i>`` owned by the MPIJob
    (kubeflow/mpi-operator pkg/controller/mpi_job_controller.go: ``launcherSuffix =
    "-launcher"``, ``workerSuffix = "-worker"``, ``newLauncherJob``, ``workerName``)."""
    launcher = job_pods(namespace, f"{job}-launcher", 1, workload=job, workload_kind=MPIJOB)
    return launcher + [
        Pod(namespace, f"{job}-worker-{i}", MPIJOB, job, job, MPIJOB) for i in range(workers)
    ]


def jobset_pods(
    namespace: str, jobset: str, replicated_job: str, jobs: int, pods_per_job: int
) -> list[Pod]:
    """A JobSet's pods: each replicated job makes child Jobs ``<jobset>-<replicatedJob>-<i>``
    (kubernetes-sigs/jobset ``GenJobName``: ``fmt.Sprintf("%s-%s-%d", jsName, rjobName,
    jobIndex)``), Indexed Jobs, so their pods are ``<child>-<podIndex>-<5>`` (a long child name
    shortened by ``indexed_pod_prefix``), owned by the child Job."""
    return [
        pod
        for j in range(jobs)
        for pod in job_pods(
            namespace,
            f"{jobset}-{replicated_job}-{j}",
            pods_per_job,
            indexed=True,
            workload=jobset,
            workload_kind=JOBSET,
        )
    ]


def rayjob_pods(namespace: str, rayjob: str, group: str, workers: int) -> list[Pod]:
    """A KubeRay RayJob's RayCluster ``<rayjob>-raycluster-<5>`` (ray-project/kuberay
    ray-operator/controllers/ray/utils/util.go ``GenerateRayClusterName``: ``RayClusterSuffix``
    ``-raycluster-`` and ``rand.String(5)``), its head pod ``<cluster>-head-<5>`` and workers
    ``<cluster>-worker-<group>-<5>`` (raycluster_controller.go ``buildHeadPod``,
    ``buildWorkerPod``), owned by the RayCluster."""
    cluster = f"{rayjob}-raycluster-{random_string(f'{namespace}/{rayjob}')}"
    bases = [f"{cluster}-head-"] + [f"{cluster}-worker-{group}-"] * workers
    return [
        Pod(
            namespace=namespace,
            name=generated_name(base, f"{cluster}/{i}"),
            owner_kind=RAYCLUSTER,
            owner_name=cluster,
            workload=rayjob,
            workload_kind=RAYJOB,
        )
        for i, base in enumerate(bases)
    ]


def bare_pod(namespace: str, name: str) -> Pod:
    """A pod created on its own (``kubectl run``, a debug pod): no owner."""
    return Pod(namespace, name, None, None, name, "Pod")
