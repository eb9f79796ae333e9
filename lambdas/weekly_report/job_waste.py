"""Each job's week, every GPU-hour priced once: pure, from the week's attribution (``waste``,
lambdas/weekly_report/waste.py) and the week's findings.

A job's held GPU-hours fall in one class each (attribution.py). Its hours without work
(``not_working_gpu_hours``: under the thresholds, and no training step) are priced as held
without work. Its stepping hours are held and working; a priced training finding (waiting for
data, a slow checkpoint, GPUs under-used while stepping) says which share of them was lost,
and that share of the week's stepping GPU-hours is its price. A job's training findings
together take at most all of its stepping hours (the largest share first), so no GPU-hour is
priced twice and a job's waste never exceeds what its GPUs cost.

Where the attribution holds no GPU-hour of the job (its pods ran on GPUs the exporter did
not report), its findings are priced on what was measured of it, never extrapolated past it:

- where the week's goodput has the job (``basis: "goodput"``), on the GPU-hours it held by its
  goodput (its total less its waiting for GPUs): a finding takes the GPU-hours its badput
  category measured (checkpoint saves, data loading) or else its share of them, together at
  most what it held;
- otherwise (``basis: "finding"``), on what the finding itself measured: its lookback's waste
  (``waste_in_lookback_usd``), not a week at its pace (a job that ran ten hours would be priced
  past the hours it held).
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from lambdas.training_analyzer.goodput.funnel import NOT_HELD_BADPUT
from lambdas.training_analyzer.gpu_hours.findings import HOURS_PER_MONTH

HOURS_PER_WEEK: Final = 168
TRAINING_PREFIX: Final = "training_"
#: The badput category of each priced training finding's lost share.
BADPUT_OF_FINDING: Final = {
    "training_data_bound": "data_loading",
    "training_slow_checkpoint": "checkpoint_save",
    "training_gpu_underutilized": "gpus_underused_while_stepping",
}


def week_of(monthly: float) -> float:
    """A week of a monthly figure (the findings' month is 730 hours)."""
    return monthly * HOURS_PER_WEEK / HOURS_PER_MONTH


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def lost_share(finding: Mapping[str, Any]) -> float | None:
    """The share of the job's stepping GPU-hours a training finding prices: its waste over
    the cost of the GPU-hours it looked at (its evidence), 0 to 1; None if it is not priced."""
    evidence = finding.get("evidence") or {}
    waste = _number(evidence.get("waste_in_lookback_usd"))
    hours = _number(evidence.get("gpu_hours"))
    price = _number(evidence.get("gpu_hour_usd"))
    if waste is None or not hours or not price or hours <= 0 or price <= 0:
        return None
    return min(1.0, max(0.0, waste / (hours * price)))


def _empty(job: str, inferred: bool) -> dict[str, Any]:
    return {
        "job": job,
        "namespaces": [],
        "inferred": inferred,
        "in_attribution": False,
        "held_gpu_hours": None,
        "stepping_gpu_hours": None,
        "not_working_gpu_hours": None,
        "held_usd": None,
        "held_not_working_usd": None,
        #: What its week's goodput says it held, where the attribution holds none of it.
        "goodput_held_gpu_hours": None,
        "priced_findings": [],
        "waiting_usd": 0.0,
        "waste_usd": 0.0,
    }


def _add_attribution(row: dict[str, Any], attributed: Mapping[str, Any], price: float) -> None:
    row["in_attribution"] = True
    row["namespaces"] = sorted({*row["namespaces"], str(attributed.get("namespace", ""))})
    for field in ("held_gpu_hours", "stepping_gpu_hours", "not_working_gpu_hours"):
        row[field] = round((row[field] or 0.0) + float(attributed.get(field) or 0.0), 2)
    row["held_usd"] = round(row["held_gpu_hours"] * price, 2)
    row["held_not_working_usd"] = round(row["not_working_gpu_hours"] * price, 2)


def _week_share(
    row: Mapping[str, Any], finding: Mapping[str, Any], goodput: Mapping[str, float]
) -> float | None:
    """The share of the job's stepping GPU-hours a finding prices on the week: where the job's
    week of goodput (over the GPU-hours its pods held: goodput_section.py) measured the
    finding's badput, those GPU-hours' share, the one figure the funnel and goodput.csv state;
    else the finding's own share of the hours it looked at (``lost_share``)."""
    share = lost_share(finding)
    measured = goodput.get(BADPUT_OF_FINDING.get(str(finding.get("kind")), ""))
    stepping = float(row.get("stepping_gpu_hours") or 0.0)
    if share is None or measured is None or not row["in_attribution"] or stepping <= 0:
        return share
    return min(1.0, max(0.0, measured / stepping))


def goodput_held(split: Mapping[str, float]) -> float:
    """The GPU-hours a job held by its week's goodput (``goodput_splits``' row): its productive
    hours and every badput but waiting for GPUs (pods pending hold none)."""
    return sum(max(0.0, float(v)) for k, v in split.items() if k != NOT_HELD_BADPUT)


def _lookback_usd(finding: Mapping[str, Any]) -> float:
    return float(_number((finding.get("evidence") or {}).get("waste_in_lookback_usd")) or 0.0)


def _price_findings(
    row: dict[str, Any],
    findings: Sequence[Mapping[str, Any]],
    price: float,
    split: Mapping[str, float] | None = None,
) -> None:
    """The job's priced training findings on the week, the largest share first, together at
    most its stepping GPU-hours (or, on its goodput, at most the GPU-hours it held).
    ``split``: the job's week of goodput in GPU-hours by badput, where it has one: its
    measured badput prices the finding that names it."""
    shared = [
        (share, f) for f in findings if (share := _week_share(row, f, split or {})) is not None
    ]
    held = goodput_held(split) if split and not row["in_attribution"] else 0.0
    if held > 0:
        row["goodput_held_gpu_hours"] = round(held, 2)
    left, hours_left = 1.0, held
    for share, finding in sorted(shared, key=lambda sf: (-sf[0], str(sf[1].get("kind")))):
        taken = min(share, left)
        left -= taken
        kind = str(finding.get("kind"))
        if row["in_attribution"]:
            basis = "week"
            gpu_hours = taken * float(row["stepping_gpu_hours"] or 0.0)
            usd = gpu_hours * price
        elif held > 0:
            basis = "goodput"
            measured = (split or {}).get(BADPUT_OF_FINDING.get(kind, ""))
            wanted = taken * held if measured is None else float(measured)
            gpu_hours = min(max(0.0, wanted), hours_left)
            hours_left -= gpu_hours
            taken = gpu_hours / held
            usd = gpu_hours * price
        else:
            basis = "finding"
            usd = _lookback_usd(finding) * (taken / share) if share else 0.0
            gpu_hours = usd / price if price else 0.0
        row["priced_findings"].append(
            {
                "kind": kind,
                "resource": str(finding.get("resource", "")),
                "share": round(taken, 4),
                "gpu_hours": round(gpu_hours, 2),
                "usd": round(usd, 2),
                "basis": basis,
            }
        )
    row["waiting_usd"] = round(sum((p["usd"] for p in row["priced_findings"]), 0.0), 2)


def job_rows(
    waste: Mapping[str, Any],
    findings: Iterable[Mapping[str, Any]],
    training_jobs: Iterable[str] = (),
    goodput: Mapping[str, Mapping[str, float]] | None = None,
) -> list[dict[str, Any]]:
    """One row per job: the attribution's week (summed over its namespaces), its training
    findings priced on it, and ``waste_usd``, the two added. A name the attribution only
    inferred from a pod name is no training job's: it is a row of its own, marked.
    ``goodput``: each job's week of goodput in GPU-hours by badput (funnel_section.py
    ``goodput_splits``): its measured badput prices the finding that names it, and a job the
    attribution does not hold is priced on it."""
    price = float(waste.get("gpu_hour_usd") or 0.0)
    rows: dict[tuple[str, bool], dict[str, Any]] = {}
    for attributed in waste.get("all_jobs", []):
        inferred = bool(attributed.get("inferred"))
        key = (str(attributed["job"]), inferred)
        _add_attribution(rows.setdefault(key, _empty(*key)), attributed, price)
    by_job: dict[str, list[Mapping[str, Any]]] = {}
    for finding in findings:
        kind, resource = str(finding.get("kind", "")), str(finding.get("resource", ""))
        if kind.startswith(TRAINING_PREFIX) and resource.startswith("job/"):
            by_job.setdefault(resource.removeprefix("job/"), []).append(finding)
    for job in {*training_jobs, *by_job}:
        rows.setdefault((job, False), _empty(job, False))
    for (job, inferred), row in rows.items():
        if not inferred:
            _price_findings(row, by_job.get(job, []), price, (goodput or {}).get(job))
        row["waste_usd"] = round((row["held_not_working_usd"] or 0.0) + row["waiting_usd"], 2)
    return sorted(rows.values(), key=lambda r: (-r["waste_usd"], r["job"], r["inferred"]))
