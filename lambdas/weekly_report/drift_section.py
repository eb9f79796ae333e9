"""The report's traffic drift: each served model whose traffic moved from its own past this
week (the training analyzer's daily ``serving_drift`` findings, docs/drift.md), with what moved
on its latest day, since when, on how many days, and what it usually means. Pure: figures from
the week's findings, their HTML section and the summary's one line. Names are the cluster's
users' (a model's name is any UTF-8 its server was started with): shown on one line, cut, and
escaped by the report's table.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from lambdas.shared.findings import Kind
from lambdas.weekly_report.html_table import html_table
from lambdas.weekly_report.serving_section import one_line, shown_name

KIND: Final = str(Kind.SERVING_DRIFT)
HEADERS: Final = ("Model", "Namespace", "What moved (latest day)", "Since", "Days", "Baseline",
                  "What it usually means")  # fmt: skip


def _since(finding: Mapping[str, Any]) -> str:
    """The earliest hour a finding's signals drifted from, else its day as a whole."""
    evidence = finding.get("evidence") or {}
    signals = evidence.get("signals") or {}
    hours = sorted(
        str(s["since"]) for s in signals.values() if isinstance(s, Mapping) and s.get("since")
    )
    return hours[0] if hours else str(evidence.get("day", ""))


def drift_figures(findings: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One entry per model that drifted this week, its days' findings read together: the days,
    the first hour it drifted from, and its latest day's moves and advice."""
    by_model: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for f in findings:
        evidence = f.get("evidence")
        if f.get("kind") != KIND or not isinstance(evidence, Mapping):
            continue
        by_model[(str(evidence.get("namespace", "")), str(evidence.get("model", "")))].append(f)
    found = []
    for (namespace, model), unordered in sorted(by_model.items()):
        days = sorted(unordered, key=lambda f: str(f["evidence"].get("day", "")))
        latest = days[-1]
        moved = latest["evidence"].get("moved")
        found.append(
            {
                "namespace": namespace,
                "model": model,
                "days": sorted({str(f["evidence"].get("day", "")) for f in days}),
                "since": min(_since(f) for f in days),
                "moved": [str(m) for m in moved] if isinstance(moved, list) else [],
                "baseline": str(latest["evidence"].get("baseline", "")),
                "recommendation": str(latest.get("recommendation") or ""),
            }
        )
    return found


def drift_section(drift: Sequence[Mapping[str, Any]]) -> str:
    """The HTML section, or nothing where no model drifted."""
    if not drift:
        return ""
    rows = (
        [
            shown_name(d["model"]),
            shown_name(d["namespace"]),
            "; ".join(d["moved"]),
            d["since"],
            str(len(d["days"])),
            str(d.get("baseline") or ""),
            d["recommendation"],
        ]
        for d in drift
    )
    return (
        '<h2 id="drift">Traffic drift</h2><p class="relates">Each served model\'s prompt and '
        "generation lengths and finish reasons (and the quality proxy, where sent), hour by "
        "hour, against the same hours of the weeks before (of the days before, for a model "
        "served less than a week: its baseline); a model listed moved by more than "
        "chance allows at its traffic and by enough to act on (docs/drift.md).</p>"
        + html_table(HEADERS, rows, {4}, {3})
    )


def drift_line(drift: Sequence[Mapping[str, Any]]) -> str | None:
    """The summary's line: the models that drifted, or None."""
    if not drift:
        return None
    return one_line(
        f"Traffic drift: {len(drift)} model(s) moved from their past: "
        + ", ".join(f"{shown_name(d['model'])} since {d['since']}" for d in drift[:3])
    )
