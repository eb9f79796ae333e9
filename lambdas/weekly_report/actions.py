"""What to do this week: the priced problems of the week, the most dollars first, each with
what to do and the evidence behind it. Pure.

Every action prices GPU-hours of this week once, so the actions add up:

- a job's GPU-hours held without work (the attribution's, per namespace and job), with its
  ``gpu_held_not_working`` finding as evidence where one was written;
- a job's training findings, on the share of its stepping GPU-hours they say was lost, or,
  where its pods held no GPU the exporter reported, on the GPU-hours its goodput measured
  (lambdas/weekly_report/job_waste.py);
- a serving workload's autoscaling finding, on the days of the week it was found: the spare
  hours of its replicas that served (its estimate, a day of it a day), at most the workload's
  held and working GPU-hours, so never the held-without-work hours its idle replicas' action
  prices;
- every other priced finding (storage), a week of its monthly estimate;
- the GPU-hours no pod held (idle capacity), with the nodes that had them.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from lambdas.shared.findings import Kind
from lambdas.shared.workload_resource import workload_resource
from lambdas.training_analyzer.gpu_hours.findings import HOURS_PER_MONTH, idle_advice
from lambdas.weekly_report.job_waste import TRAINING_PREFIX, week_of

HELD_NOT_WORKING: Final = "gpu_held_not_working"
AUTOSCALING: Final = str(Kind.SERVING_AUTOSCALING)
#: How an action names the problem of each kind it prices.
TITLES: Final = {
    "training_data_bound": "waits for data",
    "training_slow_checkpoint": "stalls on checkpoint saves",
    "training_gpu_underutilized": "under-uses its GPUs while stepping",
    "ebs_idle_volume": "idle EBS volume",
    "ebs_overprovisioned_iops": "EBS IOPS paid for and not used",
    "ebs_overprovisioned_throughput": "EBS throughput paid for and not used",
    AUTOSCALING: "replicas fixed: saturated at its peaks, spare off-peak",
}


def _title(kind: str) -> str:
    return TITLES.get(kind, kind.replace("_", " "))


CAPACITY: Final = (
    "Scale down or consolidate the GPU nodes whose GPUs no pod holds (Karpenter "
    "consolidation, a lower node group minimum or desired size), or move queued work onto "
    "them; an unheld GPU-hour is paid for as a working one."
)
#: How many nodes the idle-capacity action names.
CAPACITY_NODES: Final = 5


def _capacity_action(waste: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The GPU-hours no pod held (the attribution's ``not_held`` class), priced like any other
    action, with the nodes that had the most of them."""
    hours = float((waste.get("classes") or {}).get("not_held") or 0.0)
    usd = float((waste.get("cost_usd") or {}).get("not_held") or 0.0)
    if hours <= 0 or usd <= 0:
        return []
    nodes = dict(waste.get("not_held_by_node") or {})
    named = list(nodes.items())[:CAPACITY_NODES]
    evidence = f"{hours:,.1f} GPU-hours of the week no pod held"
    if named:
        evidence += (
            f", on {len(nodes)} node(s): "
            + ", ".join(f"{node} {float(h):,.1f}" for node, h in named)
            + (f" and {len(nodes) - len(named)} more" if len(nodes) > len(named) else "")
        )
    return [
        {
            "title": f"idle GPU capacity: {hours:,.1f} GPU-hours not held by any pod",
            "usd": round(usd, 2),
            "gpu_hours": round(hours, 2),
            "what_to_do": CAPACITY,
            "evidence": evidence,
            "finding": None,
        }
    ]


def _held_actions(
    waste: Mapping[str, Any], latest: Mapping[tuple[str, str], Mapping[str, Any]]
) -> list[dict[str, Any]]:
    actions = []
    for row in waste.get("all_jobs", []):
        usd = float(row.get("held_not_working_usd") or 0.0)
        if usd <= 0:
            continue
        namespace, job = str(row["namespace"]), str(row["job"])
        kind = str(row.get("kind") or "")
        resource = workload_resource(namespace, job, kind)
        finding = latest.get((HELD_NOT_WORKING, resource))
        idle = float(row.get("not_working_gpu_hours") or 0.0)
        stepping = float(row.get("stepping_gpu_hours") or 0.0)
        inferred = bool(row.get("inferred"))
        evidence = (
            f"its pods held GPUs for {float(row.get('held_gpu_hours') or 0.0):,.1f} GPU-hours "
            f"this week, {idle:,.1f} of them under the thresholds"
            + ("" if inferred else f" and without a training step (it stepped in {stepping:,.1f})")
            + ("; its job inferred from its pods' names" if inferred else "")
        )
        if finding is not None:
            evidence += f". {HELD_NOT_WORKING} {resource}: {finding.get('summary', '')}"
        actions.append(
            {
                "title": f"{namespace} / {job}: {idle:,.1f} GPU-hours held without work",
                "usd": round(usd, 2),
                "gpu_hours": round(idle, 2),
                "what_to_do": str(finding.get("recommendation"))
                if finding
                else idle_advice(job, kind, inferred=inferred),
                "evidence": evidence,
                "finding": f"{HELD_NOT_WORKING} {resource}" if finding else None,
            }
        )
    return actions


def _training_actions(
    jobs: Sequence[Mapping[str, Any]], latest: Mapping[tuple[str, str], Mapping[str, Any]]
) -> list[dict[str, Any]]:
    actions = []
    for row in jobs:
        for priced in row.get("priced_findings", []):
            if priced["usd"] <= 0:
                continue
            finding = latest.get((priced["kind"], priced["resource"]), {})
            if priced["basis"] == "week":
                basis = (
                    f"{priced['share']:.0%} of its {float(row['stepping_gpu_hours']):,.1f} "
                    "stepping GPU-hours this week"
                )
            elif priced["basis"] == "goodput":
                basis = (
                    f"{priced['gpu_hours']:,.2f} of the {float(row['goodput_held_gpu_hours']):,.2f}"
                    " GPU-hours its goodput says it held this week (its pods held no GPU the "
                    "exporter reported)"
                )
            else:
                basis = (
                    "what the finding measured in its lookback (its pods held no GPU the "
                    "exporter reported this week, and no goodput was read for it)"
                )
            actions.append(
                {
                    "title": f"{row['job']}: {_title(priced['kind'])}",
                    "usd": priced["usd"],
                    "gpu_hours": priced["gpu_hours"],
                    "what_to_do": str(finding.get("recommendation", "")),
                    "evidence": f"{basis}. {priced['kind']} {priced['resource']}: "
                    f"{finding.get('summary', '')}",
                    "finding": f"{priced['kind']} {priced['resource']}",
                }
            )
    return actions


def _day_key(finding: Mapping[str, Any]) -> str:
    """The day a daily finding covers: its evidence's, else the day it was detected on."""
    evidence = finding.get("evidence") or {}
    return str(evidence.get("day") or str(finding.get("detected_at", ""))[:10])


def _working_hours(waste: Mapping[str, Any]) -> dict[str, float]:
    """Each workload's held and working GPU-hours of the week, by its findings' resource."""
    working: dict[str, float] = {}
    for row in waste.get("all_jobs", []):
        name = workload_resource(str(row["namespace"]), str(row["job"]), str(row.get("kind", "")))
        working[name] = working.get(name, 0.0) + float(row.get("working_gpu_hours") or 0.0)
    return working


def _serving_actions(
    waste: Mapping[str, Any],
    latest: Mapping[tuple[str, str], Mapping[str, Any]],
    week: Iterable[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Each workload's ``serving_autoscaling`` finding on the days it was found (a day of its
    monthly estimate each, in GPU-hours at its own price), at most the workload's held and
    working GPU-hours: its idle replicas' hours are not working, the held-without-work
    action's."""
    days: dict[str, dict[str, float]] = {}
    for finding in week:
        monthly = finding.get("estimated_monthly_waste_usd")
        at = float((finding.get("evidence") or {}).get("gpu_hour_usd") or 0.0)
        if finding.get("kind") != AUTOSCALING or not monthly or at <= 0:
            continue
        found = days.setdefault(str(finding.get("resource", "")), {})
        found[_day_key(finding)] = float(monthly) * 24 / HOURS_PER_MONTH / at
    price = float(waste.get("gpu_hour_usd") or 0.0)
    working = _working_hours(waste)
    actions = []
    for resource, by_day in sorted(days.items()):
        finding = latest[(AUTOSCALING, resource)]
        hours = sum(by_day.values())
        if resource in working:
            hours = min(hours, working[resource])
        at = price or float(finding["evidence"]["gpu_hour_usd"])
        evidence = (
            f"{hours:,.1f} GPU-hours on the {len(by_day)} day(s) it was found "
            f"({', '.join(sorted(by_day))}): replicas that served more than the hour needed, "
            "held and working; its replicas that served nothing are held without work, that "
            "action's hours, not these"
        )
        actions.append(
            {
                "title": f"{resource}: {_title(AUTOSCALING)}",
                "usd": round(hours * at, 2),
                "gpu_hours": round(hours, 2),
                "what_to_do": str(finding.get("recommendation", "")),
                "evidence": f"{evidence}. {AUTOSCALING} {resource}: {finding.get('summary', '')}",
                "finding": f"{AUTOSCALING} {resource}",
            }
        )
    return actions


def _other_actions(findings: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    actions = []
    for finding in findings:
        kind = str(finding["kind"])
        monthly = finding.get("estimated_monthly_waste_usd")
        if kind.startswith(TRAINING_PREFIX) or kind in (HELD_NOT_WORKING, AUTOSCALING):
            continue
        if not monthly:
            continue
        resource = str(finding.get("resource", ""))
        actions.append(
            {
                "title": f"{resource}: {_title(kind)}",
                "usd": round(week_of(float(monthly)), 2),
                "gpu_hours": None,
                "what_to_do": str(finding.get("recommendation", "")),
                "evidence": f"a week of ${float(monthly):,.0f} a month. {kind} {resource}: "
                f"{finding.get('summary', '')}",
                "finding": f"{kind} {resource}",
            }
        )
    return actions


def week_actions(
    waste: Mapping[str, Any],
    jobs: Sequence[Mapping[str, Any]],
    findings: Sequence[Mapping[str, Any]],
    week: Sequence[Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Every priced action of the week, the most dollars first. ``jobs`` are
    ``job_rows(...)``; ``findings`` the week's latest finding per kind and resource; ``week``
    every finding of the week, each day's (``findings`` where not given)."""
    latest = {(str(f["kind"]), str(f.get("resource", ""))): f for f in findings}
    actions = [
        *_capacity_action(waste),
        *_held_actions(waste, latest),
        *_training_actions(jobs, latest),
        *_serving_actions(waste, latest, findings if week is None else week),
        *_other_actions(findings),
    ]
    return sorted(actions, key=lambda a: (-a["usd"], a["title"]))
