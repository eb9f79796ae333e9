"""Names from outside reach PromQL as string literals (``quote_string``): a job's name, a pod's,
any label an OTLP sender set (the add-on's endpoint authenticates no sender). On a real PromQL
engine (tests/prometheus.py), each value selects its own series, by equality and by the training
analyzer's anchored regex, and the notifier reads a job's ranks whatever its name holds: a raw
newline or a ``json.dumps`` escape of a character beyond the BMP is a parse error that loses the
whole query ("unterminated quoted string", "invalid Unicode code point")."""

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest

from cli.demo.promql import answering
from gpu_insights_agent.contract.metrics import OTLP_JOB, OTLP_RANK, TrainingMetric
from lambdas.notifier.jobs import promql_placement
from lambdas.shared.dcgm import CLOUDWATCH
from lambdas.shared.promql import PromQLClient, endpoint_for, quote_string
from lambdas.training_analyzer.promql_jobs import literal
from tests.prometheus import serve, write_openmetrics

pytestmark = pytest.mark.promql_engine

REGION = "us-east-1"
AT = 1_764_000_000.0
NAMES = (
    "plain", 'say "hi"', "C:\\runs", "two\nlines", "tab\there", "bell\x07", "émoji😀",
    "rep\ufffdchar",
)  # fmt: skip
IDS = ["plain", "quotes", "backslash", "newline", "tab", "control", "utf-8", "replacement-char"]


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One rank's heartbeat for each name, a minute before ``AT``, as CloudWatch labels the
    emitter's series (cluster and pod resource attributes, ``job_name`` and ``rank``)."""
    folder = tmp_path_factory.mktemp("quoting")
    samples = [
        (
            str(TrainingMetric.SECONDS_SINCE_STEP),
            {
                CLOUDWATCH.cluster: "train",
                CLOUDWATCH.pod: f"pod-{i}",
                CLOUDWATCH.node: "ip-10-0-0-1.ec2.internal",
                OTLP_JOB: name,
                OTLP_RANK: "0",
            },
            AT - 60,
            3.0,
        )
        for i, name in enumerate(NAMES)
    ]
    write_openmetrics(folder / "jobs.om", samples)
    with serve(folder / "jobs.om", folder / "data") as url:
        yield url


def _jobs(url: str, query: str) -> list[str]:
    body = urllib.parse.urlencode({"query": query, "time": f"{AT:.3f}"}).encode()
    with urllib.request.urlopen(f"{url}/api/v1/query", data=body, timeout=10) as answer:
        return [s["metric"][OTLP_JOB] for s in json.load(answer)["data"]["result"]]


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_each_name_selects_its_own_series_by_equality_and_by_regex(engine: str, name: str) -> None:
    metric = TrainingMetric.SECONDS_SINCE_STEP
    assert _jobs(engine, f"{metric}{{{OTLP_JOB}={quote_string(name)}}}[5m]") == [name]
    assert _jobs(engine, f"{metric}{{{OTLP_JOB}=~{quote_string(literal(name))}}}[5m]") == [name]


@pytest.mark.parametrize("name", NAMES, ids=IDS)
def test_the_notifier_reads_the_ranks_of_a_job_whatever_its_name(engine: str, name: str) -> None:
    with answering(REGION, engine):
        placement = promql_placement(
            PromQLClient(endpoint=endpoint_for(REGION), region=REGION, credentials=None),
            "train",
            None,
            name,
            int(AT * 1000),
        )
    assert [(r.rank, r.pod) for r in placement.ranks] == [("0", f"pod-{NAMES.index(name)}")]


def test_a_newline_written_raw_loses_the_whole_query(engine: str) -> None:
    """What the quoting prevents: the engine refuses the query, it does not match nothing."""
    raw = '"two\nlines"'
    with pytest.raises(urllib.error.HTTPError) as refused:
        _jobs(engine, f"{TrainingMetric.SECONDS_SINCE_STEP}{{{OTLP_JOB}={raw}}}[5m]")
    assert "unterminated quoted string" in json.load(refused.value)["error"]
