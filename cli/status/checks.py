"""``gpu-insights status``: is a deployed cluster's GPU Insights working? Pure judgments of what
``cli.status.aws`` read, one :class:`cli.preflight.checks.Check` a line, each with its fix.

What "working" means, check by check:

- ``stacks``: the three stacks are deployed (a ``*_COMPLETE`` status that is not a rollback or
  a deletion), so their outputs name the topics and the report bucket.
- ``observability-addon``: amazon-cloudwatch-observability is ACTIVE, and ``container-insights-
  gpu``: its GPU metrics arrive, in the Container Insights mode of the settings
  (``container_insights_mode``), which the add-on's configuration must run (``preflight``
  reads it so, cli/preflight/checks.py ``addon_modes``). Classic: the cluster's
  ``node_gpu_power_draw`` series had samples in the window. OTel: every GPU node past its grace
  period sent DCGM's ``DCGM_FI_DEV_GPU_UTIL`` for each of its GPUs in the window, read with
  PromQL by the node label (``@resource.k8s.node.name``) and judged by the silence check's
  rule, named node by node where not.
- ``exporter-nodes``: every running NVIDIA GPU instance of the cluster past its grace period
  sent the exporter's per-GPU series in the window, named node by node where not (the silence
  check's own rule, lambdas/silence_check/silence.py): from GpuInsights with the EMF sink, with
  PromQL (its ``gpu_healthy`` series, by the node label) with the OTLP sink.
- ``silence-coverage``: every running NVIDIA GPU instance of the cluster that the silence check
  does not cover (EKS Auto Mode's, an architecture the exporter is not built for, or one no tag
  names the cluster's but Container Insights saw as its node), one line each with the tag to
  add (cli/silence_coverage.py). With the OTLP sink there is no silence check function: one
  line says that gpu-silent, a PromQL alarm on Kube State Metrics' GPU capacity, covers the
  nodes by their labels, not their tags.
- ``alarms``: every alarm the deployment makes exists; those without data
  (INSUFFICIENT_DATA) and those in ALARM are named. The composite over the GPU alarms is left
  out: its state is theirs.
- ``serving-series`` (OTel mode with serving alarms): every model whose series an SLO alarm
  reads do not arrive, with its server and what to enable (cli/status/serving.py): an alarm
  over a model with no series stays OK.
- ``topic:<purpose>``: each topic has a confirmed subscriber; one awaiting confirmation is
  named. A critical topic nobody confirmed pages nobody: that fails.
- ``analyzer:<name>``, ``weekly-report``: the newest findings file and report, which a run
  writes even when it finds nothing; none at all is a failure only once the stack has been up
  longer than the schedule needs.
- ``lemon-node:<node>``: each lemon node the newest weekly report lists (its failures,
  fail-slows and XIDs per GPU-hour over 30 days against the fleet's:
  lambdas/training_analyzer/goodput/lemon.py), a warning with what to do; ``lemon-nodes`` ok
  where it lists none.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any, Final

from cdk.outputs import ANALYZERS, REPORT_BUCKET_NAME, TOPIC_OUTPUTS
from cli.preflight.checks import (
    Addon,
    Check,
    NodeRepair,
    Verdict,
    addon_modes,
    check_node_repair,
    check_silence_coverage,
)
from cli.status.serving import Missing, check_serving_series
from lambdas.shared.container_insights_mode import DEFAULT_MODE, ContainerInsightsMode
from lambdas.shared.dcgm import DCGM_UTIL
from lambdas.silence_check.coverage import Uncovered
from lambdas.silence_check.silence import REPORTING_METRIC, GpuNode
from lambdas.silence_check.silence import Check as Silence
from lambdas.storage_analyzer.ebs_analysis import ANALYZER as STORAGE
from lambdas.training_analyzer.analysis import ANALYZER as TRAINING
from lambdas.training_analyzer.goodput.lemon import LEMON_SCORE, WINDOW_DAYS

#: The analyzers that write a findings file a day (lambdas/shared/publisher.py findings_key).
ANALYZERS_RUN: Final = (STORAGE, TRAINING)

#: How far back status looks for the metrics that show a pipeline is alive.
WINDOW_S: Final = 15 * 60
#: The analyzers run daily and write the findings of a day; a newest file older than this is
#: a missed run (two schedules).
ANALYZER_STALE_DAYS: Final = 2
#: The weekly report: a newest report more than two ISO weeks back is a missed run.
REPORT_STALE_DAYS: Final = 14
_DAY_S: Final = 86_400
_GOOD_STACK: Final = frozenset({"CREATE_COMPLETE", "UPDATE_COMPLETE", "IMPORT_COMPLETE"})


@dataclass(frozen=True)
class Stack:
    name: str
    status: str  # CloudFormation StackStatus; "" when the stack does not exist
    created: float = 0.0
    outputs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Subscriptions:
    #: ``protocol:endpoint`` of each subscription, confirmed or awaiting confirmation.
    confirmed: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()


@dataclass(frozen=True)
class Facts:
    """What the account holds for the deployment. A fact that could not be read is named in
    ``unreadable`` with AWS's reason; its check fails and says so."""

    cluster: str
    now: float
    stacks: Mapping[str, Stack]  # by part: Observability, Alarms, Analyzers
    exporter: bool = True
    #: The exporter sends OTLP (OTel mode): its series were read with PromQL.
    exporter_otlp: bool = False
    #: The silence check function runs (AlarmSettings.silence_check); without it, with the
    #: exporter's OTLP sink, gpu-silent is a PromQL alarm on Kube State Metrics' GPU capacity.
    silence_check: bool = True
    addon: Addon | None = None  # None: not installed
    #: The settings' Container Insights mode: where its GPU series are read.
    mode: ContainerInsightsMode = DEFAULT_MODE
    ci_gpu_samples: int = 0
    #: OTel mode: the GPU nodes' DCGM series judged by the silence check's rule.
    dcgm: Silence | None = None
    gpu_nodes: tuple[GpuNode, ...] = ()
    silence: Silence | None = None
    #: The cluster's running NVIDIA GPU instances the silence check does not cover.
    silence_uncovered: tuple[Uncovered, ...] = ()
    #: Every alarm the deployment makes, by name, with its StateValue; None where missing.
    alarms: Mapping[str, str | None] = field(default_factory=dict)
    #: By purpose (critical, warning, report); None where the topic does not exist.
    topics: Mapping[str, Subscriptions | None] = field(default_factory=dict)
    #: By analyzer (storage, training): the newest day it wrote findings for, and how many.
    findings: Mapping[str, tuple[date, int] | None] = field(default_factory=dict)
    #: The newest weekly report's ISO week (2026-W48), or None.
    report_week: str | None = None
    #: The newest weekly report's lemon nodes, worst first (report.json ``lemons``); None: no
    #: report read.
    lemons: "tuple[Mapping[str, Any], ...] | None" = None
    #: Auto repair of the GPU nodes (cli/preflight/checks.py ``check_node_repair``); None: not
    #: read (no EKS client, no such cluster) or unreadable.
    node_repair: NodeRepair | None = None
    #: OTel mode with serving alarms: each model signal an alarm reads without series
    #: (cli/status/serving.py); None: not read.
    serving_missing: "tuple[Missing, ...] | None" = None
    unreadable: Mapping[str, str] = field(default_factory=dict)


def _unreadable(name: str, facts: Facts, fact: str) -> Check | None:
    reason = facts.unreadable.get(fact)
    if reason is None:
        return None
    return Check(name, Verdict.FAIL, f"could not read: {reason}", "run status with read access")


def check_stacks(facts: Facts) -> Check:
    name = "stacks"
    bad = [
        f"{s.name} {s.status or 'not deployed'}"
        for s in facts.stacks.values()
        if s.status not in _GOOD_STACK
    ]
    if bad:
        return Check(
            name,
            Verdict.FAIL,
            "; ".join(bad),
            f"cdk deploy --all -c cluster_name={facts.cluster} (see the stack's events for a "
            "failed one)",
        )
    return Check(name, Verdict.OK, f"{len(facts.stacks)} stacks deployed")


def check_addon(facts: Facts) -> Check:
    name = "observability-addon"
    unreadable = _unreadable(name, facts, "addon")
    if unreadable:
        return unreadable
    if facts.addon is None:
        return Check(
            name,
            Verdict.FAIL,
            "amazon-cloudwatch-observability is not installed",
            "deploy with install_addon=true, or install the add-on where you manage add-ons",
        )
    if facts.addon.status != "ACTIVE":
        return Check(
            name,
            Verdict.FAIL,
            f"amazon-cloudwatch-observability {facts.addon.version} is {facts.addon.status}",
            f"aws eks describe-addon --cluster-name {facts.cluster} --addon-name "
            "amazon-cloudwatch-observability (its health issues say why)",
        )
    return Check(name, Verdict.OK, f"amazon-cloudwatch-observability {facts.addon.version} ACTIVE")


def check_container_insights(facts: Facts) -> Check:
    name = "container-insights-gpu"
    modes = addon_modes(facts.addon) if facts.addon is not None else None
    if modes is not None and facts.mode not in modes:
        runs = " and ".join(sorted(modes)) or "no"
        return Check(
            name,
            Verdict.FAIL,
            f"the add-on runs {runs} Container Insights, but container_insights_mode="
            f"{facts.mode}: the analyzers read series it does not send",
            "gpu-insights preflight with the same settings says which mode to set or to "
            "enable in the add-on's configuration",
        )
    unreadable = _unreadable(name, facts, "container_insights")
    if unreadable:
        return unreadable
    minutes = WINDOW_S // 60
    if facts.mode is ContainerInsightsMode.OTEL:
        return _check_dcgm(name, facts)
    if facts.ci_gpu_samples:
        return Check(
            name,
            Verdict.OK,
            f"node_gpu_power_draw: {facts.ci_gpu_samples} samples in the last {minutes} minutes",
        )
    return Check(
        name,
        Verdict.FAIL,
        f"no node_gpu_* sample for ClusterName={facts.cluster} in the last {minutes} minutes",
        "check the add-on's dcgm-exporter pods (kubectl -n amazon-cloudwatch get pods) and "
        "that accelerated compute metrics are on in its configuration",
    )


def _check_dcgm(name: str, facts: Facts) -> Check:
    """OTel mode: each GPU node's DCGM series, by the node label."""
    minutes = WINDOW_S // 60
    dcgm = facts.dcgm
    if dcgm is None or dcgm.expected_nodes == 0:
        young = f" ({dcgm.young_nodes} inside their grace period)" if dcgm else ""
        return Check(
            name,
            Verdict.WARN,
            f"no running NVIDIA GPU instance a tag names cluster {facts.cluster}'s to check "
            f"for DCGM series{young}",
            "nothing to do until GPU nodes run",
        )
    if not dcgm.silent:
        return Check(
            name,
            Verdict.OK,
            f"{DCGM_UTIL}: {dcgm.expected_nodes} GPU nodes, {dcgm.expected_gpus} GPUs in the "
            f"last {minutes} minutes (PromQL)",
        )
    return Check(
        name,
        Verdict.FAIL,
        f"{dcgm.silent_nodes} of {dcgm.expected_nodes} GPU nodes without {DCGM_UTIL} in the "
        f"last {minutes} minutes: " + "; ".join(s.line() for s in dcgm.silent),
        "check the add-on's dcgm-exporter pod on each node named (kubectl -n amazon-cloudwatch "
        "get pods -o wide) and that accelerated compute metrics are on in its configuration",
    )


def check_exporter(facts: Facts) -> Check:
    name = "exporter-nodes"
    unreadable = _unreadable(name, facts, "exporter")
    if unreadable:
        return unreadable
    silence = facts.silence
    if silence is None or silence.expected_nodes == 0:
        young = f" ({silence.young_nodes} inside their grace period)" if silence else ""
        return Check(
            name,
            Verdict.WARN,
            f"no running NVIDIA GPU instance a tag names cluster {facts.cluster}'s to check{young}",
            "nothing to do until GPU nodes run",
        )
    read = f" ({REPORTING_METRIC}, PromQL)" if facts.exporter_otlp else ""
    if not silence.silent:
        return Check(
            name,
            Verdict.OK,
            f"{silence.expected_nodes} GPU nodes, {silence.expected_gpus} GPUs reported in "
            f"the last {WINDOW_S // 60} minutes{read}",
        )
    return Check(
        name,
        Verdict.FAIL,
        f"{silence.silent_nodes} of {silence.expected_nodes} GPU nodes silent{read}: "
        + "; ".join(s.line() for s in silence.silent),
        "gpu-insights preflight names nodes the DaemonSet misses; otherwise kubectl -n "
        "gpu-insights get pods -o wide and the pod's log on that node",
    )


def _names(names: Sequence[str], most: int = 5) -> str:
    shown = ", ".join(names[:most])
    return f"{shown} and {len(names) - most} more" if len(names) > most else shown


def check_alarms(facts: Facts) -> Check:
    name = "alarms"
    unreadable = _unreadable(name, facts, "alarms")
    if unreadable:
        return unreadable
    missing = sorted(n for n, s in facts.alarms.items() if s is None)
    if missing:
        return Check(
            name,
            Verdict.FAIL,
            f"{len(missing)} of {len(facts.alarms)} alarms missing: {_names(missing)}",
            "deploy the Alarms stack with the same settings (fleet_gpus, exporter_enabled)",
        )
    no_data = sorted(n for n, s in facts.alarms.items() if s == "INSUFFICIENT_DATA")
    alarming = sorted(n for n, s in facts.alarms.items() if s == "ALARM")
    parts = [f"{len(facts.alarms)} alarms"]
    if alarming:
        parts.append(f"in ALARM: {_names(alarming)}")
    if no_data:
        parts.append(f"without data (INSUFFICIENT_DATA): {_names(no_data)}")
    if alarming or no_data:
        return Check(
            name,
            Verdict.WARN,
            "; ".join(parts),
            "an alarm without data watches a metric nothing sends yet (see the checks above); "
            "one in ALARM is a GPU problem: its notification says which",
        )
    return Check(name, Verdict.OK, f"{len(facts.alarms)} alarms, none without data or in ALARM")


def check_topic(facts: Facts, purpose: str) -> Check:
    name = f"topic:{purpose}"
    unreadable = _unreadable(name, facts, f"topic:{purpose}")
    if unreadable:
        return unreadable
    part, output = TOPIC_OUTPUTS[purpose]
    subscriptions = facts.topics.get(purpose)
    if subscriptions is None:
        return Check(
            name,
            Verdict.FAIL,
            f"no topic: the {part} stack's {output} output names none that exists",
            "deploy the stacks; with a *_topic_arn setting, check the topic exists",
        )
    pending = (
        f"; awaiting confirmation: {_names(subscriptions.pending)}" if subscriptions.pending else ""
    )
    if subscriptions.confirmed:
        return Check(
            name,
            Verdict.WARN if pending else Verdict.OK,
            f"{len(subscriptions.confirmed)} confirmed: {_names(subscriptions.confirmed)}{pending}",
            "each recipient confirms from the message SNS sent them" if pending else "",
        )
    return Check(
        name,
        Verdict.FAIL if purpose == "critical" else Verdict.WARN,
        f"no confirmed subscriber{pending}",
        "confirm the subscription from SNS's message, or subscribe someone "
        f"(alarm_emails for critical, warning_emails, report_emails) to {output}",
    )


def _created_days(facts: Facts) -> float:
    stack = facts.stacks.get(ANALYZERS)
    return (facts.now - stack.created) / _DAY_S if stack and stack.created else 0.0


def check_analyzer(facts: Facts, analyzer: str) -> Check:
    name = f"analyzer:{analyzer}"
    unreadable = _unreadable(name, facts, "report_bucket")
    if unreadable:
        return unreadable
    newest = facts.findings.get(analyzer)
    today = datetime.fromtimestamp(facts.now, UTC).date()
    if newest is not None and (today - newest[0]).days <= ANALYZER_STALE_DAYS:
        return Check(
            name, Verdict.OK, f"findings for {newest[0].isoformat()}: {newest[1]} findings"
        )
    last = f"newest findings for {newest[0].isoformat()}" if newest else "no findings file yet"
    late = _created_days(facts) > ANALYZER_STALE_DAYS
    return Check(
        name,
        Verdict.FAIL if late else Verdict.WARN,
        f"{last}; it runs daily" + ("" if late else " (the stack is younger than two runs)"),
        f"read the {analyzer} analyzer's log group for its last run's error",
    )


def check_report(facts: Facts) -> Check:
    name = "weekly-report"
    unreadable = _unreadable(name, facts, "report_bucket")
    if unreadable:
        return unreadable
    today = datetime.fromtimestamp(facts.now, UTC).date()
    if facts.report_week is not None:
        year, week = facts.report_week.split("-W")
        monday = date.fromisocalendar(int(year), int(week), 1)
        if (today - monday).days <= REPORT_STALE_DAYS:
            return Check(name, Verdict.OK, f"the report for {facts.report_week} is written")
    last = f"newest report {facts.report_week}" if facts.report_week else "no report yet"
    late = _created_days(facts) > REPORT_STALE_DAYS
    return Check(
        name,
        Verdict.FAIL if late else Verdict.WARN,
        f"{last}; it runs weekly" + ("" if late else " (the first one comes on a Monday)"),
        "read the weekly report function's log group for its last run's error",
    )


def check_lemons(facts: Facts) -> list[Check]:
    """One line a lemon node of the newest weekly report (lambdas/training_analyzer/goodput/
    lemon.py), with what to do; one ok line where it names none."""
    unreadable = _unreadable("lemon-nodes", facts, "lemon_nodes")
    if unreadable:
        return [unreadable]
    if facts.lemons is None:
        return []
    if not facts.lemons:
        return [
            Check(
                "lemon-nodes",
                Verdict.OK,
                f"no node fails, slows jobs or breaks GPUs at {LEMON_SCORE:g}x the fleet's "
                f"rate over {WINDOW_DAYS} days (report {facts.report_week})",
            )
        ]
    return [
        Check(
            f"lemon-node:{lemon['node']}",
            Verdict.WARN,
            f"{float(lemon.get('score') or 0):.2f}x the fleet's failures, fail-slows and XIDs "
            f"per GPU-hour over {WINDOW_DAYS} days: {lemon.get('failures', 0)} failed runs, "
            f"{lemon.get('fail_slows', 0)} fail-slows, {lemon.get('xids', 0)} XIDs on "
            f"{float(lemon.get('gpu_hours') or 0):,.1f} GPU-hours "
            f"(report {facts.report_week})",
            str(lemon.get("action", "")),
        )
        for lemon in facts.lemons
    ]


def run_checks(facts: Facts) -> list[Check]:
    """Every check, in the order the data flows: stacks, add-on, metrics, alarms, topics,
    analyzers."""
    checks = [check_stacks(facts), check_addon(facts), check_container_insights(facts)]
    if facts.exporter:
        checks.append(check_exporter(facts))
    checks += check_silence_coverage(
        facts.silence_uncovered,
        exporter=facts.exporter,
        silence_check=facts.silence_check,
        unreadable=facts.unreadable.get("silence_coverage"),
        command="status",
    )
    if facts.node_repair is not None or "node_repair" in facts.unreadable:
        checks += check_node_repair(
            facts.node_repair, unreadable=facts.unreadable.get("node_repair"), command="status"
        )
    checks.append(check_alarms(facts))
    if facts.serving_missing is not None or "serving_series" in facts.unreadable:
        checks.append(
            check_serving_series(
                facts.serving_missing or (), unreadable=facts.unreadable.get("serving_series")
            )
        )
    checks += [check_topic(facts, purpose) for purpose in TOPIC_OUTPUTS]
    if facts.stacks.get(ANALYZERS, Stack("", "")).outputs.get(REPORT_BUCKET_NAME) or (
        "report_bucket" in facts.unreadable
    ):
        checks += [check_analyzer(facts, a) for a in ANALYZERS_RUN]
        checks.append(check_report(facts))
        checks += check_lemons(facts)
    else:
        checks.append(
            Check(
                "report-bucket",
                Verdict.FAIL,
                f"the {ANALYZERS} stack names no {REPORT_BUCKET_NAME}: analyzers not checked",
                "deploy the stacks",
            )
        )
    return checks
