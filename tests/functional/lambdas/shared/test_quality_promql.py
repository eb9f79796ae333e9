"""The quality proxy end to end on a real PromQL engine (Debian's Prometheus, tests/prometheus.py):
the agent's ``QualityRecorder`` of three serving workers flushes once a minute for 20 minutes;
each cumulative histogram it sent (parsed back from its OTLP/HTTP JSON as
``ExportMetricsServiceRequest``) is stored as a Prometheus scrape of it holds it, classic
``_bucket`` series with ``le`` (``HistogramForm.CLASSIC``; CloudWatch holds it as a native
histogram under the same name); ``quality_buckets`` then reads each model's counts of the last
10 minutes by bucket.

Each minute, llama's worker A records 0.2, 0.9 and 0.9, its worker B (another process of the
same pod: its own ``service.instance.id``) 0.6, and mistral's 0.3 twice; so over 10 minutes
llama counts 10 in (-inf, 0.25], 10 in (0.5, 0.75] and 20 in (0.75, 1], and mistral 20 in
(0.25, 0.5].
"""

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from gpu_insights_agent.contract.metrics import OTLP_INSTANCE
from gpu_insights_agent.contract.serving import QUALITY_MODEL_LABEL, HistogramForm
from gpu_insights_agent.otlp.json_encoding import HistogramPoint
from gpu_insights_agent.quality.recorder import QualityRecorder, encode
from lambdas.shared.dcgm import CLOUDWATCH
from lambdas.shared.promql import PromQLClient
from lambdas.shared.serving_queries import quality_buckets
from tests.prometheus import Sample, legacy_labels, serve, write_openmetrics
from tests.unit.agent.otlp.otlp_json import HistogramRow, histograms, parse

pytestmark = pytest.mark.promql_engine

CLUSTER = "inference"
START = 1_767_225_600  # 2026-01-01 00:00 UTC
MINUTES = 20
END = START + MINUTES * 60
BOUNDS = (0.25, 0.5, 0.75, 1.0)
STREAMS = {
    ("llama-vllm", "llama", "a"): (0.2, 0.9, 0.9),
    ("llama-vllm", "llama", "b"): (0.6,),
    ("mistral-vllm", "mistral", "a"): (0.3, 0.3),
}


class Capture:
    """A sink that keeps each flush's request body."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def send(self, documents: Sequence[HistogramPoint]) -> None:
        self.bodies.append(encode(documents))


def _stored(row: HistogramRow, deployment: str) -> Iterator[Sample]:
    """One datapoint as classic buckets; the resource as the add-on labels a pod's series (the
    Deployment from its pod's owner)."""
    labels = {
        CLOUDWATCH.cluster: row.resource["k8s.cluster.name"],
        CLOUDWATCH.namespace: row.resource["k8s.namespace.name"],
        CLOUDWATCH.pod: row.resource["k8s.pod.name"],
        CLOUDWATCH.deployment: deployment,
        f"@resource.{OTLP_INSTANCE}": row.resource[OTLP_INSTANCE],
        QUALITY_MODEL_LABEL: row.labels[QUALITY_MODEL_LABEL],
    }
    at = row.time_ns / 1e9
    total = 0
    for le, count in zip([*map(str, row.bounds), "+Inf"], row.bucket_counts, strict=True):
        total += count
        yield f"{row.name}_bucket", {**labels, "le": le}, at, float(total)


def _series(monkeypatch: pytest.MonkeyPatch) -> Iterator[Sample]:
    monkeypatch.setenv("POD_NAMESPACE", "serving")
    clock = {"now": float(START)}
    for (deployment, model, worker), stream in STREAMS.items():
        monkeypatch.setenv("POD_NAME", f"{deployment}-5d8f-{model[0]}")
        capture = Capture()
        quality = QualityRecorder(
            cluster_name=CLUSTER,
            model=model,
            buckets=BOUNDS,
            sink=capture,
            wall_clock=lambda: clock["now"],
            ticker=False,
        )
        for minute in range(MINUTES + 1):
            clock["now"] = START + minute * 60
            quality.flush()
            assert quality.drain(5.0)  # a minute apart: each request is sent before the next
            for value in stream:
                quality.record(value)
        clock["now"] = END + 30  # its last request, after the query's time
        quality.close()
        assert quality.sent == MINUTES + 1, worker
        for body in capture.bodies:
            for row in histograms(parse(body)):
                yield from _stored(row, deployment)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromQLClient]:
    folder: Path = tmp_path_factory.mktemp("quality")
    with pytest.MonkeyPatch.context() as monkeypatch:
        write_openmetrics(folder / "quality.om", _series(monkeypatch))
    with serve(folder / "quality.om", folder / "data") as url:
        yield PromQLClient(endpoint=url, region="us-east-1", credentials=None)


def test_each_models_counts_of_the_window_by_bucket_summed_over_its_workers(
    engine: PromQLClient,
) -> None:
    labels = legacy_labels()
    query = quality_buckets(CLUSTER, range_s=600, form=HistogramForm.CLASSIC, labels=labels)
    found = {
        (s.labels[QUALITY_MODEL_LABEL], s.labels["le"]): round(s.points[-1][1], 6)
        for s in engine.query(query, END)
    }
    assert found == {
        ("llama", "0.25"): 10.0,
        ("llama", "0.5"): 10.0,
        ("llama", "0.75"): 20.0,
        ("llama", "1.0"): 40.0,
        ("llama", "+Inf"): 40.0,
        ("mistral", "0.25"): 0.0,
        ("mistral", "0.5"): 20.0,
        ("mistral", "0.75"): 20.0,
        ("mistral", "1.0"): 20.0,
        ("mistral", "+Inf"): 20.0,
    }
    (grouped,) = {tuple(sorted(k for k in s.labels if k != "le")) for s in engine.query(query, END)}
    assert labels.deployment in grouped  # summed per model's Deployment, over its workers
