"""OTel mode's low-power PromQL alarm replayed over the demo's week as the add-on sends it
(cli/demo/otel.py week_samples: DCGM's series every 30 s with the pod and node labels),
its instant query answered by a real PromQL engine (Debian's Prometheus, tests/prometheus.py)
at each evaluation interval and its contributors' states kept as CloudWatch documents them
(cli/backtest/promql_alarm.py).

The week's first 34 hours from Monday 00:00 UTC: the notebook (research, ``jupyter-alice-0``)
holds its GPU at 6% of 700 W outside 09:00-18:00 and works at 55% inside; the data-bound BERT
job (nlp) holds two GPUs at 22% throughout; the vision job works at 88%. 30% of 700 W is 210 W.
"""

import json
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest
from moto import mock_aws

from cdk.alarms.catalog import AlarmSettings, promql_alarms
from cdk.alarms.model import AlarmSpec
from cdk.alarms.promql import PromQLQuery, low_power_query
from cli.backtest.promql_alarm import ALARM, OK, replay, replay_range
from cli.demo.otel import week_samples
from cli.demo.realistic import otel as realistic_otel
from cli.demo.week import START
from lambdas.shared.promql import PromQLClient
from tests.prometheus import legacy_labels, serve, write_openmetrics

pytestmark = pytest.mark.promql_engine

CLUSTER = "train"
HOURS = 34
NOTEBOOK = ("ip-10-0-2-23.ec2.internal", "0", "research", "jupyter-alice-0")
BERT = [
    ("ip-10-0-2-22.ec2.internal", str(gpu), "nlp", pod)
    for gpu, pod in enumerate(("bert-data-bound-master-0", "bert-data-bound-worker-0"))
]


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromQLClient]:
    folder = tmp_path_factory.mktemp("otel-day")
    write_openmetrics(
        folder / "day.om",
        week_samples(CLUSTER, hours=HOURS, interval=realistic_otel.SCRAPE_INTERVAL_S),
    )
    with serve(folder / "day.om", folder / "data") as url:
        yield PromQLClient(endpoint=url, region="us-east-1", credentials=None)


def _iso(epoch: float) -> str:
    """The demo's week is last ISO week's (cli/demo/week.py START): the replay's window is
    given from it, never as fixed dates, so the test replays the same hours on any day."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _deployed_query() -> PromQLQuery:
    """The deployed alarm's query, its label names as this engine stores them."""
    settings = AlarmSettings(cluster_name=CLUSTER, promql=True, gpu_instance_type="p5.48xlarge")
    spec, _ = promql_alarms(settings)  # the low-power alarm (and its fleet count)
    assert isinstance(spec.metric, PromQLQuery)
    ours = low_power_query(CLUSTER, spec.threshold, settings.low_power_window_minutes)
    assert ours == spec.metric  # the same alarm, CloudWatch's label names
    labels = legacy_labels()
    legacy = low_power_query(
        CLUSTER, spec.threshold, settings.low_power_window_minutes, labels=labels
    )
    return legacy


def test_the_low_power_alarm_pages_each_idle_held_gpu_an_hour_after_its_power_fell(
    prometheus: PromQLClient,
) -> None:
    query = _deployed_query()
    labels = legacy_labels()
    transitions = replay(prometheus, query, START, START + HOURS * 3600)
    seen = [
        (
            t.at - START,
            (
                t.labels[labels.node],
                t.labels[labels.gpu],
                t.labels[labels.namespace],
                t.labels[labels.pod],
            ),
            t.state,
        )
        for t in transitions
    ]
    hour = 3600
    assert seen == [
        # The first evaluation with samples (00:01) breaches; pending 3300 s: 00:56.
        (60 + 3300, BERT[0], ALARM),
        (60 + 3300, BERT[1], ALARM),
        (60 + 3300, NOTEBOOK, ALARM),
        # 09:00:15 the notebook works; absent from 09:01; 300 s later OK.
        (9 * hour + 60 + 300, NOTEBOOK, OK),
        # 18:00:15 it idles; the 5-minute range is all under 210 W from 18:05; 19:00 ALARM.
        (18 * hour + 300 + 3300, NOTEBOOK, ALARM),
        # The next morning, as the first.
        ((24 + 9) * hour + 60 + 300, NOTEBOOK, OK),
    ]
    # Every contributor names its cluster as well; nothing else is in its attributes.
    assert {frozenset(t.labels) for t in transitions} == {
        frozenset({labels.cluster, labels.node, labels.gpu, labels.namespace, labels.pod})
    }


def test_a_range_query_at_the_evaluation_interval_replays_the_same_transitions(
    prometheus: PromQLClient,
) -> None:
    """What ``gpu-insights backtest`` sends to CloudWatch: range queries (two pages of at
    most 24 hours here) in place of 2,040 instant queries, the same transitions."""
    query = _deployed_query()
    end = START + HOURS * 3600
    requests = prometheus.requests
    ranged = replay_range(prometheus, query, START, end)
    assert prometheus.requests - requests == 2
    assert ranged == replay(prometheus, query, START, end)
    assert len(ranged) == 6


def test_the_backtest_command_replays_otel_modes_promql_alarm_beside_the_others(
    prometheus: PromQLClient, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``gpu-insights backtest --cloudwatch`` in OTel mode with the exporter's EMF sink (the
    Metrics Insights alarms beside a PromQL one exist only there: the default OTLP sink makes
    every alarm PromQL): the Metrics Insights alarms from CloudWatch (moto, empty here), the
    DCGM low-power PromQL alarm from the PromQL API beside it (this engine, whose label names
    are Prometheus 2's: the alarm's query is given them)."""
    import lambdas.shared.promql
    from cdk.alarms import catalog
    from cli.main import main

    monkeypatch.setattr(lambdas.shared.promql, "promql_for", lambda _cloudwatch: prometheus)
    legacy = _deployed_query()
    real = catalog.promql_alarms

    def with_legacy_labels(settings: AlarmSettings) -> list[AlarmSpec]:
        """Each alarm's query with the low-power query in Prometheus 2's label names (the
        fleet count alarm wraps it in count(...) >= N)."""
        specs = real(settings)
        queries = {s.key: s.metric for s in specs if isinstance(s.metric, PromQLQuery)}
        plain = queries["gpu-low-power"].query
        return [
            replace(
                s, metric=replace(legacy, query=queries[s.key].query.replace(plain, legacy.query))
            )
            for s in specs
        ]

    monkeypatch.setattr("cli.backtest.command.promql_alarms", with_legacy_labels)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "t")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "t")
    with mock_aws():
        code = main(
            [
                "backtest", "--cloudwatch", "--region", "us-east-1", "--json",
                "--start", _iso(START), "--end", _iso(START + 12 * 3600),
                "-c", f"cluster_name={CLUSTER}", "-c", "container_insights_mode=otel",
                "-c", "gpu_instance_type=p5.48xlarge", "-c", "exporter_sink=emf",
                # The pending GPU pods' PromQL alarm reads Kube State Metrics, which this
                # engine does not hold (test_promql_cluster_alarms.py replays it on them).
                "-c", "control_plane_alarms=false",
                # Nor the servers' series; their alarms are replayed on them in
                # tests/functional/cdk/alarms/test_serving_promql.py (in the label names this
                # engine takes).
                "-c", "serving_alarms=false",
            ]
        )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    document = json.loads(out)
    (low,) = [a for a in document if a["alarm"] == "gpu-low-power"]
    assert low["promql"] == legacy.query
    pods = {c["attributes"][legacy_labels().pod]: c["transitions"] for c in low["contributors"]}
    assert pods["jupyter-alice-0"] == [
        {"time": START + 3360, "to": "ALARM"},
        {"time": START + 9 * 3600 + 360, "to": "OK"},
    ]
    assert sorted(pods) == [
        "bert-data-bound-master-0",
        "bert-data-bound-worker-0",
        "jupyter-alice-0",
    ]
    # The Metrics Insights low-power alarm is not replayed beside it: OTel mode has none. Its
    # fleet count alarm is PromQL too, and three idle GPUs are far from the cap.
    assert not [
        a for a in document if a["alarm"].startswith("gpu-low-power-") and "promql" not in a
    ]
    (cap,) = [a for a in document if a["alarm"] == "gpu-low-power-at-cap"]
    assert cap["promql"].startswith("count(")
    assert cap["contributors"] == []
