"""Every GPU-hour in one class, and every held hour attributed to namespace, pod and job.

Classes: not held by any pod; held and working; held but not working (under the low-power
threshold, or under the SM-activity threshold where the GPU has GPM metrics); lost or faulted.
The classes add up to the GPU-hours the exporter saw, never more. Inputs are plain data so
that each rule is a unit test:

- ``GpuHour``: the exporter's view of one GPU for one hour (mean power against the limit, mean
  SM activity where GPM exists, whether it was lost, and whether it was in use: a process on
  it or memory held).
- ``Hold``: Container Insights' view: pod P held GPU G for this share of the hour (its
  ``pod_gpu_*`` samples over the samples an hour holds), at its own mean power where known.
  A pod that moves between GPUs mid-hour holds each for part of the hour; the rest of each
  GPU-hour is not held. The held part is classed by the pod's own power (the GPU's mean mixes
  in the unheld part); without it, by the GPU's mean.
- Stepping: an hour in which a job's training emitter reported steps is work, whatever its
  GPUs drew: the held part of its pods (those the emitter named, ``exact_jobs``) is held and
  working, never held but not working. What a stepping job wastes (waiting for data, a slow
  checkpoint) is its training findings' to price, on those GPU-hours; counting the hours
  here as well would price them twice. The pod's ``stepping`` hours say how many they are.
- Time slicing: where the pods' shares of one GPU-hour add up to more than the hour, they
  shared it, and the hour is split evenly between the pods that held it, marked
  ``time_sliced``.
- A node with no Container Insights data in an hour (the add-on down, or not yet installed
  there): holding cannot be read, so the exporter's in-use signal stands in for it and the
  node's in-use GPU-hours are held by an unknown pod, marked ``no_container_insights``.
- A hold that could not be placed on a node, or on a GPU-hour the exporter did not see, adds
  no GPU-hour: its time is reported as ``unattributed``. An in-use GPU-hour of the same
  device with no placed hold is held by an unknown pod (the unplaced one, most likely), but
  the unplaced holds of a device explain at most their own hours: the GPU-hours of nodes with
  Container Insights data are claimed first (the pod was seen there), then the others in node
  order; what is left of them is classed as if no hold were unplaced.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from lambdas.shared.thresholds import IDLE_SM_ACTIVE_PERCENT, LOW_POWER_PERCENT
from lambdas.training_analyzer.gpu_hours.workloads import JobRef, job_of

HOUR: Final = 3600
#: Shares are sample counts over expected samples: allow for a sample more or less.
_SLACK: Final = 1.05
UNKNOWN_NAMESPACE: Final = "(unknown)"
UNKNOWN_POD: Final = "(no Container Insights data)"
#: The node of a hold that could not be placed on one (aws.resolve_nodes).
UNPLACED_NODE: Final = "(unknown node)"
UNPLACED_POD: Final = "(pod not placed on a node)"


class HourClass(StrEnum):
    NOT_HELD = "not_held"
    WORKING = "held_working"
    NOT_WORKING = "held_not_working"
    FAULTED = "lost_or_faulted"


@dataclass(frozen=True)
class GpuKey:
    node: str
    gpu: str


@dataclass(frozen=True, kw_only=True)
class GpuHour:
    gpu: GpuKey
    hour: int
    #: Mean power draw as a percent of the enforced limit; None without exporter data.
    power_utilization: float | None = None
    #: Mean SM activity (percent) where the GPU has GPM metrics.
    sm_active: float | None = None
    #: gpu_healthy fell to 0 in the hour (the GPU was lost).
    faulted: bool = False
    #: The exporter saw the GPU in use (a process, or memory held) in the hour.
    in_use: bool = False


@dataclass(frozen=True, kw_only=True)
class Hold:
    gpu: GpuKey
    hour: int
    namespace: str
    #: The pod's own name (Container Insights' FullPodName): two pods of one Job are two pods.
    pod: str
    #: Fraction of the hour the pod held the GPU (0 to 1).
    share: float
    #: The pod's own mean power on the GPU while it held it, percent of the GPU's limit.
    power_utilization: float | None = None
    #: Container Insights' PodName for the pod: its Job's, Deployment's, DaemonSet's name, or
    #: its own (workloads.job_of).
    controller: str | None = None
    #: The controller's kind where the pod's labels named it (workloads.serving_controller:
    #: an InferenceService, a RayService, a Deployment), else None (inferred from names).
    controller_kind: str | None = None


@dataclass(frozen=True)
class Thresholds:
    #: The low-power alarm's threshold (the low_power_percent setting; the training
    #: analyzer's LOW_POWER_PERCENT variable).
    low_power_percent: float = LOW_POWER_PERCENT
    #: Under this mean SM activity a held GPU does no work, whatever it draws.
    sm_active_percent: float = IDLE_SM_ACTIVE_PERCENT


@dataclass
class PodHours:
    """One pod's hours on the GPUs it held, by class."""

    namespace: str
    pod: str
    job: JobRef
    hours: dict[HourClass, float] = field(default_factory=lambda: defaultdict(float))
    gpus: set[GpuKey] = field(default_factory=set)
    #: Hours (epoch seconds) in which the pod held a GPU without work.
    idle_hours: set[int] = field(default_factory=set)
    #: Held GPU-hours (of any class but lost) in hours its job's emitter reported steps.
    stepping: float = 0.0
    #: Held GPU-hours (of any class) by hour (epoch seconds): what a run of its job that
    #: failed held until it failed, where no emitter reported its steps (failure_placement).
    by_hour: dict[int, float] = field(default_factory=lambda: defaultdict(float))
    time_sliced: bool = False
    no_container_insights: bool = False

    @property
    def held(self) -> float:
        return sum(self.hours.values())


@dataclass
class Attribution:
    #: GPU-hours of the fleet by class.
    classes: dict[HourClass, float] = field(default_factory=lambda: defaultdict(float))
    pods: dict[tuple[str, str], PodHours] = field(default_factory=dict)
    #: Held GPU-hours (in ``classes``) with no power or SM reading: counted as working.
    unmeasured: float = 0.0
    #: Held GPU-hours under the thresholds in which their job's emitter reported steps:
    #: counted as working (their waiting is the training findings' to price).
    stepping_under_threshold: float = 0.0
    #: GPU-hours whose holding came from the exporter, for want of Container Insights data.
    no_container_insights: float = 0.0
    #: Hours of holds placed on no GPU-hour the exporter saw (no node could be told, or the
    #: exporter did not report the GPU): not in ``classes``, which count real GPU-hours only.
    unattributed: float = 0.0
    #: GPU-hours no pod held (``HourClass.NOT_HELD``) by node: the idle capacity's evidence.
    not_held_by_node: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    #: GPU-hours pods held (any class) by node, and the GPU-hours the exporter saw by node:
    #: the GPU-hour funnel's allocated per node and its paid stage's stand-in
    #: (lambdas/training_analyzer/goodput/).
    held_by_node: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    seen_by_node: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    def namespaces(self) -> dict[str, dict[HourClass, float]]:
        totals: dict[str, dict[HourClass, float]] = defaultdict(lambda: defaultdict(float))
        for pod in self.pods.values():
            for cls, hours in pod.hours.items():
                totals[pod.namespace][cls] += hours
        return totals

    def jobs(self) -> dict[tuple[str, str], list[PodHours]]:
        """Pods by (namespace, job)."""
        found: dict[tuple[str, str], list[PodHours]] = defaultdict(list)
        for pod in self.pods.values():
            found[(pod.namespace, pod.job.job)].append(pod)
        return found


def classify(hour: GpuHour, thresholds: Thresholds) -> HourClass:
    """The class of a GPU-hour's held part."""
    if hour.faulted:
        return HourClass.FAULTED
    if hour.power_utilization is not None and hour.power_utilization < (
        thresholds.low_power_percent
    ):
        return HourClass.NOT_WORKING
    if hour.sm_active is not None and hour.sm_active < thresholds.sm_active_percent:
        return HourClass.NOT_WORKING
    return HourClass.WORKING


def _held_class(hour: GpuHour, hold: Hold, thresholds: Thresholds) -> HourClass:
    """The class of one pod's part of a GPU-hour: by its own power where known. The GPU's SM
    mean stands only where the pod held the whole hour (otherwise the unheld part dilutes it)."""
    if hold.power_utilization is None:
        return classify(hour, thresholds)
    whole = hold.share * _SLACK >= 1.0
    own = GpuHour(
        gpu=hour.gpu,
        hour=hour.hour,
        power_utilization=hold.power_utilization,
        sm_active=hour.sm_active if whole else None,
        faulted=hour.faulted,
    )
    return classify(own, thresholds)


def _split(holds: list[Hold]) -> tuple[list[tuple[Hold, float]], bool]:
    """Each pod's part of one GPU-hour, and whether they time-sliced it: shares that add up
    to more than the hour were concurrent, so the hour is split evenly between the pods."""
    total = sum(min(1.0, h.share) for h in holds)
    if not total:
        return [], False
    if len(holds) > 1 and total > _SLACK:
        return [(h, 1.0 / len(holds)) for h in holds], True
    held = min(1.0, total)
    return [(h, held * min(1.0, h.share) / total) for h in holds], False


def _unheld(cls: HourClass) -> HourClass:
    """A GPU-hour (or part) no pod held: lost or faulted still counts as such."""
    return HourClass.FAULTED if cls is HourClass.FAULTED else HourClass.NOT_HELD


def _pod(
    attribution: Attribution,
    namespace: str,
    pod: str,
    exact: Mapping[str, str],
    controller: str | None = None,
    controller_kind: str | None = None,
) -> PodHours:
    key = (namespace, pod)
    if key not in attribution.pods:
        job = job_of(pod, exact, controller, controller_kind)
        attribution.pods[key] = PodHours(namespace=namespace, pod=pod, job=job)
    return attribution.pods[key]


def attribute(
    gpu_hours: Iterable[GpuHour],
    holds: Iterable[Hold],
    *,
    exact_jobs: Mapping[str, str] | None = None,
    thresholds: Thresholds = Thresholds(),
    ci_node_hours: Iterable[tuple[str, int]] | None = None,
    stepping: Mapping[str, Iterable[int]] | None = None,
) -> Attribution:
    """Every GPU-hour the exporter saw, classified; held parts attributed to their pods.

    ``exact_jobs`` maps pod names to the job the training emitter reported in them.
    ``ci_node_hours`` are the (node, hour) in which Container Insights reported the node's GPUs
    (``node_gpu_*``); a node also has data in the hours a pod's hold is placed on it.
    ``stepping`` maps a job to the hours (epoch seconds) in which its emitter reported steps."""
    exact = exact_jobs or {}
    stepped = {job: frozenset(hours) for job, hours in (stepping or {}).items()}
    result = Attribution()
    by_gpu_hour, unplaced = _placed(holds)
    result.unattributed += sum(unplaced.values())
    # A node where a pod's hold is placed had Container Insights data that hour.
    ci = {(gpu.node, hour) for gpu, hour in by_gpu_hour} | set(ci_node_hours or ())
    seen: set[tuple[GpuKey, int]] = set()
    claimable: list[tuple[GpuHour, HourClass]] = []
    for hour in gpu_hours:
        seen.add((hour.gpu, hour.hour))
        result.seen_by_node[hour.gpu.node] += 1.0
        cls = classify(hour, thresholds)
        pods = by_gpu_hour.get((hour.gpu, hour.hour), [])
        if not pods:
            if hour.in_use and (hour.gpu.gpu, hour.hour) in unplaced:
                claimable.append((hour, cls))
            else:
                _unknown_holder(result, hour, cls, 1.0, exact, ci)
            continue
        measured = hour.power_utilization is not None or hour.sm_active is not None
        portions, sliced = _split(pods)
        for hold, portion in portions:
            held_cls = _held_class(hour, hold, thresholds)
            pod = _account(
                result,
                hold.namespace,
                hold.pod,
                hour,
                portion,
                held_cls,
                exact,
                hold.controller,
                stepped,
                hold.controller_kind,
            )
            pod.time_sliced |= sliced
            if not measured and hold.power_utilization is None:
                result.unmeasured += portion
        rest = 1.0 - sum(portion for _, portion in portions)
        if rest > 1e-9:
            _add_unheld(result, hour, cls, rest)
    _claim_unplaced(result, claimable, unplaced, exact, ci)
    for key, pods in by_gpu_hour.items():
        if key not in seen:
            result.unattributed += sum(p for _, p in _split(pods)[0])
    return result


def _placed(
    holds: Iterable[Hold],
) -> tuple[dict[tuple[GpuKey, int], list[Hold]], dict[tuple[str, int], float]]:
    """Holds by GPU-hour, and the hours of unplaced holds by (device index, hour): what
    they may explain of in-use GPU-hours no placed hold covers."""
    by_gpu_hour: dict[tuple[GpuKey, int], list[Hold]] = defaultdict(list)
    unplaced: dict[tuple[str, int], float] = defaultdict(float)
    for hold in holds:
        if hold.share <= 0:
            continue
        if hold.gpu.node == UNPLACED_NODE:
            unplaced[(hold.gpu.gpu, hold.hour)] += min(1.0, hold.share)
        else:
            by_gpu_hour[(hold.gpu, hold.hour)].append(hold)
    return by_gpu_hour, unplaced


def _claim_unplaced(
    result: Attribution,
    claimable: list[tuple[GpuHour, HourClass]],
    unplaced: dict[tuple[str, int], float],
    exact: Mapping[str, str],
    ci: set[tuple[str, int]],
) -> None:
    """In-use GPU-hours with no placed hold, of a device and hour with unplaced holds: each
    claims what is left of those holds' hours, nodes with Container Insights data first."""
    left = dict(unplaced)
    ordered = sorted(
        claimable,
        key=lambda item: ((item[0].gpu.node, item[0].hour) not in ci, item[0].gpu.node),
    )
    for hour, cls in ordered:
        key = (hour.gpu.gpu, hour.hour)
        claim = min(1.0, left[key])
        left[key] -= claim
        if claim > 1e-9:
            _account(result, UNKNOWN_NAMESPACE, UNPLACED_POD, hour, claim, cls, exact)
        if 1.0 - claim > 1e-9:
            _unknown_holder(result, hour, cls, 1.0 - claim, exact, ci)


def _unknown_holder(
    result: Attribution,
    hour: GpuHour,
    cls: HourClass,
    portion: float,
    exact: Mapping[str, str],
    ci: set[tuple[str, int]],
) -> None:
    """A GPU-hour (or the part of it) no hold covers: held by an unknown pod where it was in
    use and its node had no Container Insights data; otherwise not held."""
    if hour.in_use and (hour.gpu.node, hour.hour) not in ci:
        owner = _account(result, UNKNOWN_NAMESPACE, UNKNOWN_POD, hour, portion, cls, exact)
        owner.no_container_insights = True
        result.no_container_insights += portion
    else:
        _add_unheld(result, hour, cls, portion)


def _add_unheld(result: Attribution, hour: GpuHour, cls: HourClass, portion: float) -> None:
    """A GPU-hour's part no pod held, in its class and, when not held, on its node."""
    unheld = _unheld(cls)
    result.classes[unheld] += portion
    if unheld is HourClass.NOT_HELD:
        result.not_held_by_node[hour.gpu.node] += portion


def _account(
    result: Attribution,
    namespace: str,
    pod_name: str,
    hour: GpuHour,
    portion: float,
    cls: HourClass,
    exact: Mapping[str, str],
    controller: str | None = None,
    stepping: Mapping[str, frozenset[int]] | None = None,
    controller_kind: str | None = None,
) -> PodHours:
    pod = _pod(result, namespace, pod_name, exact, controller, controller_kind)
    if not pod.job.inferred and hour.hour in (stepping or {}).get(pod.job.job, ()):
        if cls is not HourClass.FAULTED:
            pod.stepping += portion
        if cls is HourClass.NOT_WORKING:
            cls = HourClass.WORKING
            result.stepping_under_threshold += portion
    pod.hours[cls] += portion
    pod.by_hour[hour.hour] += portion
    result.held_by_node[hour.gpu.node] += portion
    pod.gpus.add(hour.gpu)
    if cls is HourClass.NOT_WORKING:
        pod.idle_hours.add(hour.hour)
    result.classes[cls] += portion
    return pod
