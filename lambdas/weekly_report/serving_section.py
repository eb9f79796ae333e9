"""The report's inference serving: per model and the workload that serves it, the week's
GPU-hours, cost, requests and tokens from the training analyzer's daily serving tables
(lambdas/shared/serving_table.py), the cost per million output tokens this week and last with
the change, and the week's serving findings with their dollars. Pure: figures from the tables'
texts, their HTML section, their CSV and the summary's one line.

A day whose table is missing is a gap the section names; a table that cannot be read
(``ServingTableError``) is skipped and named, so a week is never priced on a half-read file.
Cost per million output tokens is the summed cost over the summed generated tokens of the
days read (not a mean of daily prices), so a quiet day weighs what it cost.
"""

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from html import escape
from typing import Any, Final

from lambdas.shared.findings import Kind
from lambdas.shared.serving_table import ServingRow, ServingTableError, decode, usd_per_million
from lambdas.weekly_report.html_table import html_table
from lambdas.weekly_report.spreadsheet import csv_table

#: The findings this section lists: the training analyzer's serving kinds
#: (``serving_overprovisioned``, ``serving_saturated``, and any it adds), read by prefix.
FINDING_PREFIX: Final = "serving_"
#: Serving kinds with a section of their own, not listed twice: drift (drift_section.py).
OWN_SECTION: Final = frozenset({str(Kind.SERVING_DRIFT)})
#: The section's CSV, beside report.csv under the week's prefix: one row per model and workload.
SERVING_CSV: Final = "serving.csv"
#: The figures a (namespace, workload, kind, model) adds up over its days; replicas is a max.
SUMS: Final = ("gpu_hours", "cost_usd", "requests", "prompt_tokens", "generation_tokens")
#: Decimal places kept of a price per million tokens (a cent's hundredth).
PRICE_DIGITS: Final = 4
COLUMNS: Final = (
    "cluster",
    "week",
    "namespace",
    "workload",
    "kind",
    "model",
    "replicas",
    "gpu_hours",
    "cost_usd",
    "requests",
    "prompt_tokens",
    "generation_tokens",
    "usd_per_million_output_tokens",
    "last_week_usd_per_million_output_tokens",
    "change_percent",
)

#: Characters of a name (model, workload) the HTML and the summary show. A model's name is
#: whatever its server was started with (vLLM's ``--served-model-name``, a Prometheus label
#: value: any UTF-8), so it is shown on one line and cut; the CSV and JSON keep it whole.
NAME_CHARS: Final = 200
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")

_PRICES: Final = ("GPU-hours", "Cost", "Output tokens", "$ per M output tokens", "Last week",
                  "Change")  # fmt: skip
MODEL_HEADERS: Final = ("Model", *_PRICES)
WORKLOAD_HEADERS: Final = ("Namespace", "Workload", "Kind", "Model", "Replicas (most)",
                           "GPU-hours", "Cost", "Requests", *_PRICES[2:])  # fmt: skip


@dataclass
class ServingDays:
    """A week of serving tables as read: the rows of every day read, the days with no table,
    and each table that could not be read with why."""

    rows: list[ServingRow] = field(default_factory=list)
    read: list[date] = field(default_factory=list)
    missing: list[date] = field(default_factory=list)
    unreadable: dict[date, str] = field(default_factory=dict)
    #: Rows skipped in the days read, each (day, why): the day's other rows are kept.
    skipped_rows: list[tuple[date, str]] = field(default_factory=list)


def read_days(bodies: Mapping[date, bytes | None]) -> ServingDays:
    """Each day's table text (None: no table) decoded; a table that does not decode, or that
    says it is another day's, is skipped and named."""
    week = ServingDays()
    for day, body in sorted(bodies.items()):
        if body is None:
            week.missing.append(day)
            continue
        try:
            table = decode(body)
        except ServingTableError as error:
            week.unreadable[day] = str(error)
            continue
        if table.day != day:
            week.unreadable[day] = f"the table at this day's key says it is {table.day.isoformat()}"
            continue
        week.read.append(day)
        week.rows += table.rows
        week.skipped_rows += [(day, why) for why in table.skipped]
    return week


def _key(row: ServingRow) -> tuple[str, str, str, str]:
    return (row.namespace, row.workload, row.kind, row.model)


def _totals(rows: Iterable[ServingRow], key: Any) -> dict[Any, dict[str, float]]:
    totals: dict[Any, dict[str, float]] = {}
    for row in rows:
        sums = totals.setdefault(key(row), dict.fromkeys((*SUMS, "replicas"), 0.0))
        for name in SUMS:
            sums[name] += getattr(row, name)
        sums["replicas"] = max(sums["replicas"], row.replicas)
    return totals


def per_million(cost_usd: float, tokens: float, gpu_hours: float) -> float | None:
    """The table's price per million output tokens, to a cent's hundredth."""
    price = usd_per_million(cost_usd, tokens, gpu_hours)
    return None if price is None else round(price, PRICE_DIGITS)


def _change_percent(now: float | None, before: float | None) -> float | None:
    if now is None or before is None or before == 0:
        return None
    return round((now - before) / before * 100, 1)


def _priced(
    totals: dict[Any, dict[str, float]], previous: dict[Any, dict[str, float]]
) -> list[tuple[Any, dict[str, Any]]]:
    """Each key's figures with its price this week and last and the change, costliest first."""
    priced = []
    for key, sums in totals.items():
        now = per_million(sums["cost_usd"], sums["generation_tokens"], sums["gpu_hours"])
        before_sums = previous.get(key)
        before = (
            per_million(
                before_sums["cost_usd"], before_sums["generation_tokens"], before_sums["gpu_hours"]
            )
            if before_sums
            else None
        )
        figures: dict[str, Any] = {
            **{name: round(sums[name], 2) for name in SUMS},
            "replicas": int(sums["replicas"]),
            "usd_per_million_output_tokens": now,
            "last_week_usd_per_million_output_tokens": before,
            "change_percent": _change_percent(now, before),
        }
        priced.append((key, figures))
    return sorted(priced, key=lambda kv: (-kv[1]["cost_usd"], kv[0]))


def _latest_serving_findings(findings: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The week's serving findings, each (kind, resource) once from its latest day (the
    analyzer repeats a lasting one daily), the most dollars first."""
    latest: dict[tuple[str, str], Mapping[str, Any]] = {}
    for f in sorted(findings, key=lambda f: str(f.get("detected_at", ""))):
        kind = str(f.get("kind", ""))
        if kind.startswith(FINDING_PREFIX) and kind not in OWN_SECTION:
            latest[(str(f["kind"]), str(f.get("resource", "")))] = f
    rows = [
        {
            "kind": kind,
            "resource": resource,
            "severity": f.get("severity"),
            "summary": f.get("summary"),
            "recommendation": f.get("recommendation"),
            "monthly_usd": f.get("estimated_monthly_waste_usd"),
        }
        for (kind, resource), f in latest.items()
    ]
    return sorted(rows, key=lambda r: (-(r["monthly_usd"] or 0.0), r["kind"], r["resource"]))


def serving_figures(
    week: ServingDays, last_week: ServingDays, findings: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The report's ``serving`` object: workloads (per namespace, workload, kind and model) and
    models (each model over its workloads), the costliest first, the totals, the days read,
    missing and skipped, and the week's serving findings."""
    workloads = [
        {"namespace": ns, "workload": name, "kind": kind, "model": model, **figures}
        for (ns, name, kind, model), figures in _priced(
            _totals(week.rows, _key), _totals(last_week.rows, _key)
        )
    ]
    models = [
        {"model": model, **{k: v for k, v in figures.items() if k != "replicas"}}
        for model, figures in _priced(
            _totals(week.rows, lambda r: r.model), _totals(last_week.rows, lambda r: r.model)
        )
    ]
    cost = sum(r.cost_usd for r in week.rows)
    tokens = sum(r.generation_tokens for r in week.rows)
    hours = sum(r.gpu_hours for r in week.rows)
    return {
        "workloads": workloads,
        "models": models,
        "gpu_hours": round(hours, 2),
        "cost_usd": round(cost, 2),
        "generation_tokens": tokens,
        "usd_per_million_output_tokens": per_million(cost, tokens, hours),
        "days_read": [d.isoformat() for d in week.read],
        "missing_days": [d.isoformat() for d in week.missing],
        "unreadable_days": [
            {"day": d.isoformat(), "error": e} for d, e in sorted(week.unreadable.items())
        ],
        "skipped_rows": [{"day": d.isoformat(), "error": e} for d, e in week.skipped_rows],
        "last_week_days_read": len(last_week.read),
        "findings": _latest_serving_findings(findings),
    }


def has_serving(serving: Mapping[str, Any]) -> bool:
    """The section and the CSV are there only where the week has serving rows or a table it
    could not read: a cluster that serves nothing gets neither."""
    return bool(
        serving.get("workloads") or serving.get("unreadable_days") or serving.get("skipped_rows")
    )


def one_line(text: str) -> str:
    """``text`` on one line: each run of control characters, line breaks included, one space
    (in the plain-text summary a line break would forge a line of its own)."""
    return _CONTROL.sub(" ", text)


def shown_name(name: str) -> str:
    """``name`` on one line (``one_line``), cut to :data:`NAME_CHARS` characters."""
    flat = one_line(name)
    return flat if len(flat) <= NAME_CHARS else flat[: NAME_CHARS - 1] + "…"


def _price(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"


#: How each figure of a model's or workload's row is shown.
_FIGURE_FORMATS: Final = {
    "gpu_hours": "{:,.1f}",
    "cost_usd": "${:,.0f}",
    "requests": "{:,.0f}",
    "generation_tokens": "{:,.0f}",
}


def _figure_cells(row: Mapping[str, Any], figures: Sequence[str]) -> list[str]:
    """The row's ``figures``, then its price this week and last and the change: the columns
    the per-model and per-workload tables share."""
    return [
        *(_FIGURE_FORMATS[name].format(row[name]) for name in figures),
        _price(row["usd_per_million_output_tokens"]),
        _price(row["last_week_usd_per_million_output_tokens"]),
        _change(row),
    ]


def _change(row: Mapping[str, Any]) -> str:
    if row["usd_per_million_output_tokens"] is None:
        return ""
    if row["last_week_usd_per_million_output_tokens"] is None:
        return "new"
    change = row["change_percent"]
    return "n/a" if change is None else f"{change:+.1f}%"


def _gaps(serving: Mapping[str, Any]) -> str:
    said = []
    if serving["missing_days"]:
        said.append(
            f"No serving table for {', '.join(serving['missing_days'])}: those days are not in "
            "the figures."
        )
    for bad in serving["unreadable_days"]:
        said.append(f"The serving table of {bad['day']} was skipped: {bad['error']}.")
    for bad in serving["skipped_rows"]:
        said.append(
            f"In the serving table of {bad['day']}, {bad['error']}: that row was skipped, the "
            "day's others are counted."
        )
    return "".join(f"<p><strong>{escape(s)}</strong></p>" for s in said)


def serving_section(serving: Mapping[str, Any]) -> str:
    """The HTML section, or nothing where the week has no serving rows and no bad table."""
    if not has_serving(serving):
        return ""
    parts = ['<h2 id="serving">Inference serving</h2>']
    if serving["workloads"]:
        parts.append(
            '<p class="relates">'
            + escape(
                f"{serving['gpu_hours']:,.1f} GPU-hours held by inference servers this week, "
                f"${serving['cost_usd']:,.0f} at the deployment's GPU-hour price, "
                f"{_price(serving['usd_per_million_output_tokens'])} per million output tokens "
                "overall. Each model's and workload's price is its cost over the tokens it "
                "generated in the days read; a workload serving several models splits its "
                "GPU-hours between them by their tokens. Last week's price is from "
                f"{serving['last_week_days_read']} day(s) of tables."
            )
            + "</p>"
        )
    parts.append(_gaps(serving))
    if serving["models"]:
        parts.append("<h3>Per model</h3>")
        models = (
            [
                shown_name(m["model"]),
                *_figure_cells(m, ("gpu_hours", "cost_usd", "generation_tokens")),
            ]
            for m in serving["models"]
        )
        parts.append(html_table(MODEL_HEADERS, models, range(1, len(MODEL_HEADERS))))
    if serving["workloads"]:
        parts.append("<h3>Per workload</h3>")
        figures = ("gpu_hours", "cost_usd", "requests", "generation_tokens")
        workloads = (
            [
                *(shown_name(w[k]) for k in ("namespace", "workload", "kind", "model")),
                str(w["replicas"]),
                *_figure_cells(w, figures),
            ]
            for w in serving["workloads"]
        )
        parts.append(html_table(WORKLOAD_HEADERS, workloads, range(4, len(WORKLOAD_HEADERS))))
    if serving["findings"]:
        parts.append("<h3>Serving findings</h3>")
        found = (
            [
                f"{f['kind']}: {f['summary'] or ''}",
                shown_name(f["resource"]),
                f["recommendation"] or "",
                "n/a" if f["monthly_usd"] is None else f"${f['monthly_usd']:,.0f}",
            ]
            for f in serving["findings"]
        )
        headers = ["Finding", "Resource", "What to do", "Its estimate a month"]
        parts.append(html_table(headers, found, {3}))
    return "".join(parts)


def serving_line(serving: Mapping[str, Any]) -> str | None:
    """The SNS summary's line: the cheapest and dearest model per million output tokens, or
    the week's serving cost where no model generated tokens; None without serving rows."""
    if not serving.get("workloads"):
        return None
    priced = [m for m in serving["models"] if m["usd_per_million_output_tokens"] is not None]
    head = f"Serving: {serving['gpu_hours']:,.1f} GPU-hours (${serving['cost_usd']:,.0f})"
    if not priced:
        return f"{head}; no model reported output tokens."
    cheap = min(priced, key=lambda m: (m["usd_per_million_output_tokens"], m["model"]))
    dear = max(priced, key=lambda m: (m["usd_per_million_output_tokens"], m["model"]))
    if cheap is dear:
        return (
            f"{head}; {shown_name(cheap['model'])} "
            f"{_price(cheap['usd_per_million_output_tokens'])} per million output tokens."
        )
    return (
        f"{head}; per million output tokens, cheapest {shown_name(cheap['model'])} "
        f"{_price(cheap['usd_per_million_output_tokens'])}, dearest {shown_name(dear['model'])} "
        f"{_price(dear['usd_per_million_output_tokens'])}."
    )


def serving_csv(serving: Mapping[str, Any], *, cluster: str, week: str) -> str:
    return csv_table(
        COLUMNS,
        ({**row, "cluster": cluster, "week": week} for row in serving.get("workloads", [])),
    )
