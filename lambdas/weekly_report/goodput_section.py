"""The training section's lead: the week's fleet goodput (kept steps' work over the GPU-time
the jobs held or waited for), its badput by category, goodput by job size next to the time
between failures at that size, and the jobs with the most badput; from the training
analyzer's daily goodput files (lambdas/training_analyzer/goodput), each day's once. Pure."""

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from lambdas.training_analyzer.goodput.jobs import (
    BADPUT_WORDS,
    HOUR,
    AttemptGoodput,
    Badput,
    JobGoodput,
    Split,
    add,
)
from lambdas.weekly_report.html_table import html_table
from lambdas.weekly_report.spreadsheet import csv_table
from lambdas.weekly_report.waste_section import relation

#: Job sizes, by their GPUs: (most GPUs, name), the last without a bound.
SIZES: Final = ((1, "1 GPU"), (8, "2-8 GPUs"), (64, "9-64 GPUs"), (511, "65-511 GPUs"),
                (math.inf, "512+ GPUs"))  # fmt: skip
#: The jobs the section lists (most badput first); the CSV has them all.
TOP_JOBS: Final = 10
GOODPUT_CSV: Final = "goodput.csv"
COLUMNS: Final = (
    "cluster", "week", "job", "gpus", "size", "goodput", "total_gpu_hours",
    "productive_gpu_hours", *(str(b) + "_gpu_hours" for b in Badput), "failures",
    "running_hours", "mtbf_hours", "attempts", "lowest_attempt_goodput",
)  # fmt: skip


def size_of(gpus: int) -> str:
    return next(name for most, name in SIZES if gpus <= most)


@dataclass
class _Job:
    job: str
    gpus: int = 0
    productive: float = 0.0
    badput: dict[Badput, float] = field(default_factory=lambda: dict.fromkeys(Badput, 0.0))
    failures: int = 0
    running_hours: float = 0.0
    #: Each attempt's GPU-seconds over the week's days, by ``_attempt_key``.
    attempts: dict[tuple[Any, ...], list[Split]] = field(default_factory=dict)
    last_attempt: tuple[Any, ...] | None = None

    def add_attempts(self, day: int, attempts: Iterable[AttemptGoodput]) -> None:
        """A day's attempts: one carrying its labels is the same attempt on every day; else
        the day's first, running when the day began, goes on from the day before's last."""
        for a in attempts:
            if a.labels:
                key: tuple[Any, ...] = ("labels", *a.labels)
            elif a.index == 0 and a.resumed_from is None and self.last_attempt is not None:
                key = self.last_attempt
            else:
                key = ("day", day, a.index)
            self.attempts.setdefault(key, []).append(a.split)
            self.last_attempt = key

    @property
    def total(self) -> float:
        return self.productive + sum(self.badput.values())

    def row(self) -> dict[str, Any]:
        total = self.total
        return {
            "job": self.job,
            "gpus": self.gpus,
            "size": size_of(self.gpus),
            "goodput": self.productive / total if total > 0 else None,
            "total_gpu_hours": total / HOUR,
            "productive_gpu_hours": self.productive / HOUR,
            **{f"{b}_gpu_hours": s / HOUR for b, s in self.badput.items()},
            "failures": self.failures,
            "running_hours": self.running_hours,
            "mtbf_hours": self.running_hours / self.failures if self.failures else None,
            "attempts": len(self.attempts),
            "lowest_attempt_goodput": min(
                (g for g in (add(s).goodput for s in self.attempts.values()) if g is not None),
                default=None,
            ),
        }


def goodput_figures(days: Iterable[Mapping[str, Any] | None]) -> dict[str, Any]:
    """The week's goodput from its days' files (None: a day without one); a job entry that
    cannot be read is counted in ``malformed``, never added."""
    jobs: dict[str, _Job] = {}
    malformed = 0
    for number, day in enumerate(days):
        if day is None:
            continue
        entries = day.get("jobs") if isinstance(day, Mapping) else None
        for entry in entries if isinstance(entries, list) else []:
            try:
                g = JobGoodput.from_json(entry)
            except (KeyError, TypeError, ValueError, AttributeError):
                malformed += 1
                continue
            job = jobs.setdefault(g.job, _Job(g.job))
            job.gpus = max(job.gpus, g.gpus)
            job.productive += g.split.productive
            for b, s in g.split.badput.items():
                job.badput[b] += s
            job.failures += g.failures
            job.add_attempts(number, g.attempts)
            held = g.split.total - g.split.badput.get(Badput.WAITING_FOR_GPUS, 0.0)
            job.running_hours += held / max(1, g.gpus) / HOUR
    rows = [j.row() for j in jobs.values()]
    productive = sum(j.productive for j in jobs.values())
    total = sum(j.total for j in jobs.values())
    by_size = []
    for _, name in SIZES:
        mine = [j for j in jobs.values() if size_of(j.gpus) == name]
        if not mine:
            continue
        held = sum(j.total for j in mine)
        failures = sum(j.failures for j in mine)
        running = sum(j.running_hours for j in mine)
        by_size.append({
            "size": name,
            "jobs": len(mine),
            "total_gpu_hours": held / HOUR,
            "goodput": sum(j.productive for j in mine) / held if held > 0 else None,
            "failures": failures,
            "running_hours": running,
            "mtbf_hours": running / failures if failures else None,
        })  # fmt: skip
    return {
        "goodput": productive / total if total > 0 else None,
        "total_gpu_hours": total / HOUR,
        "productive_gpu_hours": productive / HOUR,
        "badput_gpu_hours": {
            str(b): sum(j.badput[b] for j in jobs.values()) / HOUR for b in Badput
        },
        "by_size": by_size,
        "jobs": sorted(rows, key=_most_badput_first),
        "malformed": malformed,
    }


def _most_badput_first(row: Mapping[str, Any]) -> tuple[float, str]:
    return (-(row["total_gpu_hours"] - row["productive_gpu_hours"]), row["job"])


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _h(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f}"


def _largest(row: Mapping[str, Any]) -> str:
    found = [(row[f"{b}_gpu_hours"], b) for b in Badput if row[f"{b}_gpu_hours"] > 0]
    if not found:
        return "none"
    hours, badput = max(found, key=lambda hb: (hb[0], -list(Badput).index(hb[1])))
    return f"{BADPUT_WORDS[badput]}: {hours:,.1f}"


def goodput_section(g: Mapping[str, Any]) -> str:
    """The HTML that leads the training section; empty where no job's goodput was read."""
    if not g or not g.get("jobs"):
        return ""
    badput = g["badput_gpu_hours"]
    total = g["total_gpu_hours"]
    parts = [
        '<h3 id="goodput">Goodput</h3>',
        relation(
            f"Fleet goodput: {_pct(g['goodput'])} of {_h(total)} GPU-hours the training jobs "
            "held or waited for went to the work of steps that were kept; the rest is badput, "
            "by cause below (docs/goodput.md defines each)."
        ),
        html_table(
            ["Where the GPU-hours went", "GPU-hours", "Share"],
            [
                [
                    "productive (kept steps' work)",
                    _h(g["productive_gpu_hours"]),
                    _pct(g["productive_gpu_hours"] / total if total else None),
                ]
            ]
            + [
                [BADPUT_WORDS[Badput(b)], _h(h), _pct(h / total if total else None)]
                for b, h in sorted(badput.items(), key=lambda bh: -bh[1])
                if h > 0
            ],
            {1, 2},
        ),
        relation(
            "Goodput by job size (its most GPUs in the week) beside the time between its "
            "failures (the hours its jobs' GPUs ran over their failures and restarts), from "
            "the same GPU-hours as the table above."
        ),
        html_table(
            ["Job size", "Jobs", "GPU-hours", "Goodput", "Failures", "Time between failures (h)"],
            [
                [
                    s["size"],
                    s["jobs"],
                    _h(s["total_gpu_hours"]),
                    _pct(s["goodput"]),
                    s["failures"],
                    _h(s["mtbf_hours"]),
                ]
                for s in g["by_size"]
            ],
            {1, 2, 3, 4, 5},
        ),
        relation(
            f"The jobs with the most badput this week (up to {TOP_JOBS}; {GOODPUT_CSV} has "
            "every job), each with its largest badput and its attempts (a restart begins "
            "one), the lowest goodput of them beside, from the same GPU-hours."
        ),
        html_table(
            [
                "Job",
                "GPUs",
                "Goodput",
                "GPU-hours",
                "Attempts (lowest goodput)",
                "Largest badput (GPU-hours)",
            ],
            [
                [
                    r["job"],
                    r["gpus"],
                    _pct(r["goodput"]),
                    _h(r["total_gpu_hours"]),
                    f"{r['attempts']} ({_pct(r['lowest_attempt_goodput'])})",
                    _largest(r),
                ]
                for r in g["jobs"][:TOP_JOBS]
            ],
            {1, 2, 3, 4},
        ),
    ]
    if g.get("malformed"):
        parts.append(f"<p>{int(g['malformed'])} job entries of the goodput files were not "
                     "readable and are left out.</p>")  # fmt: skip
    return "".join(parts)


def goodput_csv(g: Mapping[str, Any], *, cluster: str, week: str) -> str:
    rows = ({**r, "cluster": cluster, "week": week} for r in g.get("jobs", []))
    return csv_table(COLUMNS, rows)
