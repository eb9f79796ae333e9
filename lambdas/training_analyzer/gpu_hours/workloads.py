"""Which job a pod belongs to: exactly where the training emitter named it, otherwise inferred
from the pod name the workload controller generated.

Controllers name pods predictably: a Kubernetes Job ``<job>-<5>`` (``<job>-<index>-<5>`` when
indexed), Kubeflow's PyTorchJob ``<job>-master-N`` / ``<job>-worker-N``, MPIJob
``<job>-launcher-<5>`` / ``<job>-worker-N``, JobSet ``<jobset>-<replicated job>-<i>-<j>-<5>``,
KubeRay's RayJob ``<rayjob>-raycluster-<5>-head-<5>`` (and its workers), a StatefulSet (a
notebook) ``<name>-N``. The five random characters come from Kubernetes' name generator
alphabet, which has no vowels and no 0, 1 or 3, so a word such as ``-train`` is never taken for
one. An inferred job is marked so: two controllers can produce the same shape (a PyTorchJob's
and an MPIJob's ``-worker-N``), and a JobSet's replicated-job name is taken to be its last word.

Container Insights names a pod's controller too: its ``PodName`` is the Job's name for a Job's
pod, the Deployment's for a ReplicaSet's, the DaemonSet's or ReplicationController's for theirs,
the pod's own name otherwise (amazon-contributing/opentelemetry-collector-contrib
receiver/awscontainerinsightreceiver/internal/stores/podstore.go, ``addPodOwnersAndPodName``).
Where it differs from the pod's name, the job is that controller (``controller_job``).

Serving controllers are read from the pod's labels where they reach the analyzer (OTel mode:
the add-on's ``k8sattributes/cw_k8s_ci_v0_pod`` extracts every pod label as
``k8s.pod.label.<key>``, ``tag_name: "k8s.pod.label.$$$1"``, ``key_regex: "(.*)"``, and runs in
the DCGM pipeline: aws-observability/helm-charts charts/amazon-cloudwatch-observability/
templates/linux/_otel-container-insights-config.tpl, chart 6.4.0): ``serving_controller``. A
KServe InferenceService's raw-mode pods belong to the Deployment ``<isvc>-predictor`` and a
RayService's to a RayCluster whose pods are named like a RayJob's; only the labels tell them
apart. Classic's ``pod_gpu_*`` carry no pod labels: there a KServe pod is its Deployment's and a
RayService's pod looks like a RayJob's.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from lambdas.shared.workload_resource import DEPLOYMENT, INFERENCE_SERVICE, RAY_SERVICE

#: k8s.io/apimachinery/pkg/util/rand's alphabet for generated name suffixes.
_RAND: Final = "[bcdfghjklmnpqrstvwxz2456789]"
_SUFFIX: Final = f"{_RAND}{{5}}"

#: (kind, pattern): first match wins, most specific first.
PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    (
        "RayJob",
        re.compile(
            rf"^(?P<job>.+)-raycluster-{_SUFFIX}-(?:head|[a-z0-9-]+-worker|worker-[a-z0-9-]+)"
            rf"-{_SUFFIX}$"
        ),
    ),
    ("JobSet", re.compile(rf"^(?P<job>.+)-[a-z0-9]+-\d+-\d+-{_SUFFIX}$")),
    ("MPIJob", re.compile(rf"^(?P<job>.+)-launcher-{_SUFFIX}$")),
    ("PyTorchJob", re.compile(r"^(?P<job>.+)-master-\d+$")),
    ("PyTorchJob or MPIJob", re.compile(r"^(?P<job>.+)-worker-\d+$")),
    ("Job", re.compile(rf"^(?P<job>.+?)(?:-\d+)?-{_SUFFIX}$")),
    ("StatefulSet", re.compile(r"^(?P<job>.+)-\d+$")),
)


@dataclass(frozen=True)
class JobRef:
    job: str
    #: The workload kind, or ``emitter.training`` where the emitter named the job.
    kind: str
    inferred: bool


def infer_job(pod: str) -> JobRef:
    """The job a pod name implies; a name no controller pattern fits is its own job."""
    for kind, pattern in PATTERNS:
        match = pattern.match(pod)
        if match:
            return JobRef(job=match["job"], kind=kind, inferred=True)
    return JobRef(job=pod, kind="Pod", inferred=True)


#: A CronJob's Job: the CronJob's name and its run's scheduled time in minutes since the epoch,
#: 8 digits (kubernetes/kubernetes pkg/controller/cronjob/utils.go ``getJobName``). The agent
#: reads only the legacy controller's 10-digit suffix (seconds) as a CronJob's and names the
#: CronJob itself (utils.go ``parseCronJobFromJob``); for today's Jobs PodName is the Job's name.
_CRONJOB_JOB: Final = re.compile(r"^(?P<job>.+)-(?P<minutes>\d{8})$")
#: The minutes of 2019-06-08: the minutes controller is the default from Kubernetes 1.21 (2021),
#: so a Job named after a date (``train-20251130``: 2008 in minutes) is not taken for a CronJob's.
_CRONJOB_MINUTES_FROM: Final = 26_000_000
#: What follows the controller's name in its pod's name: an Indexed Job's index, a legacy
#: CronJob Job's 10-digit time, a Deployment's pod-template-hash (``rand.SafeEncodeString`` of a
#: decimal number: 4-9, b, c, d, f), or nothing; then the five generated characters.
_AFTER_CONTROLLER: Final = (
    ("CronJob", re.compile(rf"^\d{{10}}-{_SUFFIX}$")),
    ("Job", re.compile(rf"^\d{{1,5}}-{_SUFFIX}$")),
    (DEPLOYMENT, re.compile(rf"^[4-9bcdf]{{6,10}}-{_SUFFIX}$")),
    ("Job or DaemonSet", re.compile(rf"^{_SUFFIX}$")),
)


def controller_job(pod: str, controller: str) -> JobRef:
    """The job of a pod that Container Insights names by its ``controller`` (its PodName, not
    its own name): a JobSet's child Job or an MPIJob's launcher Job belong to the JobSet or
    MPIJob their pod's name shows; a CronJob's Job to the CronJob; any other controller is the
    job itself."""
    ref = infer_job(pod)
    if ref.kind in ("JobSet", "MPIJob") and pod.startswith(f"{controller}-"):
        return ref
    match = _CRONJOB_JOB.match(controller)
    if match and int(match["minutes"]) >= _CRONJOB_MINUTES_FROM:
        return JobRef(job=match["job"], kind="CronJob", inferred=True)
    rest = pod[len(controller) + 1 :] if pod.startswith(f"{controller}-") else ""
    kind = next((k for k, pattern in _AFTER_CONTROLLER if pattern.match(rest)), "controller")
    return JobRef(job=controller, kind=kind, inferred=True)


#: A KServe InferenceService's pods carry its name (kserve pkg/constants
#: ``InferenceServicePodLabelKey``, research33 §4).
KSERVE_ISVC_LABEL: Final = "serving.kserve.io/inferenceservice"
#: KubeRay marks the pods of a cluster a RayService (or RayJob) made with the custom resource's
#: kind and name (ray-operator ``utils/constant.go``: ``RayOriginatedFromCRDLabelKey``,
#: ``RayOriginatedFromCRNameLabelKey``; research33 §3).
RAY_CRD_LABEL: Final = "ray.io/originated-from-crd"
RAY_CR_NAME_LABEL: Final = "ray.io/originated-from-cr-name"
#: The pod labels ``serving_controller`` reads.
SERVING_POD_LABELS: Final = (KSERVE_ISVC_LABEL, RAY_CRD_LABEL, RAY_CR_NAME_LABEL)


def serving_controller(
    pod_labels: Mapping[str, str], deployment: str | None = None
) -> tuple[str, str] | None:
    """(kind, name) of the serving controller a pod's Kubernetes labels name: a KServe
    InferenceService, a RayService, or else the Deployment its owner attributes name (OTel's
    ``k8s.deployment.name``); None where none does (a training pod, a RayJob's)."""
    isvc = pod_labels.get(KSERVE_ISVC_LABEL)
    if isvc:
        return INFERENCE_SERVICE, isvc
    name = pod_labels.get(RAY_CR_NAME_LABEL)
    if pod_labels.get(RAY_CRD_LABEL) == RAY_SERVICE and name:
        return RAY_SERVICE, name
    if deployment:
        return DEPLOYMENT, deployment
    return None


def job_of(
    pod: str,
    exact: Mapping[str, str],
    controller: str | None = None,
    controller_kind: str | None = None,
) -> JobRef:
    """The job of the pod named ``pod`` (its own name: Container Insights' FullPodName).
    ``exact`` maps pod names to the job the training emitter reported from inside them;
    ``controller`` is Container Insights' PodName for the pod, where known, and
    ``controller_kind`` its kind where the pod's labels named it (``serving_controller``)."""
    if pod in exact:
        return JobRef(job=exact[pod], kind="emitter.training", inferred=False)
    if controller and controller_kind:
        return JobRef(job=controller, kind=controller_kind, inferred=True)
    if controller and controller != pod:
        return controller_job(pod, controller)
    return infer_job(pod)
