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
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

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


def job_of(pod: str, exact: Mapping[str, str]) -> JobRef:
    """``exact`` maps pod names to the job the training emitter reported from inside them."""
    if pod in exact:
        return JobRef(job=exact[pod], kind="emitter.training", inferred=False)
    return infer_job(pod)
