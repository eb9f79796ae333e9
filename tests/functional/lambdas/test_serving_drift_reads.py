"""Serving drift read on a real PromQL engine (Debian's Prometheus, through the demo's translation
of CloudWatch's label names: cli/demo/promql.py ``serving``) over the demo's serving replicas
(cli/demo/serving.py): last week's Saturday as usual, one sample an hour (the demo's week: an
hour's increase is then the last sample less the hour before's), and this week's Friday and
Saturday scraped every 15 minutes (a rate), the KServe model's traffic drifting from Saturday
14:00 UTC (``DRIFT_HOUR``: prompts 80% longer, a quarter of the outputs truncated).

Saturday is read against last week's (a weekly baseline): one ``serving_drift`` finding, the
KServe model's (its thumbs-up quality proxy down too), since 14:00, with its numbers; the vLLM
model's unchanged traffic raises none.
Friday has no week before it read, so its baseline is the days before it (last week's Saturday,
six days earlier): unchanged, nothing."""

from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import chain
from typing import Final

import pytest

from cdk.alarms.serving_promql import drift_truncated_query
from cli.demo.command import DEMO_REGION
from cli.demo.otel import PHASE_S
from cli.demo.promql import Sample
from cli.demo.promql import serving as serving_engine
from cli.demo.realistic.pods import Pod
from cli.demo.realistic.serving import KSERVE, VLLM
from cli.demo.serving import DRIFT_HOUR, Load, serving_samples, week_load
from cli.demo.week import THIS_WEEK
from dashboards.serving import serving
from dashboards.widgets import CHART_WIDGET, chart_queries
from gpu_insights_agent.contract.serving import QUALITY_METRIC
from lambdas.shared.dcgm import CLOUDWATCH as L
from lambdas.shared.findings import Kind
from lambdas.shared.promql import PromQLClient
from lambdas.training_analyzer.serving.drift import drift_findings
from lambdas.training_analyzer.serving.drift.finding import DriftModel
from lambdas.training_analyzer.serving.drift.promql import read_drift

pytestmark = pytest.mark.promql_engine

CLUSTER: Final = "train"
DAY: Final = 86_400
STEP: Final = 900
SATURDAY: Final = DRIFT_HOUR // 24
#: (first hour of the week, its offset in seconds from this week's start): last week's
#: Saturday, this week's Friday and Saturday.
STRETCHES: Final = (
    (SATURDAY * 24, (SATURDAY - 7) * DAY),
    ((SATURDAY - 1) * 24, (SATURDAY - 1) * DAY),
)
HOURS: Final = (24, 48)
STEPS: Final = (3600, STEP)


def _steps() -> tuple[list[float], list[int]]:
    times, hours = [], []
    for (first_hour, offset), length, step in zip(STRETCHES, HOURS, STEPS, strict=True):
        for k in range(length * 3600 // step):
            times.append(THIS_WEEK.start + offset + k * step + PHASE_S)
            hour = first_hour + k * step // 3600
            # Last week's Saturday is an ordinary one: no drift before this week's.
            hours.append(hour - 24 if offset < 0 else hour)
    return times, hours


#: A thumbs-up as the quality proxy (1 up, 0 down: docs/drift.md), 500 an hour a model, as
#: the standard-library sender writes it: an explicit-bucket histogram, here in the classic
#: form a Prometheus scrape holds. Four in five up, three in five for the KServe model from
#: ``DRIFT_HOUR``.
FEEDBACK_PER_HOUR: Final = 500


def _quality(times: list[float], hours: list[int]) -> Iterator[Sample]:
    for model in (KSERVE.model, VLLM.model):
        labels = {"model_name": model, L.cluster: CLUSTER, L.namespace: "inference"}
        up = down = 0
        for i, at in enumerate(times):
            cumulative = {"0": down, "0.5": down, "1": up + down, "+Inf": up + down}
            for le, n in cumulative.items():
                yield f"{QUALITY_METRIC}_bucket", labels | {"le": le}, at, float(n)
            yield f"{QUALITY_METRIC}_sum", labels, at, float(up)
            yield f"{QUALITY_METRIC}_count", labels, at, float(up + down)
            step = (times[i + 1] - at) if i + 1 < len(times) else 0
            n = round(FEEDBACK_PER_HOUR * min(step, 3600) / 3600)
            share = 0.6 if model == KSERVE.model and hours[i] >= DRIFT_HOUR else 0.8
            up += round(n * share)
            down += n - round(n * share)


@pytest.fixture(scope="module")
def engine() -> Iterator[PromQLClient]:
    times, hours = _steps()

    def load(pod: Pod, i: int) -> Load:
        return week_load(pod, hours[i])

    samples = chain(serving_samples(CLUSTER, times, load), _quality(times, hours))
    with serving_engine(samples, DEMO_REGION) as client:
        yield client


def _day(day: int) -> tuple[float, datetime]:
    start = THIS_WEEK.start + day * DAY
    return start, datetime.fromtimestamp(start, UTC)


def test_the_drifting_model_is_found_against_last_week(engine: PromQLClient) -> None:
    start, day = _day(SATURDAY)
    reads = read_drift(engine, CLUSTER, start=start)
    kserve = DriftModel("inference", KSERVE.model)
    assert set(reads.days) == {kserve, DriftModel("inference", VLLM.model)}
    assert reads.baselines[kserve] == "the same hours of 1 of the 4 weeks before"
    (finding,) = drift_findings(reads, day.date())
    assert finding.kind is Kind.SERVING_DRIFT
    assert finding.resource == f"namespace/inference/model/{KSERVE.model}"
    signals = finding.evidence["signals"]
    assert set(signals) == {"prompt_length", "finish_reason", "quality"}
    assert signals["quality"]["mean_change_percent"] == -25.0
    hour = datetime.fromtimestamp(THIS_WEEK.start + DRIFT_HOUR * 3600, UTC)
    assert signals["prompt_length"]["since"] == hour.strftime("%Y-%m-%d %H:00 UTC")
    # 14:00 to midnight: ten hours, every one of them drifted.
    assert signals["prompt_length"]["hours_drifted"] == 10
    assert signals["prompt_length"]["mean_change_percent"] == 80.0
    assert signals["finish_reason"]["percent"]["length"] == 25.0
    assert signals["finish_reason"]["baseline_percent"]["length"] == 10.0
    assert "prompts 80% longer (mean 522 -> 939.6 tokens)" in finding.summary
    assert "truncated outputs (finish reason length) 10.0% -> 25.0%" in finding.summary
    assert "quality proxy 25% lower (mean 0.8 -> 0.6)" in finding.summary
    assert "retrain on fresh data" in finding.recommendation


def test_a_day_of_unchanged_traffic_against_the_days_before_raises_nothing(
    engine: PromQLClient,
) -> None:
    start, day = _day(SATURDAY - 1)
    reads = read_drift(engine, CLUSTER, start=start)
    kserve = DriftModel("inference", KSERVE.model)
    assert reads.baselines[kserve] == (
        "the same hours of 1 of the 6 days before (less than a week of history)"
    )
    assert drift_findings(reads, day.date()) == []


def test_the_serving_dashboards_drift_charts_draw_the_shift(engine: PromQLClient) -> None:
    """The serving dashboard's drift row (dashboards/serving.py) on the same engine, an hour
    before Saturday's end: the KServe model's mean prompt 80% over the vLLM model's, its
    outputs cut at max_tokens 25% to the other's 10%; a week before, alike."""
    charts = {
        w["properties"]["title"]: chart_queries(w)
        for w in serving(CLUSTER, DEMO_REGION)["widgets"]
        if w["type"] == CHART_WIDGET
    }
    at = THIS_WEEK.start + (SATURDAY + 1) * DAY - 1800

    def drawn(title: str, at: float) -> dict[str, float]:
        (query, *_) = charts[title]
        return {
            s.labels["model_name"]: round(s.points[-1][1], 1)
            for s in engine.query(query["query"], at)
        }

    prompts = drawn("Mean prompt length (tokens, the hour), drift", at)
    assert prompts == {KSERVE.model: 939.6, VLLM.model: 522.0}
    cut = drawn("Outputs cut at max_tokens (% of finished, the hour), drift", at)
    assert cut == {KSERVE.model: 25.0, VLLM.model: 10.0}
    # Last week's Saturday, sampled hourly as the demo's week is: drawn all the same.
    week_before = at - 7 * DAY
    prompts = drawn("Mean prompt length (tokens, the hour), drift", week_before)
    assert prompts == {KSERVE.model: 522.0, VLLM.model: 522.0}
    generations = drawn("Mean generation length (tokens, the hour), drift", week_before)
    assert generations == {KSERVE.model: 174.0, VLLM.model: 174.0}


def test_the_optional_drift_alarm_pages_the_drifting_model_only(engine: PromQLClient) -> None:
    """cdk/alarms/serving_promql.py ``drift_truncated_query`` on the same engine: an hour and a
    half into the shift the KServe model's hour is 25% truncated against 10% in the 22 hours
    before, far over the line; the vLLM model's unchanged 10% is not returned, nor is any model
    on Friday."""
    query = drift_truncated_query(CLUSTER).query
    shifted = THIS_WEEK.start + DRIFT_HOUR * 3600 + 5400
    paged = {s.labels["model_name"]: s.points[-1][1] for s in engine.query(query, shifted)}
    assert paged == {KSERVE.model: pytest.approx(0.25)}
    assert engine.query(query, THIS_WEEK.start + SATURDAY * DAY - 3600) == []
