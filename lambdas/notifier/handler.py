"""Lambda entry point of the notifier. Two sources, one formatter:

- a CloudWatch Logs subscription delivers XID events (the exporter's EMF, kernel lines); they
  are grouped per node, GPU, code and window, one message per group;
- an EventBridge rule delivers this app's alarm and contributor state changes; each GPU that
  goes into ALARM is one message.

Each incident goes to every channel (SNS: critical incidents to the critical topic, the rest
to the warning topic; a chat webhook where one is set). Each (incident, channel) is claimed in
the sent ledger before it is delivered, so a retried invocation sends only what was not sent,
on the channel that failed.

Every incident goes out on SNS before any goes to the chat webhook. A delivery that fails in
any way (a channel's refusal, or a fault in a channel's code) releases its claim before
anything else, so that the retry sends it, except a post sent whole and answered late, which
is re-sent once (``send``); none is claimed when less time is left than one delivery may take
(``RESERVE_S``: a claim, a publish and a release at their bounds), so that the function's
timeout cannot leave a claim held for a page that was never sent.
"""

import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from gpu_insights_agent.contract.resource_names import CAP_ALARM_SUFFIX
from lambdas.notifier.budget import CLIENT_CALL_S, CLIENT_CONFIG, RESEND_RESERVE_S, RESERVE_S
from lambdas.notifier.channels import AnswerLateError, Channel, ChannelError, ChannelTimeoutError
from lambdas.notifier.config import NotifierConfig, with_cap_kinds
from lambdas.notifier.culprit_record import CulpritRecordError, culprit_line
from lambdas.notifier.fail_slow_classic import (
    CulpritReadError,
    classic_culprit,
    read_classic_badput,
)
from lambdas.notifier.fail_slow_page import (
    culprit_of,
    grown_badput,
    read_badput,
    with_badput,
    with_culprit,
)
from lambdas.notifier.incidents import (
    Deployment,
    Skipped,
    from_alarm_event,
    from_xid_group,
    last_seen,
)
from lambdas.notifier.jobs import (
    Placement,
    PlacementLookupError,
    alarm_time_ms,
    few,
    is_job_kind,
    job_incident,
    job_placement,
    promql_placement,
)
from lambdas.notifier.kernel_log import (
    KernelCheck,
    KernelLines,
    check,
    read_kernel_lines,
    span,
)
from lambdas.notifier.messages import XidGroup, group_xids, parse_log_events
from lambdas.notifier.notification import Incident
from lambdas.notifier.pods import (
    PodLookupError,
    pods_on_gpu,
    pods_seen_by_promql,
)
from lambdas.notifier.refused import refused_line
from lambdas.notifier.sent_ledger import Claim, LedgerError, SentLedger, claim_key, claim_near
from lambdas.notifier.serving import model_deployment, read_replicas, with_replicas
from lambdas.notifier.sns_channel import SNS, SnsChannel
from lambdas.notifier.webhook import LATE_DEADLINE_S, WebhookChannel, url_from_parameter
from lambdas.shared.aws_clients import ClientCache
from lambdas.shared.fail_slow import FAIL_SLOW_KIND, GOODPUT_LOW_KIND
from lambdas.shared.promql import PromQLClient, PromQLError, bounded_opener, promql_for
from lambdas.shared.subscription import decode_subscription

#: A Kubernetes node's name: a DNS subdomain ("Node names must be a valid DNS subdomain name",
#: kubernetes.io/docs/concepts/architecture/nodes/; RFC 1123: lowercase letters, digits, "-"
#: and "."). An incident's node that is not one is a sentence saying there is none.
NODE_NAME: Final = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
log = logging.getLogger()
log.setLevel(logging.INFO)

#: The notifier's AWS calls are bounded by one table (``budget``): each gives up within
#: CLIENT_CALL_S, and no claim is made with less than RESERVE_S left.
_clients = ClientCache(CLIENT_CONFIG)
#: The webhook URL per parameter, with when it was read: read again after WEBHOOK_URL_KEEP_S,
#: so a rotated URL is used within minutes without a read per invocation.
_webhook_urls: dict[str, tuple[str, float]] = {}
WEBHOOK_URL_KEEP_S = 300.0


class _Clock:
    """The invocation's time left, from Lambda's context (unbounded outside Lambda), and its
    time: the wall clock, or a replay's (the demo delivers each event when it would arrive)."""

    def __init__(self) -> None:
        self.context: object = None
        self.now: Callable[[], float] = time.time

    def left_s(self) -> float:
        remaining = getattr(self.context, "get_remaining_time_in_millis", None)
        return float(remaining()) / 1000 if callable(remaining) else math.inf


_clock = _Clock()


class PublishError(Exception):
    """A channel refused a notification; raised (after the other channels delivered) so that
    Lambda retries and then dead-letters."""


def decode(event: dict[str, Any]) -> dict[str, Any]:
    """The subscription payload, or ``SubscriptionPayloadError`` naming what was wrong."""
    return decode_subscription(event)


def deployment(config: NotifierConfig) -> Deployment:
    return Deployment(
        cluster=config.cluster_name,
        region=config.region,
        gpu_dashboard=config.gpu_dashboard,
        alarm_kinds=with_cap_kinds(config.alarm_kinds),
        # A PromQL kind's fleet count alarm is a PromQL alarm too (catalog.cap_alarms).
        promql_kinds=frozenset(
            name
            for kind in config.promql_alarm_kinds or ()
            for name in (kind, f"{kind}{CAP_ALARM_SUFFIX}")
        ),
    )


def channels(config: NotifierConfig) -> list[Channel]:
    """The channels this deployment delivers to: SNS always, the webhook where it is set."""
    out: list[Channel] = [
        SnsChannel(
            _clients("sns"),
            critical_topic_arn=config.critical_topic_arn,
            warning_topic_arn=config.warning_topic_arn,
        )
    ]
    parameter = config.webhook_url_parameter
    if parameter:
        out.append(WebhookChannel(lambda: _webhook_url(parameter)))
    return out


def _webhook_url(parameter: str) -> str:
    now = time.monotonic()
    kept = _webhook_urls.get(parameter)
    if kept is None or now - kept[1] > WEBHOOK_URL_KEEP_S:
        kept = (url_from_parameter(_clients("ssm"), parameter), now)
        _webhook_urls[parameter] = kept
    return kept[0]


def send(
    channels: list[Channel],
    ledger: SentLedger,
    incidents: list[Incident],
    now_s: float,
    *,
    time_left_s: Callable[[], float] | None = None,
) -> int:
    """Deliver each incident on each channel where it was not delivered before, channel by
    channel: every incident on SNS (``channels`` lists it first) before any on a chat webhook,
    so a slow chat service cannot spend the time the pages on SNS need.

    Each delivery stands alone: a ledger error on one incident's key is that incident's
    failure, and the other incidents go on. A channel that refuses is released for that
    incident alone and still tried for the batch's other incidents (a refusal may be that one
    page's: its size, its text); a channel that times out (``ChannelTimeoutError``) is skipped
    for the rest of the invocation, since each later page would wait out the same deadline.
    A post sent whole whose answer came late (``AnswerLateError``) keeps its claim, marked: a
    later invocation re-sends it once with a longer deadline (``LATE_DEADLINE_S``), and a
    re-send answered in time is a delivered page. A failure that is no ChannelError (a fault
    in a channel's code) is released and logged with its traceback like the others.

    Any failure, and any delivery not tried, is raised at the end (``PublishError``, with both
    counts), so that Lambda retries; the ledger makes the retry send only what was not sent.
    With less than ``RESERVE_S`` left (``time_left_s``, the invocation's by default), nothing
    more is claimed and the rest is left to the retry."""
    run = _Run(ledger, now_s, time_left_s or _clock.left_s)
    for channel in channels:
        for incident in incidents:
            run.deliver(channel, incident)
    _raise_first(run.failures, run.not_tried)
    return run.sent


class _Run:
    """One invocation's deliveries: what was sent, what failed, what was not tried, and the
    channels that timed out."""

    def __init__(self, ledger: SentLedger, now_s: float, left: Callable[[], float]) -> None:
        self.ledger = ledger
        self.now_s = now_s
        self.left = left
        self.sent = 0
        self.not_tried = 0
        self.failures: list[tuple[str, str, Exception]] = []
        self.timed_out: set[str] = set()

    def deliver(self, channel: Channel, incident: Incident) -> None:
        if channel.name in self.timed_out or self.left() < RESERVE_S:
            self.not_tried += 1
            return
        key = claim_key(incident.key, channel.name, first=SNS)
        near = claim_near(incident.near, channel.name, first=SNS)
        try:
            found = self.ledger.claim(key, self.now_s, near)
            if found is Claim.LATE:
                if self.left() < RESEND_RESERVE_S:
                    self.not_tried += 1
                    return
                if self.ledger.take_resend(key, self.now_s):
                    self._publish(channel, incident, key, resend=True)
                return
        except LedgerError as err:
            self.failures.append((incident.key, channel.name, err))
            log.error("claiming %s for %s: %s", incident.key, channel.name, err)
            return
        if found is Claim.UNCONFIRMED:
            unconfirmed = ChannelError(
                f"{channel.name}: sent twice, and neither answer came in time; not sent again"
            )
            self.failures.append((incident.key, channel.name, unconfirmed))
            log.error("publishing %s to %s", incident.key, unconfirmed)
        elif found is Claim.NEW:
            self._publish(channel, incident, key, resend=False)

    def _publish(self, channel: Channel, incident: Incident, key: str, *, resend: bool) -> None:
        try:
            if resend:
                channel.deliver(incident, deadline_s=LATE_DEADLINE_S)
            else:
                channel.deliver(incident)
        except Exception as err:
            self.failures.append((incident.key, channel.name, err))
            if isinstance(err, ChannelError):
                log.error("publishing %s to %s", incident.key, err)
            else:
                log.exception(
                    "publishing %s: a fault in the %s channel", incident.key, channel.name
                )
            if isinstance(err, ChannelTimeoutError):
                self.timed_out.add(channel.name)
            if isinstance(err, AnswerLateError) or resend:
                # Late: it may have been shown. A re-send that failed otherwise was not, but
                # the first post may have been: its one re-send is still due.
                late = 2 if isinstance(err, AnswerLateError) and resend else 1
                self._write(self.ledger.mark_late, key, posts=late)
            else:
                _release(self.ledger, key)
            return
        if resend:
            self._write(self.ledger.confirm, key)
        self.sent += 1

    def _write(self, write: Callable[..., None], key: str, **kwargs: int) -> None:
        """A ledger write after a post; one that fails is logged (the claim holds as it was)."""
        try:
            write(key, self.now_s, **kwargs)
        except LedgerError as err:
            log.error("%s: the claim holds as it was", err)


def _raise_first(failures: list[tuple[str, str, Exception]], not_tried: int) -> None:
    """The batch's first failure as a PublishError (counting the rest, and the deliveries not
    tried), so Lambda retries."""
    untried = (
        f"{not_tried} deliveries not tried (a channel that timed out is skipped for the rest of "
        f"the invocation; none is claimed with under {RESERVE_S:g} s left)"
        if not_tried
        else ""
    )
    if failures:
        key, name, cause = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        also = f"; {untried}" if untried else ""
        if isinstance(cause, ChannelError):
            raise PublishError(f"publishing {key}{more} to {cause}{also}") from cause
        if isinstance(cause, LedgerError):
            raise PublishError(f"publishing {key}{more}: {cause}{also}") from cause
        raise PublishError(
            f"publishing {key}{more}: a fault in {name}: {type(cause).__name__}: {cause}{also}"
        ) from cause
    if untried:
        raise PublishError(untried)


def _release(ledger: SentLedger, key: str) -> None:
    """Release a claim whose message was not sent; a release that fails is logged (the claim
    then holds until its TTL: that one message is lost, the batch goes on)."""
    try:
        ledger.release(key)
    except LedgerError as err:
        log.error("%s: its message will not be retried", err)


def _ledger(config: NotifierConfig) -> SentLedger:
    return SentLedger(_clients("dynamodb"), config.sent_table)


def _from_logs(event: dict[str, Any], now_s: float, config: NotifierConfig) -> dict[str, int]:
    payload = decode(event)
    if payload.get("messageType") == "CONTROL_MESSAGE":
        return {"incidents": 0, "published": 0, "unreadable": 0}
    where = deployment(config)
    parsed = parse_log_events(payload, cluster=where.cluster, now_ms=int(now_s * 1000))
    for refusal in parsed.refused:
        log.warning("refused log event %s: %s", refusal.event_id, refusal.reason)
    print(refused_line(where.cluster, parsed.unreadable, int(now_s * 1000)), flush=True)
    groups = group_xids(parsed.notices)
    checks = _kernel_checks(groups, config, int(now_s * 1000))
    incidents = [
        from_xid_group(
            g, where, checks.get(g.key), require_kernel=config.require_kernel_confirmation
        )
        for g in groups
    ]
    published = send(channels(config), _ledger(config), incidents, now_s)
    return {"incidents": len(incidents), "published": published, "unreadable": parsed.unreadable}


def _kernel_checks(
    groups: list[XidGroup], config: NotifierConfig, now_ms: int
) -> dict[str, KernelCheck]:
    """What the kernel log says of each exporter XID group (one read for the batch, bounded
    near now: kernel_log.span, and by the invocation's time: a page is read only while one
    read at its worst still leaves one delivery's RESERVE_S, so a slow Logs API costs the
    pages a line, never the pages)."""
    if config.host_log_group is None:
        return {}
    window = span(groups, now_ms)
    lines = KernelLines({})
    if window is not None:
        lines = read_kernel_lines(
            _clients("logs"),
            config.host_log_group,
            *window,
            time_left_s=lambda: _clock.left_s() - RESERVE_S,
            page_s=CLIENT_CALL_S,
        )
    if lines.unread:
        log.warning("kernel log: %s", lines.unread)
    return {g.key: check(g, lines, now_ms) for g in groups if g.first.from_exporter}


def _with_pods(incident: Incident, at_ms: int, log_group: str) -> Incident:
    """The pods the exporter last saw on the GPU the alarm names, where it names one."""
    if incident.pods or not incident.gpu.isdigit():
        return incident
    try:
        pods = pods_on_gpu(_clients("logs"), log_group, incident.node, incident.gpu, at_ms)
    except PodLookupError as err:
        log.warning("no pods for %s: %s", incident.key, err)
        return incident
    return replace(incident, pods=pods)


def _with_promql_pods(
    incident: Incident, at_ms: int, promql: Callable[[], PromQLClient]
) -> Incident:
    """A PromQL alarm's GPU or node (OTel mode) with the pods the exporter's series last named
    on it, and when, where that reading is older than the alarm (a lost GPU's, a silent
    node's): a node the alarm names without a GPU has its GPUs' pods."""
    gpu = incident.gpu if incident.gpu.isdigit() else None
    if incident.pods or not NODE_NAME.fullmatch(incident.node):
        return incident  # named, or no node to read: a cluster-wide series, an unscheduled pod
    try:
        pods, seen_s = pods_seen_by_promql(
            promql(), incident.cluster, incident.node, gpu, at_ms / 1000
        )
    except (PodLookupError, BotoCoreError, ClientError) as err:
        log.warning("no pods for %s: %s", incident.key, err)
        return incident
    if not pods or seen_s is None:
        return incident
    if seen_s < at_ms / 1000:  # not at the alarm's own reading: dated
        named = last_seen(pods, int(seen_s * 1000), "GPU" if gpu is not None else "node")
    else:
        named = few(pods, "pods")
    return replace(incident, pods=(named,))


def _promql() -> PromQLClient:
    """CloudWatch's PromQL API as the function's role, each request bounded as its other
    calls are (``CLIENT_CALL_S``)."""
    return replace(promql_for(_clients("cloudwatch")), opener=bounded_opener(CLIENT_CALL_S))


def _with_job(
    incident: Incident, at_ms: int, config: NotifierConfig, promql: Callable[[], PromQLClient]
) -> Incident:
    """A job alarm's incident with the job's pods, nodes and GPUs (its ranks' newest
    documents in the training log group), where the emitter was told them; for a PromQL job
    alarm (OTel mode), its ranks' pods and nodes from their series' labels."""
    at = alarm_time_ms(incident, at_ms)
    job = incident.job or ""
    try:
        if incident.kind in (config.promql_alarm_kinds or ()):
            placement = promql_placement(promql(), incident.cluster, incident.namespace, job, at)
        else:
            placement = job_placement(_clients("logs"), incident.cluster, job, at)
    except PlacementLookupError as err:
        log.warning("no placement for %s: %s", incident.key, err)
        placement = Placement()
    paged = job_incident(incident, config.region, placement)
    if incident.kind not in (config.promql_alarm_kinds or ()):
        if incident.kind == FAIL_SLOW_KIND:
            return _with_classic_culprit(paged, incident, placement, at)
        if incident.kind == GOODPUT_LOW_KIND:
            return _with_classic_badput(paged, incident, at)
        return paged
    if incident.kind == FAIL_SLOW_KIND:
        return _with_culprit(paged, incident, placement, at, promql)
    if incident.kind == GOODPUT_LOW_KIND:
        return _with_badput(paged, incident, at, promql)
    return paged


def _with_culprit(
    paged: Incident,
    alarm: Incident,
    placement: Placement,
    at_ms: int,
    promql: Callable[[], PromQLClient],
) -> Incident:
    """A fail-slow page with its most likely culprit, read at the alarm's time (OTel mode) from
    the same PromQL API as the job's placement (a replay's local engine, never the account)."""
    job = alarm.job or ""
    try:
        verdict = culprit_of(
            promql(), alarm.cluster, alarm.namespace, job, placement.each("node"), at_ms / 1000
        )
    except (PromQLError, BotoCoreError, ClientError) as err:
        log.warning("no culprit for %s: %s", alarm.key, err)
        return with_culprit(paged, None)
    return with_culprit(paged, verdict)


def _with_classic_culprit(
    paged: Incident, alarm: Incident, placement: Placement, at_ms: int
) -> Incident:
    """A Classic fail-slow page (a Metrics Insights alarm) with its most likely culprit, read
    with GetMetricData at the alarm's time from the job's nodes (its ranks' documents)."""
    if not placement.each("node"):
        return with_culprit(paged, None, "not read (the job's ranks named no node)")
    try:
        verdict = classic_culprit(
            _clients("cloudwatch"), alarm.cluster, alarm.job or "", placement, at_ms / 1000
        )
    except CulpritReadError as err:
        log.warning("no culprit for %s: %s", alarm.key, err)
        return with_culprit(paged, None, "not read (CloudWatch refused the job's series)")
    return with_culprit(paged, verdict)


def _with_badput(
    paged: Incident, alarm: Incident, at_ms: int, promql: Callable[[], PromQLClient]
) -> Incident:
    """A goodput page with the badput that grew over the hour before (OTel mode), read from
    the same PromQL API as the job's placement."""
    try:
        now, before = read_badput(
            promql(), alarm.cluster, alarm.namespace, alarm.job or "", at_ms / 1000
        )
    except (PromQLError, BotoCoreError, ClientError) as err:
        log.warning("no badput for %s: %s", alarm.key, err)
        return with_badput(paged, None)
    return with_badput(paged, grown_badput(now, before))


def _with_classic_badput(paged: Incident, alarm: Incident, at_ms: int) -> Incident:
    """A Classic goodput page (a Metrics Insights alarm) with the badput that grew, read with
    GetMetricData from the emitter's series."""
    try:
        now, before = read_classic_badput(
            _clients("cloudwatch"), alarm.cluster, alarm.job or "", at_ms / 1000
        )
    except CulpritReadError as err:
        log.warning("no badput for %s: %s", alarm.key, err)
        return with_badput(paged, None, "not read (CloudWatch refused the job's series)")
    return with_badput(paged, grown_badput(now, before))


def _with_replicas(
    incident: Incident, model: tuple[str, str], at_ms: int, promql: Callable[[], PromQLClient]
) -> Incident:
    """A model's serving page (OTel mode) with its Deployment's replicas, nodes and GPUs at the
    alarm's time; a page that says they could not be read where PromQL refused. ``model``:
    its (namespace, Deployment)."""
    namespace, deployment = model
    at_s = alarm_time_ms(incident, at_ms) / 1000
    try:
        replicas = read_replicas(promql(), incident.cluster, namespace, deployment, at_s)
    except (PromQLError, BotoCoreError, ClientError) as err:
        log.warning("no replicas for %s: %s", incident.key, err)
        replicas = None
    return with_replicas(incident, replicas, namespace)


def placed(
    result: Incident,
    now_ms: int,
    config: NotifierConfig,
    *,
    promql: Callable[[], PromQLClient] = _promql,
    pods_from_log: bool = True,
) -> Incident:
    """An alarm's incident with where it is: a job's ranks, a model's replicas, a GPU's pods.
    ``promql``: the PromQL API it reads (the function's own; a replay's local engine, for
    ``gpu-insights backtest --history``); ``pods_from_log``: read a GPU's pods from the
    exporter's log group (a replay has none)."""
    if is_job_kind(result.kind) and result.job:
        return _with_job(result, now_ms, config, promql)
    if (model := model_deployment(result)) and result.kind in (config.promql_alarm_kinds or ()):
        return _with_replicas(result, model, now_ms, promql)
    if result.kind in (config.promql_alarm_kinds or ()):
        return _with_promql_pods(result, alarm_time_ms(result, now_ms), promql)
    if not pods_from_log:
        return result
    return _with_pods(result, now_ms, config.exporter_log_group)


def _from_alarm(event: dict[str, Any], now_s: float, config: NotifierConfig) -> dict[str, int]:
    result = from_alarm_event(event, deployment(config))
    if isinstance(result, Skipped):
        log.info("not an incident: %s", result.reason)
        return {"incidents": 0, "published": 0, "unreadable": 0}
    incident = placed(result, int(now_s * 1000), config)
    published = send(channels(config), _ledger(config), [incident], now_s)
    if published:
        record_culprit(incident, int(now_s * 1000))
    return {"incidents": 1, "published": published, "unreadable": 0}


def record_culprit(incident: Incident, now_ms: int) -> None:
    """Print the record of a sent fail-slow page's culprit node (culprit_record.py), after the
    page: by the invocation that delivered it, so a retry or a repeated alarm event whose
    deliveries were all sent before (``send`` returns 0) records nothing twice. A culprit that
    cannot be recorded is logged; the page stands."""
    try:
        line = culprit_line(incident, now_ms)
    except CulpritRecordError as err:
        log.warning("%s", err)
        return
    if line:
        print(line, flush=True)


def handler(event: dict[str, Any], context: object) -> dict[str, int]:
    now_s = _clock.now()
    _clock.context = context
    config = NotifierConfig.current()
    if "awslogs" in event:
        return _from_logs(event, now_s, config)
    return _from_alarm(event, now_s, config)
