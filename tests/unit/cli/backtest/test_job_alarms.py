"""The job alarms, evaluated by the backtest over what the real emitter publishes for jobs with
trouble planted at a known minute (cli/demo/jobs.py): each pages within its window, with the
job it names, and the job whose checkpoint save and evaluation stop its steps pages nothing."""

from dataclasses import replace

import pytest

from cdk.alarms.catalog import AlarmSettings, gpu_alarms
from cdk.alarms.jobs import JOB_ALARM_KINDS, JobAlarmSettings
from cli.backtest.engine import BacktestResult, backtest
from cli.backtest.history import samples_from_emf
from cli.demo.jobs import ALARM_JOBS, job_pages, simulate

START = 1_764_000_000.0
END = START + 2 * 3600


def _backtest(settings: AlarmSettings, documents: list) -> list[BacktestResult]:  # type: ignore[type-arg]
    specs = [s for s in gpu_alarms(settings) if s.kind in JOB_ALARM_KINDS]
    assert len(specs) == len(JOB_ALARM_KINDS) * 8
    return backtest(specs, samples_from_emf(documents), start=START, end=END)


@pytest.fixture(scope="module")
def documents() -> list:  # type: ignore[type-arg]
    return simulate("train", START)


def test_each_planted_trouble_pages_its_job_within_its_window_and_nothing_else(
    documents: list,  # type: ignore[type-arg]
) -> None:
    results = _backtest(AlarmSettings(cluster_name="train"), documents)
    pages = job_pages(results, START)
    planted = {job.name: job for job in ALARM_JOBS if job.pages}
    assert set(pages) == set(planted)  # resnet-steady, with its save and evaluation: no page
    for name, kinds in pages.items():
        due = planted[name].due_pages()
        assert set(kinds) == set(due), name
        for kind, minute in kinds.items():
            assert due[kind][0] <= minute <= due[kind][1], (name, kind, minute)
    # The slowed job's fail-slow pages 3 minutes after its slowdown, 12 before the collapse.
    assert pages["bert-slows"] == {"job-step-time-rise": 53.0, "job-throughput-collapsed": 65.0}
    # One page each: every raised alarm went into ALARM once.
    assert sum(r.alarms_raised for r in results) == 6


def test_a_longer_hang_wait_pages_the_hang_later(documents: list) -> None:  # type: ignore[type-arg]
    settings = AlarmSettings(cluster_name="train", jobs=JobAlarmSettings(hung_minutes=30))
    pages = job_pages(_backtest(settings, documents), START)
    # The hang starts at minute 45: due 30 minutes (and three 2-second steps) later.
    assert round(pages["llama-hangs"]["job-hung"]) == 76


def test_without_the_context_managers_the_steady_jobs_pauses_would_page() -> None:
    """The control: the same 12- and 15-minute pauses, not declared, read as a hang."""
    steady = ALARM_JOBS[0]
    undeclared = replace(
        steady,
        phases=tuple(
            replace(p, doing="hang") if p.doing in ("checkpoint", "evaluate") else p
            for p in steady.phases
        ),
    )
    documents = simulate("train", START, [undeclared])
    pages = job_pages(_backtest(AlarmSettings(cluster_name="train"), documents), START)
    # The save starts at minute 40: 10 minutes and three 2-second steps later, at minute 51.
    assert {
        job: {kind: round(minute) for kind, minute in kinds.items()} for job, kinds in pages.items()
    } == {"resnet-steady": {"job-hung": 51}}
