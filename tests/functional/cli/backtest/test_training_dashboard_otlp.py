"""OTel mode with the emitter's OTLP sink: the training dashboard's job widgets are PromQL charts
over the emitter's gauges (labelled as agent/gpu_insights_agent/emitter/otlp.py labels them:
the cluster on the resource, ``job_name`` and ``rank`` on the datapoint), run by the dashboard
evaluator on a real PromQL engine (Debian's Prometheus, tests/prometheus.py).

Two hours of flushes a minute (7 seconds past it, off every window's edge): ``bert-data-bound``
with two ranks, ``gpt-steady`` with one, and eleven ``fill-NN`` jobs that wait NN percent of
their step, ``fill-00`` failing each minute; ``uneven``, whose rank 1 flushes its step time twice
a minute.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from cli.backtest.dashboards import PromQLSource, WidgetView, evaluate_body
from dashboards import bodies
from dashboards.bodies import job_promql, training_jobs
from gpu_insights_agent.contract.metrics import (
    OTLP_JOB,
    OTLP_RANK,
    ExporterSink,
    TrainingMetric,
)
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.shared.promql import PromQLClient
from tests.prometheus import Sample, legacy_labels, serve, write_openmetrics

pytestmark = pytest.mark.promql_engine

CLUSTER: Final = "otlp"
L: Final = legacy_labels()
END: Final = 1_795_000_200  # a whole five minutes
#: The job picked (each one-job widget's line is labelled with it).
JOB: Final = "bert-data-bound"
T = TrainingMetric
#: job -> rank -> the values each flush sends.
JOBS: Final[dict[str, dict[str, dict[TrainingMetric, float]]]] = {
    "bert-data-bound": {
        "0": {
            T.DATA_WAIT_SHARE: 60.0,
            T.STEP_TIME: 2.0,
            T.SAMPLES_PER_SECOND: 100.0,
            T.CHECKPOINT_SAVE: 12.0,
            T.SECONDS_SINCE_STEP: 3.0,
            T.LOSS_DEVIATION: 0.5,
            T.LOSS_NOT_FINITE: 0.0,
            T.THROUGHPUT_RATIO: 0.9,
        },
        "1": {
            T.DATA_WAIT_SHARE: 40.0,
            T.STEP_TIME: 1.0,
            T.SAMPLES_PER_SECOND: 300.0,
            T.CHECKPOINT_SAVE: 30.0,
            T.SECONDS_SINCE_STEP: 7.0,
            T.LOSS_DEVIATION: 6.0,
            T.LOSS_NOT_FINITE: 1.0,
            T.THROUGHPUT_RATIO: 0.4,
        },
    },
    "gpt-steady": {"0": {T.DATA_WAIT_SHARE: 20.0, T.STEP_TIME: 0.5}},
    **{
        f"fill-{n:02d}": {
            "0": {T.DATA_WAIT_SHARE: float(n), T.STEP_TIME: 0.1}
            | ({T.JOB_FAILED: 1.0} if n == 0 else {})
        }
        for n in range(11)
    },
}


def _labels(job: str, rank: str) -> dict[str, str]:
    return {L.cluster: CLUSTER, OTLP_JOB: job, OTLP_RANK: rank}


def _samples() -> Iterator[Sample]:
    for at in range(END - 7200 + 7, END, 30):
        for job, ranks in JOBS.items():
            for rank, values in ranks.items():
                for metric, value in values.items():
                    if (at - 7) % 60 == 0:
                        yield (str(metric), _labels(job, rank), at, value)
        # ``uneven``: rank 0 steps in 2 s and flushes a minute, rank 1 in 1 s twice a minute.
        if (at - 7) % 60 == 0:
            yield (str(T.STEP_TIME), _labels("uneven", "0"), at, 2.0)
        yield (str(T.STEP_TIME), _labels("uneven", "1"), at, 1.0)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromQLSource]:
    folder: Path = tmp_path_factory.mktemp("otlp-training-dashboard")
    write_openmetrics(folder / "series.om", _samples())
    with serve(folder / "series.om", folder / "data") as url:
        yield PromQLSource(PromQLClient(endpoint=url, region="us-east-1", credentials=None), END)


def _views(engine: PromQLSource) -> dict[str, WidgetView]:
    mode = bodies.Mode(ContainerInsightsMode.OTEL, L, ExporterSink.OTLP)
    body = training_jobs(CLUSTER, "us-east-1", mode)
    return {v.title: v for v in evaluate_body(body, [], {"job": JOB}, engine)}


def _lines(view: WidgetView) -> list[tuple[str, float]]:
    return [(line.label, round(line.value, 3)) for line in view.lines]


def test_the_outliers_draw_the_ten_first_jobs_by_what_each_ranks_flushes_say(
    engine: PromQLSource,
) -> None:
    views = _views(engine)
    waits = _lines(views[bodies.OUTLIER_DATA_WAIT])
    # bert's two ranks' flushes, 60 and 40: 50; the three fill jobs that wait least left out.
    assert waits == [
        ("bert-data-bound", 50.0),
        ("gpt-steady", 20.0),
        *[(f"fill-{n:02d}", float(n)) for n in range(10, 2, -1)],
    ]
    assert _lines(views[bodies.OUTLIER_FAILED]) == [("fill-00", 5.0)]  # 5 flushes a window
    assert [label for label, _ in _lines(views[bodies.OUTLIER_STEP])][:3] == [
        "bert-data-bound",
        "uneven",
        "gpt-steady",
    ]


def test_the_picked_job_is_one_line_a_widget_with_its_ranks_statistics(
    engine: PromQLSource,
) -> None:
    views = _views(engine)
    shown = {title: _lines(views[title]) for title in views}
    assert shown["Throughput (samples/s)"] == [(JOB, 200.0)]
    assert shown["Step time (s)"] == [(JOB, 1.5)]
    assert shown["Data-wait share of the step (%)"] == [(JOB, 50.0)]
    assert shown["Checkpoint save (s)"] == [(JOB, 30.0)]  # the slower rank's
    assert shown[bodies.JOB_HEARTBEAT] == [(JOB, 7.0)]
    assert shown[bodies.JOB_LOSS] == [(JOB, 6.0)]
    assert shown[bodies.JOB_LOSS_NOT_FINITE] == [(JOB, 5.0)]  # rank 1's one a flush, 5 a window
    assert shown[bodies.JOB_THROUGHPUT_RATIO] == [(JOB, 0.4)]


def test_a_jobs_average_weighs_every_flush_as_cloudwatch_does(engine: PromQLSource) -> None:
    """``uneven`` in a five-minute window: rank 0's five flushes of 2 s, rank 1's ten of 1 s:
    20 s over 15 flushes (CloudWatch's Average of the samples), not the ranks' mean 1.5."""
    query = job_promql(CLUSTER, T.STEP_TIME, "AVG", "uneven", L)
    (series,) = engine.client.query_range(query, END - 600, END - 600, 300, lookback_s=300)
    assert [round(v, 4) for _, v in series.points] == [round(20 / 15, 4)]
