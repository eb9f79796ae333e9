"""The PromQL job reader's pure parts: job names matched literally, the listing's name ranges,
the statistics it asks for, and when a deployment reads the jobs with it."""

import json
import re
import urllib.parse
import urllib.request

import pytest

from cdk.function_configs import training_config
from cdk.settings import Settings
from gpu_insights_agent.contract.metrics import ExporterSink, TrainingMetric
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.shared.promql import PromQLClient, PromQLRequestError
from lambdas.training_analyzer.promql_jobs import (
    JobQueries,
    JobQueryError,
    _range_regex,
    baselines,
    job_series,
    literal,
    names_regex,
    rank_stats,
)

NAMES = ["llama-7b.ft", "a+b", "x(1)", "job[0]", "c|d", "1.5*2?", "$HOME^", "back\\slash"]


def _re2(pattern: str) -> "re.Pattern[str]":
    """Python's ``re`` reads these patterns as RE2 does (escaped punctuation, ``\\x{...}``
    aside, which the test rewrites); PromQL anchors a label regex at both ends."""
    return re.compile(re.sub(r"\\x\{([0-9a-f]+)\}", lambda m: f"\\U{int(m[1], 16):08x}", pattern))


@pytest.mark.parametrize("name", NAMES)
def test_a_job_name_is_matched_alone(name: str) -> None:
    pattern = _re2(literal(name))
    assert pattern.fullmatch(name)
    assert not pattern.fullmatch(name + "x")
    assert not pattern.fullmatch("x" + name)


def test_a_batch_matches_its_jobs_and_no_other() -> None:
    pattern = _re2(names_regex(NAMES[:4]))
    assert [n for n in NAMES if pattern.fullmatch(n)] == NAMES[:4]


def test_the_listings_halves_cover_every_name_once() -> None:
    names = ["bert", "gpt", "gpt-2", "llama", "Ω-run", ""]
    low = _re2(_range_regex("", 0, 0x7F))
    high = _re2(_range_regex("", 0x80, 0x10FFFF))
    deeper = _re2(_range_regex("gpt", 0, 0x10FFFF))
    assert [n for n in names if low.fullmatch(n)] == [*names[:4], ""]
    assert [n for n in names if high.fullmatch(n)] == ["Ω-run", ""]
    assert [n for n in names if deeper.fullmatch(n)] == ["gpt", "gpt-2"]


def test_an_average_is_every_flushs_mean_not_a_mean_of_ranks() -> None:
    query = JobQueries("train").statistic(TrainingMetric.STEP_TIME, "Average", "a|b")
    selector = (
        '{__name__="step_time_seconds", "@resource.k8s.cluster.name"="train", job_name=~"a|b"}[1h]'
    )
    assert query == (
        f"sum by (job_name) (sum_over_time({selector})) / "
        f"sum by (job_name) (count_over_time({selector}))"
    )
    with pytest.raises(JobQueryError, match="'p99'"):
        JobQueries("train").statistic(TrainingMetric.STEPS, "p99", "a")


@pytest.mark.parametrize(
    ("mode", "sink", "promql"),
    [
        (ContainerInsightsMode.OTEL, ExporterSink.OTLP, True),
        (ContainerInsightsMode.OTEL, ExporterSink.EMF, False),
        (ContainerInsightsMode.CLASSIC, ExporterSink.EMF, False),
    ],
)
def test_the_jobs_are_read_with_promql_only_where_the_emitter_sends_otlp(
    mode: ContainerInsightsMode, sink: ExporterSink, promql: bool
) -> None:
    settings = Settings(
        cluster_name="train",
        container_insights_mode=mode,
        exporter_sink=sink,
        addon_version="v8.0.0-eksbuild.1",
    )
    config = training_config(settings, report_bucket="b")
    assert config.environment()["EXPORTER_SINK"] == sink.value
    assert config.emitter_otlp is promql


def test_a_name_promql_refuses_costs_its_own_read_not_the_batchs() -> None:
    """The API answers 400 ``bad_data`` to a query it cannot parse (as Prometheus's lexer
    refused a raw U+FFFD: "invalid UTF-8 rune"): the batch is read in halves until the refused
    job is alone, and every other job of the batch is still read."""
    jobs = [f"job{i:02d}" for i in range(40)]
    bad = "job17"
    answered: set[str] = set()

    def opener(request: urllib.request.Request) -> tuple[int, bytes]:
        data = request.data
        assert isinstance(data, bytes)
        query = urllib.parse.parse_qs(data.decode())["query"][0]
        if bad in query:
            body = {"status": "error", "errorType": "bad_data", "error": "invalid UTF-8 rune"}
            return 400, json.dumps(body).encode()
        answered.update(j for j in jobs if j in query)
        return 200, json.dumps({"status": "success", "data": {"result": []}}).encode()

    promql = PromQLClient(endpoint="http://promql", region="us-east-1", credentials=None)
    promql.opener = opener
    refused: dict[str, str] = {}
    series = job_series(promql, "train", jobs, start=0.0, end=3600.0, refused=refused)
    assert list(refused) == [bad]
    assert "HTTP 400 bad_data: invalid UTF-8 rune" in refused[bad]
    assert answered == set(jobs) - {bad}
    assert sorted(series) == jobs
    refused.clear()
    baselines(promql, "train", jobs, start=0.0, lookback_s=3600.0, refused=refused)
    rank_stats(promql, "train", jobs, start=0.0, end=3600.0, refused=refused)
    assert list(refused) == [bad]
    with pytest.raises(PromQLRequestError, match="400"):  # no one to tell: the error stands
        job_series(promql, "train", jobs, start=0.0, end=3600.0)


def test_a_job_whose_attempts_fill_an_answer_is_read_whole() -> None:
    """500 attempt series of one job (each rank's process drew its own id, many restarts): the
    statistic is read again by job alone, and the job keeps no attempts (goodput by the hour);
    the other job of the batch keeps its own."""
    hour = 3600.0
    asked: list[str] = []

    def opener(request: urllib.request.Request) -> tuple[int, bytes]:
        data = request.data
        assert isinstance(data, bytes)
        query = urllib.parse.parse_qs(data.decode())["query"][0]
        asked.append(query)
        by_attempt = "by (job_name, attempt)" in query
        labels: list[dict[str, str]] = []
        if "few" in query:
            labels.append(
                {"job_name": "few"} | ({"attempt": "torchelastic-0"} if by_attempt else {})
            )
        if "many" in query:
            drawn = [{"attempt": f"a{i}"} for i in range(500)] if by_attempt else [{}]
            labels += [{"job_name": "many"} | d for d in drawn]
        result = [{"metric": m, "values": [[hour - 0.001, "1"]]} for m in labels]
        return 200, json.dumps({"status": "success", "data": {"result": result}}).encode()

    promql = PromQLClient(endpoint="http://promql", region="us-east-1", credentials=None)
    promql.opener = opener
    series = job_series(promql, "train", ["few", "many"], start=0.0, end=hour)
    assert series["many"].attempts == {}
    assert series["many"].compute_time == {0.0: 1.0}
    assert sorted(series["few"].attempts) == ["torchelastic-0"]
    assert series["few"].attempts["torchelastic-0"].compute_time == {0.0: 1.0}
    assert any('by (job_name) (sum_over_time({__name__="compute_seconds"' in q for q in asked)
