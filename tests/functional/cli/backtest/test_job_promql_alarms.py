"""OTel mode's four job PromQL alarms replayed on a real PromQL engine (Debian's Prometheus,
tests/prometheus.py) as CloudWatch documents the evaluation (cli/backtest/promql_alarm.py:
pending, recovery, contributors), over what the real emitter computes for the demo's jobs
(cli/demo/jobs.py: two ranks each, trouble planted at a known minute), sent as OTel mode's
emitter sends it (one gauge series per rank, labelled by cluster, namespace, pod, node, job and
rank: ``promql_samples``).

Cluster ``train`` holds the five demo jobs; cluster ``control`` holds the steady job again with
its checkpoint save and evaluation not declared to the emitter, which the hang alarm must page.
"""

from collections.abc import Iterator
from dataclasses import replace

import pytest

from cdk.alarms.catalog import AlarmSettings, promql_alarms
from cdk.alarms.jobs import JobAlarmSettings
from cdk.alarms.jobs_promql import promql_job_alarms
from cdk.alarms.model import AlarmSpec
from cdk.alarms.promql import PromQLQuery
from cli.backtest.promql_alarm import ALARM, OK, State, Transition, replay, replay_range
from cli.demo.jobs import ALARM_JOBS, promql_samples, simulate
from lambdas.shared.promql import PromQLClient
from tests.prometheus import legacy_labels, serve, write_openmetrics

pytestmark = pytest.mark.promql_engine

START = 1_764_000_000.0
END = START + 2 * 3600
LABELS = legacy_labels()
DEFAULT = JobAlarmSettings()
STEADY = ALARM_JOBS[0]
UNDECLARED = replace(
    STEADY,
    phases=tuple(
        replace(p, doing="hang") if p.doing in ("checkpoint", "evaluate") else p
        for p in STEADY.phases
    ),
)


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromQLClient]:
    folder = tmp_path_factory.mktemp("jobs")
    samples = [
        *promql_samples(simulate("train", START)),
        *promql_samples(simulate("control", START, [UNDECLARED])),
    ]
    write_openmetrics(folder / "jobs.om", samples)
    with serve(folder / "jobs.om", folder / "data") as url:
        yield PromQLClient(endpoint=url, region="us-east-1", credentials=None)


def _alarms(cluster: str, settings: JobAlarmSettings = DEFAULT) -> list[AlarmSpec]:
    """The deployed job alarms, their queries in this engine's label names."""
    deployed = {
        s.key: s
        for s in promql_alarms(
            AlarmSettings(cluster_name=cluster, promql=True, otlp=True, jobs=settings)
        )
    }
    ours = promql_job_alarms(cluster, settings)
    assert [deployed[s.key] for s in ours] == ours  # what the app deploys
    return promql_job_alarms(cluster, settings, labels=LABELS)


def _pages(
    client: PromQLClient,
    cluster: str,
    settings: JobAlarmSettings = DEFAULT,
) -> dict[str, list[tuple[str, State, float]]]:
    """Per alarm kind: (job, new state, minute from the start) of every transition."""
    out = {}
    for spec in _alarms(cluster, settings):
        assert isinstance(spec.metric, PromQLQuery)
        transitions = replay_range(client, spec.metric, START, END)
        out[spec.key] = [(t.labels["job_name"], t.state, (t.at - START) / 60) for t in transitions]
    return out


def test_each_planted_trouble_pages_its_job_once_within_its_window_and_nothing_else(
    prometheus: PromQLClient,
) -> None:
    pages = _pages(prometheus, "train")
    raised = {
        kind: [(job, m) for job, state, m in seen if state == ALARM] for kind, seen in pages.items()
    }
    # One page each, the job the trouble was planted in, within the Metrics Insights alarm's
    # window (cli/demo/jobs.py ``due``); the steady job, with its 12-minute checkpoint save and
    # 15-minute evaluation, none.
    # The goodput alarm's hour is a rolling one here (``avg_over_time`` over 60m), where the
    # Metrics Insights alarm's is the clock hour: the steady job's hour from minute 26 to 86
    # holds its 12-minute save and the evaluation's first 6 minutes, 30% badput.
    due = {
        (k, job.name): when for job in ALARM_JOBS for k, when in job.due_pages(rolling=True).items()
    }
    assert sorted((k, name) for k, hits in raised.items() for name, _ in hits) == sorted(due)
    for kind, hits in raised.items():
        for name, minute in hits:
            assert due[(kind, name)][0] <= minute <= due[(kind, name)][1], (kind, name, minute)
    # The minutes, as the engine evaluates (a flush is stamped at its window's start, as on
    # the EMF path): hung from the window of minute 55 (the last step just after minute 45,
    # due three 2-second steps later, and 600 s past due within that window); NaN and the
    # 9.0 loss in their first minute; the slowdown from minute 50, the fastest rank under half
    # its median in every 5-minute range from minute 55 and through the 600 s pending period.
    assert {kind: hits[0][1] for kind, hits in raised.items()} == {
        "job-hung": 55,
        "job-loss-not-finite": 60,
        "job-loss-spike": 70,
        "job-throughput-collapsed": 65,
        # Three one-minute flushes 10% slower: the 2-minute range, then 60 s pending.
        "job-step-time-rise": 53,
        # 18 of the rolling hour's 60 minutes hung: under 70% from minute 63.
        "job-goodput-low": 63,
    }


def test_each_contributor_is_the_job_named_by_cluster_namespace_and_job_and_recovers(
    prometheus: PromQLClient,
) -> None:
    for spec in _alarms("train"):
        assert isinstance(spec.metric, PromQLQuery)
        transitions: list[Transition] = replay_range(prometheus, spec.metric, START, END)
        assert {frozenset(t.labels.items()) for t in transitions} <= {
            frozenset(
                {
                    LABELS.cluster: "train",
                    LABELS.namespace: job.namespace,
                    "job_name": job.name,
                }.items()
            )
            for job in ALARM_JOBS
        }
        # Each goes back to OK once the query has not returned it for the recovery period: the
        # hung and NaN jobs were killed (their series stop), the spike passed, and the slowed
        # job's median came down to its new speed (half its 60 recent windows). The hung job's
        # goodput, though its last windows stay in the rolling hour, once it sends none.
        states: dict[str, list[State]] = {}
        for t in transitions:
            states.setdefault(t.labels["job_name"], []).append(t.state)
        for job, seen in states.items():
            assert seen == [ALARM, OK], (spec.key, job)
    assert {
        spec.key: [
            round((t.at - START) / 60) for t in replay_range(prometheus, spec.metric, START, END)
        ]
        for spec in _alarms("train")
        if isinstance(spec.metric, PromQLQuery)
    } == {
        # Killed at minute 100: its last flush leaves the 2-minute range, then 300 s.
        "job-hung": [55, 107],
        # NaN from minute 60 to 75, then killed.
        "job-loss-not-finite": [60, 82],
        # One minute's spike, seen in two 2-minute ranges, then 300 s.
        "job-loss-spike": [70, 78],
        "job-throughput-collapsed": [65, 89],
        # The slowed job's fail-slow, recovered with the throughput ratio's median.
        "job-step-time-rise": [53, 89],
        # The hung job's from minute 63 until it is killed (as job-hung: its last flush out
        # of the 2-minute range, then 300 s); the steady job's rolling hour from 86 to 114.
        "job-goodput-low": [63, 86, 107, 114],
    }


def test_a_range_query_at_the_evaluation_interval_replays_the_instant_queries(
    prometheus: PromQLClient,
) -> None:
    (hung,) = [s for s in _alarms("train") if s.key == "job-hung"]
    assert isinstance(hung.metric, PromQLQuery)
    assert replay_range(prometheus, hung.metric, START, END) == replay(
        prometheus, hung.metric, START, END
    )


def test_undeclared_pauses_read_as_a_hang_and_a_longer_wait_pages_later(
    prometheus: PromQLClient,
) -> None:
    """The control: the steady job's 12-minute save and 15-minute evaluation, not declared,
    are a hang (minute 40 + 10 minutes + three steps); with job_hung_minutes=30 neither pause
    is long enough."""
    pages = _pages(prometheus, "control")
    raised = [(job, round(m)) for job, state, m in pages["job-hung"] if state == ALARM]
    # The save from minute 40 (due 10 minutes and three steps later: the window of minute
    # 50), the evaluation from minute 80: two hangs, two pages, each recovered in between.
    assert raised == [("resnet-steady", 50), ("resnet-steady", 90)]
    # Its hangs are badput too: the rolling hour's goodput, as in the train cluster.
    assert pages["job-goodput-low"] == [
        ("resnet-steady", ALARM, 86.0),
        ("resnet-steady", OK, 114.0),
    ]
    assert not [
        p
        for kind, seen in pages.items()
        if kind not in ("job-hung", "job-goodput-low")
        for p in seen
    ]
    longer = _pages(prometheus, "control", JobAlarmSettings(hung_minutes=30))
    assert longer["job-hung"] == []
