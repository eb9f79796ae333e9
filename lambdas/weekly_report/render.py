"""The report as one self-contained HTML page (no script, style sheet, font or image fetched)
and as a short plain-text summary for SNS."""

from html import escape
from typing import Any

from lambdas.training_analyzer.gpu_hours.findings import HOURS_PER_MONTH
from lambdas.weekly_report.charts import bar_chart, line_chart
from lambdas.weekly_report.drift_section import drift_line, drift_section
from lambdas.weekly_report.failures_section import failures_section
from lambdas.weekly_report.figures import WeekFigures, class_key, headline
from lambdas.weekly_report.funnel_section import funnel_section
from lambdas.weekly_report.goodput_section import goodput_section
from lambdas.weekly_report.html_table import breakable, html_table, number_cell, table, text_cell
from lambdas.weekly_report.job_waste import HOURS_PER_WEEK
from lambdas.weekly_report.lemon_section import lemon_section
from lambdas.weekly_report.memory_section import memory_section
from lambdas.weekly_report.serving_section import one_line, serving_line, serving_section
from lambdas.weekly_report.waste_section import CLASS_NAMES, relation, waste_section

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:60rem;
padding:1rem;color:#111;line-height:1.45}
h1{font-size:1.6rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ccc}
table{border-collapse:collapse;width:100%;margin:.5rem 0;font-size:.9rem}
th,td{border:1px solid #bbb;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#eef2f7}.num{text-align:right}td.num,.when{white-space:nowrap}
.tiles{display:flex;flex-wrap:wrap;gap:.5rem}
.tile{border:1px solid #bbb;border-radius:.4rem;padding:.5rem .8rem;min-width:10rem;flex:1}
.tile b{display:block;font-size:1.4rem}.chart{width:100%;height:auto;max-width:40rem}
.sev-critical{font-weight:bold}.sev-critical::before{content:"\\25B2 "}
.sev-warning::before{content:"\\25CF "}.sev-info::before{content:"\\25CB "}
.actions li{margin:.4rem 0}.relates{color:#333;font-size:.9rem}
@media (max-width:64rem){table{font-size:.78rem}th,td{padding:.25rem}}
@media print{body{max-width:none}h2{break-after:avoid}.chart,table{break-inside:avoid}}
"""


def _money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.0f}"


def _hours(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}%"


def _delta(figures: WeekFigures, name: str, unit: str = "") -> str:
    change = figures.change(name)
    if change is None:
        # A figure this week that last week did not have (its analyzer did not run, or it
        # predates the figure) is new, not "up" on a zero.
        has_now = headline(figures).get(name) is not None
        return "new" if has_now else "no figure for the week before"
    word = "up" if change > 0 else "down" if change < 0 else "unchanged"
    return f"{word} {abs(change):,.1f}{unit} on the week before" if change else "unchanged"


def _finding_row(x: dict[str, Any]) -> str:
    severity = str(x.get("severity"))
    cells = [
        text_cell(severity, f"sev-{escape(severity)}"),
        f"<td>{breakable(str(x['kind']))}<br><small>{breakable(str(x.get('summary', '')))}"
        "</small></td>",
        text_cell(x.get("resource", "")),
        text_cell(x.get("recommendation", "")),
        number_cell(_money(x.get("estimated_monthly_waste_usd"))),
    ]
    return "<tr>" + "".join(cells) + "</tr>"


def _actions(f: WeekFigures) -> str:
    """The report's opening: what to do this week, the most dollars first, with evidence."""
    parts = ['<h2 id="actions">What to do this week</h2>']
    if not f.actions:
        parts.append(
            "<p>Nothing priced this week: no idle GPU capacity, no GPU held without work, no "
            "priced finding.</p>"
        )
        return "".join(parts)
    shown = sum(a["usd"] for a in f.actions)
    price = float(f.waste.get("gpu_hour_usd") or 0.0)
    parts.append(
        relation(
            f"The {len(f.actions)} priced problems worth the most this week, "
            f"${shown:,.0f} of the ${f.priced_waste_usd:,.0f} the week's priced problems add up "
            f"to (about ${f.priced_waste_usd * HOURS_PER_MONTH / HOURS_PER_WEEK:,.0f} a month "
            f"at this pace); each GPU-hour is priced once at ${price:,.2f}: hours no pod held as "
            "idle capacity, a job's held hours without a training step as held without work, "
            "its stepping hours by the training finding that says what they lost, a serving "
            "workload's replicas that served more than their hour needed by its autoscaling "
            "finding on the days it was found (its replicas that served nothing are held "
            "without work), so the figures add up."
        )
    )
    parts.append('<ol class="actions">')
    for a in f.actions:
        parts.append(
            f"<li><b>{escape(_money(a['usd']))} this week</b>: <b>{escape(a['title'])}</b>"
            f"<br>{escape(a['what_to_do'])}<br><small>Evidence: {escape(a['evidence'])}"
            "</small></li>"
        )
    parts.append("</ol>")
    return "".join(parts)


def _tile(name: str, value: str, delta: str) -> str:
    return (
        f'<div class="tile">{escape(name)}<b>{escape(value)}</b>'
        f"<small>{escape(delta)}</small></div>"
    )


def _priced_on(job: dict[str, Any], *bases: str) -> float:
    """What a job's training findings priced on these bases: the week's stepping GPU-hours
    (``week``), or, where it held no GPU the exporter saw, what its goodput measured
    (``goodput``) or its findings did (``finding``)."""
    return sum((p["usd"] for p in job["priced_findings"] if p["basis"] in bases), 0.0)


def _jobs_section(f: WeekFigures) -> str:
    """Training jobs: throughput, and each job's week from the one attribution."""
    parts: list[str] = []
    parts.append('<h2 id="jobs">Training jobs</h2>')
    parts.append(goodput_section(f.goodput))
    parts.append(lemon_section(f.lemons))
    if f.throughput_by_job:
        width = max((len(v) for v in f.throughput_by_job.values()), default=0)
        # One value a day of the week, as f.days has them: dated like the other charts.
        dates = [d["day"][5:] for d in f.days]
        parts.append(
            line_chart(
                "Training throughput by job (samples/s, by day)",
                dates if len(dates) == width else [str(i + 1) for i in range(width)],
                f.throughput_by_job,
            )
        )
    if f.costliest_jobs:
        parts.append(
            relation(
                "The training jobs that held the most this week (up to five, the jobs the "
                "training analyzer saw), from the same attribution as the tables above: held, "
                "the hours of them it stepped in (its emitter reported steps) and those held "
                "without work; n/a where its pods held no GPU the exporter reported."
            )
        )
        parts.append(
            html_table(
                [
                    "Job",
                    "GPU-hours held (week)",
                    "of them stepping",
                    "of them held without work",
                    "Cost held (week)",
                ],
                [
                    [
                        j["job"],
                        _hours(j["held_gpu_hours"]),
                        _hours(j["stepping_gpu_hours"]),
                        _hours(j["not_working_gpu_hours"]),
                        _money(j["held_usd"]),
                    ]
                    for j in f.costliest_jobs
                ],
                {1, 2, 3, 4},
            )
        )
    if f.most_wasteful_jobs:
        parts.append('<h3 id="wasteful-jobs">Jobs that wasted most</h3>')
        parts.append(
            relation(
                "The jobs with the most waste this week (up to five), training jobs or not: a "
                "job the attribution inferred from its pods' names (a notebook) is here and not "
                "in the table above, and a training job there with no waste is not here. Waste "
                "is held without work (the first job table's cost) plus waiting while stepping "
                "(the share of its stepping GPU-hours its training findings say was lost), or, "
                "for a job whose pods held no GPU the exporter reported, the GPU-hours of its "
                "findings' badput that its goodput measured (or its findings' own lookback "
                "without one), at most what it held; each GPU-hour priced once, each part one "
                "of the week's priced problems (the five worth most are above)."
            )
        )
        parts.append(
            html_table(
                [
                    "Job",
                    "Held without work (week)",
                    "Waiting while stepping (week)",
                    "Measured by its goodput or findings (no GPU-hours seen)",
                    "Waste (week)",
                ],
                [
                    [
                        j["job"] + (" (inferred)" if j.get("inferred") else ""),
                        _money(j["held_not_working_usd"]),
                        _money(_priced_on(j, "week") if j["in_attribution"] else None),
                        _money(
                            None if j["in_attribution"] else _priced_on(j, "goodput", "finding")
                        ),
                        _money(j["waste_usd"]),
                    ]
                    for j in f.most_wasteful_jobs
                ],
                {1, 2, 3, 4},
            )
        )
    if not (f.costliest_jobs or f.throughput_by_job or f.goodput.get("jobs")):
        parts.append("<p>No training job reported metrics.</p>")
    return "".join(parts)


def _incidents_and_findings(f: WeekFigures) -> str:
    """XIDs, alarms raised and the findings, each table with how it relates."""
    parts = ['<h2 id="xids">XID errors</h2>']
    if f.xids:
        parts.append(
            relation(
                "XIDs the exporter counted this week, per node and code; a GPU lost after one "
                "counts as lost or faulted above, and the alarms that went off are the next "
                "table's."
            )
        )
    parts.append(
        html_table(
            ["Node", "XID code", "Count"],
            [[x["node"], x["code"], f"{x['count']:,.0f}"] for x in f.xids],
            {2},
        )
        if f.xids
        else "<p>No XID errors.</p>"
    )
    parts.append('<h2 id="alarms">Alarms raised</h2>')
    if f.alarms:
        parts.append(
            relation(
                "Each alarm that went into ALARM this week and when, from the alarms' history: "
                "an XID or a lost GPU above with no alarm here went into no alarm's history."
            )
        )
    parts.append(
        html_table(["Alarm", "Time (UTC)"], [[a["alarm"], a["time"]] for a in f.alarms], when={1})
        if f.alarms
        else "<p>No alarm went into ALARM.</p>"
    )
    parts.append('<h2 id="findings">Top findings</h2>')
    if f.top_findings:
        parts.append(
            relation(
                "Each finding as its analyzer wrote it, the latest per resource, with its own "
                "monthly estimate over the window it looked at (a day for GPUs held without "
                "work, the lookback for training findings); the actions above price the same "
                "problems on this week's GPU-hours, once each: add those, not this column."
            )
        )
        headers = ["Severity", "Finding", "Resource", "What to do", "Its estimate a month"]
        parts.append(table(headers, (_finding_row(x) for x in f.top_findings), {4}))
        parts.append(
            relation(
                "Every finding of the week by kind, the latest per resource: the table above "
                "shows the first ten of them."
            )
        )
        parts.append(
            html_table(["Kind", "Count"], [[k, n] for k, n in f.findings_by_kind.items()], {1})
        )
    else:
        parts.append("<p>No findings this week.</p>")
    return "".join(parts)


def html_report(figures: WeekFigures, *, link: str | None = None) -> str:
    f = figures
    title = f"GPU week {f.week}: {f.cluster}"
    # GPU-hours and each class's: the waste table's figures, so they add up and agree.
    tiles = [
        ("GPU-hours", f"{f.gpu_hours:,.0f}", _delta(f, "gpu_hours")),
        *(
            (
                f"GPU-hours {CLASS_NAMES[c]}",
                f"{f.gpu_hour_classes.get(c, 0.0):,.0f} ({_money(f.gpu_hour_cost_usd.get(c))})",
                _delta(f, class_key(c)),
            )
            for c in CLASS_NAMES
        ),
        (
            "Power against the limit",
            _pct(f.power_utilization),
            _delta(f, "power_utilization", " points"),
        ),
        ("SM activity", _pct(f.sm_active), _delta(f, "sm_active", " points")),
        (
            "Storage waste a month",
            _money(f.storage_waste_usd),
            _delta(f, "storage_waste_usd", " USD"),
        ),
    ]
    parts = [
        '<!doctype html><html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body><main>",
        f"<h1>{escape(title)}</h1>",
    ]
    if not f.has_data:
        parts.append(
            "<p><strong>No GPU data and no findings this week.</strong> Either the "
            "cluster ran nothing, or the exporter and the analyzers did not run: check "
            "the stacks' Lambda failure queues.</p>"
        )
    # What to do first, then the week's figures, then the tables they come from.
    parts.append(_actions(f))
    parts.append('<h2 id="headline">Headline</h2>')
    parts.append(
        relation(
            "Every GPU-hour of the week falls in one of the four classes below; they add up to "
            "the week's GPU-hours and are the figures of the tables that follow."
        )
    )
    parts.append('<div class="tiles">')
    parts += [_tile(name, value, delta) for name, value, delta in tiles]
    parts.append("</div>")
    parts.append(waste_section(f.waste))
    parts.append(funnel_section(f.funnel))
    if f.days:
        days = [d["day"][5:] for d in f.days]
        parts.append('<h2 id="gpus">GPUs</h2>')
        parts.append(
            relation(
                "The same classes day by day, with the exporter's power and SM activity: the "
                "days add up to the week's figures above."
            )
        )
        parts.append(
            line_chart(
                "Power against the limit and SM activity by day",
                days,
                {
                    "power %": [d["power_utilization"] for d in f.days],
                    "SM active %": [d["sm_active"] for d in f.days],
                },
                unit="%",
                y_max=100,
            )
        )
        parts.append(
            bar_chart(
                "GPU-hours held but not working by day",
                days,
                [d["held_not_working"] for d in f.days],
            )
        )
        parts.append(
            html_table(
                ["Day", "GPU-hours", *CLASS_NAMES.values(), "Power %", "SM active %"],
                [
                    [
                        d["day"],
                        f"{d['gpu_hours']:,.1f}",
                        *(f"{d[c]:,.1f}" for c in CLASS_NAMES),
                        _pct(d["power_utilization"]),
                        _pct(d["sm_active"]),
                    ]
                    for d in f.days
                ],
                set(range(1, 3 + len(CLASS_NAMES))),
                when={0},
            )
        )
    parts.append(_incidents_and_findings(f))
    if f.malformed_finding_lines:
        parts.append(
            f"<p><strong>{f.malformed_finding_lines} malformed finding line(s)</strong> in "
            f"{f.finding_files} file(s) were skipped.</p>"
        )
    if f.malformed_job_costs:
        parts.append(
            f"<p><strong>{f.malformed_job_costs} unreadable job-cost entr(ies)</strong> "
            "were skipped.</p>"
        )
    parts.append(_jobs_section(f))
    parts.append(failures_section(f.failures))
    parts.append(memory_section(f.memory_jobs))
    parts.append(serving_section(f.serving))
    parts.append(drift_section(f.drift))
    if link:
        parts.append(f'<p><a href="{escape(link)}">This report in the report bucket</a></p>')
    parts.append("</main></body></html>")
    return "".join(parts)


def text_summary(figures: WeekFigures, *, link: str, top: int = 5) -> str:
    f = figures
    lines = [
        f"GPU week {f.week} for {f.cluster}",
        *(
            [
                f"What to do this week (${f.priced_waste_usd:,.0f} priced, each GPU-hour once):",
                *(f"- {_money(a['usd'])}: {one_line(str(a['title']))}" for a in f.actions[:3]),
            ]
            if f.actions
            else []
        ),
        f"GPU-hours {f.gpu_hours:,.0f}: "
        + ", ".join(
            f"{CLASS_NAMES[c]} {f.gpu_hour_classes.get(c, 0.0):,.0f}"
            f" ({_money(f.gpu_hour_cost_usd.get(c))})"
            for c in CLASS_NAMES
        )
        + f"; power against the limit {_pct(f.power_utilization)}; "
        f"SM activity {_pct(f.sm_active)}; storage waste {_money(f.storage_waste_usd)} a month.",
        f"XID errors: {sum(x['count'] for x in f.xids):,.0f}; alarms raised: {len(f.alarms)}.",
    ]
    if f.waste.get("days"):
        idle = f.waste["classes"].get("held_not_working", 0.0)
        cost = f.waste["cost_usd"].get("held_not_working", 0.0)
        top_ns = [n for n in f.waste["namespaces"] if n["not_working_gpu_hours"] > 0][:3]
        lines.insert(
            len(lines) - 2,
            f"GPUs held without work: {idle:,.1f} GPU-hours ({_money(cost)})"
            + (
                "; most in "
                + ", ".join(f"{n['namespace']} (${n['held_not_working_usd']:,.0f})" for n in top_ns)
                if top_ns
                else ""
            )
            + ".",
        )
    for line in (serving_line(f.serving), drift_line(f.drift)):
        if line:
            lines.insert(len(lines) - 1, line)
    if f.top_findings:
        lines.append("Top findings:")
        lines += [
            # A finding's summary names what it is about (a job, a volume): one line each.
            one_line(f"- [{x.get('severity')}] {x['kind']}: {x.get('summary', '')}")
            for x in f.top_findings[:top]
        ]
    else:
        lines.append("No findings this week.")
    lines.append(f"Report: {link}")
    return "\n".join(lines)
