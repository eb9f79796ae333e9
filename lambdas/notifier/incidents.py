"""Incidents from what reaches the notifier: grouped XIDs from the logs, and CloudWatch's alarm
and contributor state-change events from EventBridge. Pure logic, no AWS.

EventBridge delivers two kinds of events for this app's alarms
(https://docs.aws.amazon.com/eventbridge/latest/ref/events-ref-cloudwatch.html and
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html):

- ``CloudWatch Alarm State Change``: the alarm as a whole (``detail.alarmName``,
  ``detail.state`` with ``value``, ``reason``, ``reasonData``, ``timestamp``;
  ``detail.configuration.description``).
- ``CloudWatch Alarm Contributor State Change``: one time series (contributor) of a multi time
  series Metrics Insights alarm, with ``detail.alarmContributor`` (``id`` and ``attributes``,
  the series' GROUP BY values: cluster, node and GPU here) and its own ``state``. A contributor
  is only ever in ALARM or OK
  (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Acting_Alarm_Changes.html).
  A PromQL alarm's contributors come the same way: "Each returned time series is a
  contributor, identified by its unique set of attributes" (alarm-promql.html), and a
  contributor's attributes are "A map of attributes that describe the contributor, such as
  metric dimensions and other identifying characteristics" (API_AlarmContributor.html): the
  series' labels, DCGM's node, GPU, namespace and pod here, or a job alarm's cluster,
  namespace and ``job_name``.

One incident is one GPU going into ALARM. So a contributor's ALARM is an incident; the alarm's
own ALARM is one only where it has no contributors (a single-series alarm), else the same GPU
would be paged twice. Returns to OK, and XID alarms (the XID log path pages per GPU with the
code and count), are skipped with the reason.
"""

import json
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from gpu_insights_agent.contract.metrics import (
    ALL_GPUS,
    DIM_CLUSTER,
    DIM_FULL_POD_NAME,
    DIM_GPU_INDEX,
    DIM_JOB,
    DIM_NODE,
    OTLP_JOB,
)
from gpu_insights_agent.contract.resource_names import CAP_ALARM_SUFFIX, alarm_name
from gpu_insights_agent.contract.xid import XidSeverity
from lambdas.notifier.jobs import few
from lambdas.notifier.kernel_log import KernelCheck
from lambdas.notifier.links import alarm_url, gpu_dashboard_url
from lambdas.notifier.messages import XidGroup
from lambdas.notifier.nodes import node_facts, node_place
from lambdas.notifier.notification import Incident, Severity
from lambdas.notifier.serving import serving_facts, serving_place
from lambdas.shared.dcgm import CLOUDWATCH as DCGM_LABELS
from lambdas.shared.events import EventError
from lambdas.shared.kube_state import GPUS_REQUESTED

ALARM_STATE_CHANGE: Final = "CloudWatch Alarm State Change"
CONTRIBUTOR_STATE_CHANGE: Final = "CloudWatch Alarm Contributor State Change"
#: Alarm kinds whose incidents the XID log path reports (per GPU, with code and count).
REPORTED_FROM_LOGS: Final = ("gpu-xid",)
log = logging.getLogger(__name__)
_SHARD = re.compile(r"-shard-\d+$")
#: The two state-reason sentences CloudWatch writes on a threshold crossing. An alarm's:
#: "Threshold Crossed: 12 out of the last 12 datapoints [12.1 (02/10/19 16:59:00), ...] was
#: less than the threshold (30.0) (minimum 12 datapoints for OK -> ALARM transition)."
_REASON = re.compile(
    r"(?P<hits>\d+) out of the last (?P<of>\d+) datapoints? \[(?P<points>[^\]]*)\] was "
    r"(?P<comparison>.+?) the threshold \((?P<threshold>[^)]+)\)"
)
#: A contributor's (the User Guide's "Alarm Contributor Example"): "Threshold Crossed: 1
#: datapoint was less than the threshold (1.0). The most recent datapoint which crossed the
#: threshold: [0.0 (01/12/25 13:34:00)]."
_CONTRIBUTOR_REASON = re.compile(
    r"(?P<hits>\d+) datapoints? (?:was|were) (?P<comparison>.+?) the threshold "
    r"\((?P<threshold>[^)]+)\)\. The most recent datapoint which crossed the threshold: "
    r"\[(?P<points>[^\]]*)\]"
)
_POINT = re.compile(r"(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?) \(")


class AlarmEventError(EventError):
    """An EventBridge event the notifier cannot read; the message names the field."""


@dataclass(frozen=True)
class Deployment:
    """What the function knows of its deployment (from its environment)."""

    cluster: str
    region: str
    gpu_dashboard: str
    #: Alarm kind (the key in its name) -> (severity, title), from the alarm catalog.
    alarm_kinds: dict[str, tuple[Severity, str]]
    #: The kinds deployed as PromQL alarms: every series is a contributor with its own event.
    promql_kinds: frozenset[str] = frozenset()

    @property
    def alarm_prefix(self) -> str:
        return alarm_name(self.cluster, "")

    def kind_of(self, alarm_name: str) -> str:
        """``gpu-insights-<cluster>-<kind>[-shard-N]`` -> ``<kind>``."""
        rest = alarm_name.removeprefix(self.alarm_prefix)
        return _SHARD.sub("", rest)

    def dashboard_for(self, node: str) -> str | None:
        return gpu_dashboard_url(self.region, self.gpu_dashboard, node) if node else None


def _utc(ms: int) -> str:
    return f"{datetime.fromtimestamp(ms / 1000, UTC):%Y-%m-%d %H:%M:%S} UTC"


def last_seen(pods: tuple[str, ...], seen_ms: int, where: str = "GPU") -> str:
    """The Pods row where the GPU (or node) could not say who was on it at the alarm: the
    exporter's last reading that named them, dated."""
    return f"{few(pods, 'pods')} (last seen on this {where} at {_utc(seen_ms)})"


def from_xid_group(
    group: XidGroup,
    deployment: Deployment,
    kernel: KernelCheck | None = None,
    *,
    require_kernel: bool = False,
) -> Incident:
    """The XID group's incident; ``kernel`` what the node's kernel log says of an exporter
    XID (lambdas/notifier/kernel_log.py). With ``require_kernel``, a fatal XID the kernel log
    does not confirm still pages, as a warning that says so: never dropped, since the kernel
    line can trail the exporter's document, but not a page in the night on a document any pod
    could have written."""
    notice = group.first
    fatal = notice.severity is XidSeverity.FATAL
    unconfirmed = fatal and require_kernel and (kernel is None or kernel.confirmed is not True)
    first, last = _utc(notice.time_ms), _utc(group.last_ms)
    if group.count == 1:
        repeats = f"once, at {first}"
    elif first == last:
        repeats = f"{group.count} times at {first}"
    else:
        repeats = f"{group.count} times between {first} and {last}"
    if fatal:
        action = (
            "Cordon and drain the node, then reset the GPU or replace the node. Jobs on this "
            "GPU are at risk; restart them from their last checkpoint elsewhere."
        )
    else:
        action = (
            "Usually an application fault (a bad memory access, a killed context): read the "
            "job's logs. Worth a closer look when it repeats across jobs on this GPU."
        )
    what = f"GPU {notice.gpu} on {notice.node} reported XID {notice.code}: {notice.meaning}."
    title = f"XID {notice.code} on {notice.node} GPU {notice.gpu}"
    if unconfirmed:
        title += " (unconfirmed by the kernel log)"
        what += (
            " Unconfirmed by the kernel log, so sent as a warning: this deployment pages a "
            "fatal XID only when the node's kernel log confirms it."
        )
        action = (
            "Check the node's kernel log (dmesg) for NVRM: Xid before acting: a document the "
            f"kernel does not confirm may not come from the exporter. {action}"
        )
    facts = [
        ("XID", f"{notice.code} ({notice.severity})"),
        ("Seen", repeats),
        ("Source", notice.source),
    ]
    if kernel is not None:
        facts.append(("Kernel log", kernel.text))
    node_known = not notice.node.startswith("unknown")
    pods = group.pods
    if pods and group.pods_seen_ms is not None:
        # The GPU could not say who was on it at the XID: the exporter's last reading, dated.
        pods = (last_seen(pods, group.pods_seen_ms),)
    return Incident(
        key=group.key,
        near=group.near,
        severity="critical" if fatal and not unconfirmed else "warning",
        kind="gpu-xid-fatal" if fatal else "gpu-xid",
        title=title,
        what=what,
        cluster=notice.cluster,
        node=notice.node,
        gpu=notice.gpu,
        pods=pods,
        action=action,
        dashboard_url=deployment.dashboard_for(notice.node) if node_known else None,
        facts=tuple(facts),
    )


@dataclass(frozen=True)
class Skipped:
    """An event that is no incident, and why."""

    reason: str


def _number(value: Any) -> str:
    """A number as the page shows it, or the named error for one that is none (``(abc)``) or
    that no float holds (a 400-digit integer: OverflowError)."""
    try:
        return f"{float(value):g}"
    except (ValueError, TypeError, OverflowError) as err:
        raise AlarmEventError(
            f"detail.state.reason's threshold {str(value)[:40]!r} is not a number"
        ) from err


#: Digits of a count the notifier reads from a state reason (datapoints, series): twelve, far
#: more than any alarm evaluates, and far below the 4,300 digits past which Python reads no
#: integer from text (``sys.get_int_max_str_digits``: ValueError).
_MAX_COUNT_DIGITS: Final = 12


def _count(text: str) -> int:
    """A count from a state reason, or the named error for one longer than
    ``_MAX_COUNT_DIGITS``."""
    if len(text) > _MAX_COUNT_DIGITS:
        raise AlarmEventError(f"detail.state.reason counts {text[:20]}... ({len(text)} digits)")
    return int(text)


@dataclass(frozen=True)
class Crossing:
    """What a state reason says of the crossing: how many datapoints breached (of how many,
    where the sentence says), how, the threshold, and the values it lists (newest first)."""

    hits: int
    of: int | None
    comparison: str
    threshold: str
    values: tuple[str, ...]

    def sentence(self) -> str:
        if self.of is not None:
            return f"{self.hits} of the last {self.of} datapoints were {self.comparison}"
        return f"{self.hits} datapoint{'s were' if self.hits != 1 else ' was'} {self.comparison}"


def read_reason(reason: str) -> Crossing | None:
    """The crossing an alarm's or a contributor's state reason describes, or None."""
    match = _REASON.search(reason)
    contributor = match is None and _CONTRIBUTOR_REASON.search(reason)
    found = match or contributor
    if not found:
        return None
    return Crossing(
        hits=_count(found["hits"]),
        of=_count(match["of"]) if match else None,
        comparison=found["comparison"],
        threshold=_number(found["threshold"]),
        values=tuple(_number(v) for v in _POINT.findall(found["points"])),
    )


def _threshold_and_observed(
    state: dict[str, Any], crossing: Crossing | None
) -> tuple[str | None, str | None]:
    """From ``reasonData`` (JSON: ``threshold``, ``recentDatapoints``) where CloudWatch gives
    it (alarms, not contributors), else from the reason sentence."""
    threshold = crossing.threshold if crossing else None
    values = list(crossing.values[:6]) if crossing else []
    raw = state.get("reasonData")
    if raw:
        data = _reason_data(raw)
        try:  # an alarm of another kind may word it otherwise: the sentence stands then
            points = [float(p) for p in data.get("recentDatapoints", [])]
            threshold = f"{float(data['threshold']):g}"
        except (ValueError, TypeError, KeyError):
            pass
        except OverflowError as err:  # an integer no float holds: no alarm's datapoint
            raise AlarmEventError("detail.state.reasonData holds a number no float holds") from err
        else:
            values = [f"{p:g}" for p in points[-6:]]
    if not values:
        return threshold, None
    observed = ", ".join(values)
    if crossing is not None:
        latest = "" if crossing.of is not None else "the most recent breach; "
        observed += f" ({latest}{crossing.sentence()} the threshold)"
    return threshold, observed


def _reason_data(raw: Any) -> dict[str, Any]:
    """``reasonData``: "An explanation for the alarm state change, in JSON format"
    (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricAlarm.html,
    StateReasonData): a string holding a JSON object."""
    try:
        data = json.loads(raw) if isinstance(raw, str) else None
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise AlarmEventError("detail.state.reasonData is not a string holding a JSON object")
    return data


#: A multi time series alarm's state reason once more contributors are in ALARM than it pages:
#: "If there are more than 100 contributors in ALARM (for example 105), the StateReason will be
#: "100+ time series evaluated to ALARM"" ("Limits",
#: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-limits.html). The
#: page quotes the sentence, not the whole reason, so it is found wherever the reason holds it
#: (after a "Threshold Crossed: " as the other reasons begin, say), never only at its start.
_AT_CONTRIBUTOR_CAP = re.compile(r"(?<![\d.])(?P<count>\d+)\+ time series evaluated to ALARM")


def contributor_cap(reason: str) -> str | None:
    """``"100+"`` where a state reason says the contributor cap was reached, else None."""
    match = _AT_CONTRIBUTOR_CAP.search(reason)
    return f"{match['count']}+" if match else None


def _series_pods(attributes: dict[str, str]) -> tuple[str, ...]:
    """Pod identity in Container Insights' per-pod GPU series (the alarms without the
    exporter), or DCGM's pod labels in OTel mode."""
    if DIM_FULL_POD_NAME in attributes:
        return (attributes[DIM_FULL_POD_NAME],)
    if DCGM_LABELS.pod in attributes:
        namespace = attributes.get(DCGM_LABELS.namespace)
        pod = attributes[DCGM_LABELS.pod]
        return (f"{namespace}/{pod}" if namespace else pod,)
    return ()


def _pending_pod(
    attributes: dict[str, str], node: str, gpu: str
) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    """A pending GPU pod's contributor (cdk/alarms/cluster.py) is on no node and holds no GPU;
    its ``gpus_requested`` label (lambdas/shared/kube_state.py) is what it asked for, the page's
    fact. Any other series keeps its node and GPU, with no fact."""
    asked = attributes.get(GPUS_REQUESTED)
    if not asked:
        return node, gpu, ()
    return (
        "none: the pod is not scheduled",
        f"none allocated ({asked} requested)",
        (("GPUs requested", asked),),
    )


def _place(
    attributes: dict[str, str], pods: tuple[str, ...]
) -> tuple[str, str, str, tuple[tuple[str, str], ...]]:
    """The title's "where", the node, the GPU row and a pending pod's facts, from the
    contributor's attributes."""
    # A Metrics Insights contributor's GROUP BY dimensions, or a PromQL contributor's series
    # labels: DCGM's, which name the node, GPU and pod (lambdas/shared/dcgm.py).
    node = attributes.get(DIM_NODE) or attributes.get(DCGM_LABELS.node, "")
    gpu = attributes.get(DIM_GPU_INDEX) or attributes.get(DCGM_LABELS.gpu, "")
    where = f" on {node} GPU {gpu}" if node and gpu else (f" on {pods[0]}" if pods else "")
    if node and gpu == ALL_GPUS:  # the silence check's series for a node that sent nothing
        where = f" on {node}, all its GPUs"
    if serving_facts(attributes):  # a serving alarm's model (cdk/alarms/serving_promql.py)
        where, node, gpu = serving_place(attributes, pods, node, gpu)
    elif node and not gpu:  # a node-level series: OTel mode's gpu-silent names the node only
        where = f" on {node}"
        gpu = "not named (some of the node's GPUs)"
    where, gpu = node_place(attributes, pods, where, gpu)  # a GPU node's or GPU pod's
    node, gpu, pending = _pending_pod(attributes, node, gpu)
    return where, node, gpu, pending


def from_alarm_event(event: dict[str, Any], deployment: Deployment) -> Incident | Skipped:
    detail_type = event.get("detail-type")
    if detail_type not in (ALARM_STATE_CHANGE, CONTRIBUTOR_STATE_CHANGE):
        raise AlarmEventError(f"detail-type {detail_type!r} is not an alarm state change")
    detail = event.get("detail")
    if not isinstance(detail, dict) or not isinstance(detail.get("state"), dict):
        raise AlarmEventError("the event has no detail.state")
    configuration = detail.get("configuration", {})
    metrics = configuration.get("metrics") if isinstance(configuration, dict) else None
    if not isinstance(configuration, dict) or not (
        metrics is None or (isinstance(metrics, list) and all(isinstance(m, dict) for m in metrics))
    ):
        raise AlarmEventError("detail.configuration is not an object with a list of metrics")
    name = str(detail.get("alarmName", ""))
    state: dict[str, Any] = detail["state"]
    kind = deployment.kind_of(name)
    skip = _not_paged(str(detail_type), detail, name, kind, deployment)
    if skip:
        return Skipped(skip)
    contributor = detail.get("alarmContributor")
    attributes: dict[str, str] = {}
    contributor_id = ""
    if contributor is not None:
        if not isinstance(contributor, dict) or not isinstance(contributor.get("attributes"), dict):
            raise AlarmEventError("detail.alarmContributor has no attributes")
        attributes = {str(k): str(v) for k, v in contributor["attributes"].items()}
        contributor_id = str(contributor.get("id", ""))
    severity, title = deployment.alarm_kinds[kind]
    pods = _series_pods(attributes)
    where, node, gpu, pending = _place(attributes, pods)
    reason = str(state.get("reason", ""))
    crossing = read_reason(reason)
    threshold, observed = _threshold_and_observed(state, crossing)
    what = (
        f"{title}{where}: {crossing.sentence()} the threshold ({crossing.threshold})."
        if crossing
        else reason or f"{name} is in ALARM."
    )
    cap = contributor_cap(reason) if contributor is None else None
    if kind.endswith(CAP_ALARM_SUFFIX) and crossing and crossing.values:
        counted = kind.removesuffix(CAP_ALARM_SUFFIX)
        what = (
            f"{crossing.values[0]} series breach {counted} at once ({crossing.sentence()} "
            f"the threshold ({crossing.threshold})): past CloudWatch's cap on contributors in "
            f"ALARM, {counted} pages no more of them one by one."
        )
    elif cap:
        where = f": {cap} in ALARM"
        what = (
            f"{title}: {cap} time series are in ALARM. An alarm pages at most 100 of its "
            "contributors, so those past the first 100 get no page of their own: open the "
            "alarm for the full list, and the fleet-level count alarm for how many breach."
        )
    description = str(configuration.get("description", "")).strip()
    resources = event.get("resources") or []
    if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
        raise AlarmEventError("resources is not a list of ARNs")
    arn = next(iter(resources), "")
    return Incident(
        key=f"alarm/{name}/{contributor_id}/{state.get('timestamp', event.get('time', ''))}",
        severity=severity,
        kind=kind,
        title=f"{title}{where}",
        what=what,
        cluster=attributes.get(DIM_CLUSTER)
        or attributes.get(DCGM_LABELS.cluster)
        or deployment.cluster,
        node=node or "not named (a cluster-wide series)",
        gpu=gpu or "not named (a cluster-wide series)",
        pods=pods,
        # A Metrics Insights job contributor's JobName, or a PromQL one's job_name label
        # (cdk/alarms/jobs_promql.py: by cluster, namespace and job).
        job=attributes.get(DIM_JOB) or attributes.get(OTLP_JOB),
        namespace=attributes.get(DCGM_LABELS.namespace) if OTLP_JOB in attributes else None,
        threshold=threshold,
        observed=observed,
        when=str(state.get("timestamp", event.get("time", ""))) or None,
        action=description or "Open the alarm and the GPU dashboard.",
        alarm_url=alarm_url(deployment.region, name),
        dashboard_url=deployment.dashboard_for(node) if not pending else None,
        resources=(arn,) if arn else (),
        facts=serving_facts(attributes) + pending + node_facts(attributes),
    )


def _not_paged(
    detail_type: str, detail: dict[str, Any], name: str, kind: str, deployment: Deployment
) -> str | None:
    """Why this alarm event is no page of this deployment, or None."""
    state: dict[str, Any] = detail["state"]
    if not name.startswith(deployment.alarm_prefix):
        return f"{name!r} is not an alarm of cluster {deployment.cluster}"
    if state.get("value") != "ALARM":
        return f"{name} is {state.get('value')}: a return to normal, not an incident"
    if kind.startswith(REPORTED_FROM_LOGS):
        return f"{name}: XIDs are reported per GPU from the exporter's log"
    if kind not in deployment.alarm_kinds:
        # The rule matches by prefix, so cluster train-eu's alarms reach cluster train's
        # notifier (gpu-insights-train-eu-gpu-lost): only this deployment's own names page.
        return f"{name} is no alarm of this deployment ({kind!r} is not its kind)"
    if (
        detail_type == ALARM_STATE_CHANGE
        and (kind in deployment.promql_kinds or _has_contributors(detail))
        and contributor_cap(str(state.get("reason", ""))) is None
    ):
        return f"{name}: each GPU in ALARM comes as its own contributor event"
    muted = _muted(detail, state)
    return f"{name}: {muted}" if muted else None


def _muted(detail: dict[str, Any], state: dict[str, Any]) -> str | None:
    """An alarm mute rule silences an alarm's actions while the alarm goes on evaluating
    (AWS::CloudWatch::AlarmMuteRule); its events then carry ``muteDetail`` (the User Guide's
    "Alarm events and EventBridge" examples). The notifier is this alarm's action, so a change
    inside the mute window is not paged. A window it cannot read (a start or end missing or
    not a time) is no mute: the page goes out, with a warning naming the field, since a page
    dropped on a guess is worse than one sent during a window."""
    mute = detail.get("muteDetail")
    if not isinstance(mute, dict):
        return None
    rule = str(mute.get("mutedByArn", "a mute rule"))
    bounds: list[datetime] = []
    for field in ("muteWindowStart", "muteWindowEnd"):
        raw = mute.get(field)
        try:
            bounds.append(_event_time(raw if isinstance(raw, str) else ""))
        except ValueError:
            log.warning(
                "detail.muteDetail.%s %s of %s is %s: the window is unreadable, so the alarm "
                "is paged as not muted",
                field,
                repr(str(raw)[:40]),
                rule,
                "missing" if raw is None else "not a time",
            )
            return None
    start, end = bounds
    changed = _event_time_or_error(state.get("timestamp"), "detail.state.timestamp")
    if start.tzinfo is None or end.tzinfo is None:
        raise AlarmEventError("detail.muteDetail's window has a time without a time zone")
    if start <= changed <= end:
        return f"muted by {rule} until {end:%Y-%m-%d %H:%M} UTC"
    return None


def _event_time_or_error(raw: Any, what: str) -> datetime:
    """An event time with its zone, or the named error."""
    try:
        parsed = _event_time(str(raw)) if isinstance(raw, str) else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise AlarmEventError(f"{what} {str(raw)[:40]!r} is not a time with a time zone")
    return parsed


def _event_time(text: str) -> datetime:
    """CloudWatch's event times: 2026-01-01T10:00:00.000+0000 (or Z, or +00:00)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00").replace("+0000", "+00:00"))


def _has_contributors(detail: dict[str, Any]) -> bool:
    """A Metrics Insights query with GROUP BY makes one contributor per group, where the alarm
    watches it: the query whose ``returnData`` is true (MetricDataQuery's ReturnData, true
    when left out). A fleet count alarm reads a GROUP BY query and watches the count, one
    series: its own event is its page."""
    metrics = detail.get("configuration", {}).get("metrics", [])
    return any(
        m.get("returnData", True) is not False
        and "GROUP BY" in str(m.get("expression", "")).upper()
        for m in metrics
    )
