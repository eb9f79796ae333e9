"""The training emitter over OTLP/HTTP with the JSON encoding, against a local endpoint that
reads each request as the OTLP specification defines it (POST ``/v1/metrics``,
``application/json``, the ProtoJSON of ``ExportMetricsServiceRequest``:
https://opentelemetry.io/docs/specs/otlp/ "OTLP/HTTP"). The values are the EMF path's
(test_training.py runs its tests over both encodings); here: the wire, the labels, the choice of
endpoint and the guarantee that no step ever waits for it."""

import time

import pytest

from gpu_insights_agent.contract.metrics import OTLP_ENDPOINT_ENV
from gpu_insights_agent.emitter.training import TrainingMetrics, TrainingMetricsError
from gpu_insights_agent.otlp.http_sink import OtlpJsonSink
from tests.unit.agent.exporter.nvml_trace import Clock
from tests.unit.agent.otlp.otlp_endpoint import Endpoint, silent_endpoint


def _steps(metrics: TrainingMetrics, clock: Clock, n: int) -> None:
    for _ in metrics.steps(range(n)):
        clock.now += 0.5


def test_the_variable_sends_otlp_json_labelled_by_job_rank_pod_namespace_and_node(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(OTLP_ENDPOINT_ENV, endpoint.url)
    monkeypatch.setenv("POD_NAME", "llm-worker-3")
    monkeypatch.setenv("POD_NAMESPACE", "research")
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "2")
    clock = Clock(0.0)
    metrics = TrainingMetrics(
        job_name="llm",
        cluster_name="train",
        rank=3,
        node_name="ip-10-0-1-7.ec2.internal",
        samples_per_step=32,
        clock=clock,
        wall_clock=lambda: 1_764_000_000.0,
        heartbeat=False,
    )
    _steps(metrics, clock, 10)
    metrics.close(succeeded=True)
    assert set(endpoint.headers) == {("/v1/metrics", "application/json")}
    found = endpoint.rows()
    assert {tuple(sorted(r.resource.items())) for r in found} == {
        (
            ("k8s.cluster.name", "train"),
            ("k8s.namespace.name", "research"),
            ("k8s.node.name", "ip-10-0-1-7.ec2.internal"),
            ("k8s.pod.name", "llm-worker-3"),
            ("service.name", "gpu-insights-training"),
        )
    }
    assert {tuple(sorted(r.labels.items())) for r in found} == {
        (("attempt", "torchelastic-2"), ("job_name", "llm"), ("rank", "3"))
    }
    values = {r.name: (r.value, r.unit, r.time_ns) for r in found}
    assert values["steps"] == (10.0, "1", 1_764_000_000 * 10**9)
    assert values["step_time_seconds"][:2] == (0.5, "s")
    assert values["samples_per_second"][0] == pytest.approx(64.0)
    assert values["samples_per_second"][1] == "1/s"
    assert values["data_wait_share"][:2] == (0.0, "%")
    assert values["seconds_since_step"][0] == 0.0  # the heartbeat's metrics ride along
    assert "job_succeeded" not in values  # rank 3: only rank 0 records the outcome
    assert metrics.dropped == 0


def test_each_attempt_is_its_own_series_and_a_process_with_no_launcher_count_draws_one(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attempt rides on every datapoint, so PromQL reads a restart's series apart."""
    monkeypatch.delenv("TORCHELASTIC_RESTART_COUNT", raising=False)
    monkeypatch.setenv("JOBSET_RESTART_ATTEMPT", "1")
    for _ in range(2):
        metrics = TrainingMetrics(
            job_name="j", cluster_name="c", otlp_endpoint=endpoint.url, heartbeat=False
        )
        metrics.close(succeeded=False)
        monkeypatch.delenv("JOBSET_RESTART_ATTEMPT", raising=False)
    attempts = [r.labels["attempt"] for r in endpoint.rows()]
    assert attempts[:3] == ["jobset-1"] * 3
    drawn = set(attempts[3:])
    assert len(drawn) == 1
    assert len(drawn.pop()) == 12  # uuid4's first 12 hex digits, not the launcher's count


def test_the_argument_wins_over_the_variable_and_a_bad_url_is_refused_by_name(
    endpoint: Endpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(OTLP_ENDPOINT_ENV, "http://nowhere.invalid:4318/v1/metrics")
    metrics = TrainingMetrics(job_name="j", cluster_name="c", otlp_endpoint=endpoint.url)
    metrics.close(succeeded=False)
    # A job that never stepped: its seconds were all startup (docs/goodput.md).
    assert [r.name for r in endpoint.rows()] == ["startup_seconds", "loss_not_finite", "job_failed"]
    with pytest.raises(TrainingMetricsError, match=r"otlp_endpoint: .* is not http"):
        TrainingMetrics(job_name="j", cluster_name="c", otlp_endpoint="tcp://agent:4318")
    monkeypatch.delenv(OTLP_ENDPOINT_ENV)
    plain = TrainingMetrics(job_name="j", cluster_name="c", endpoint=None, heartbeat=False)
    assert not isinstance(plain._sender._sink, OtlpJsonSink)  # EMF unless asked
    plain.close(succeeded=True)


def test_a_refusing_endpoint_costs_counted_documents_never_a_step(endpoint: Endpoint) -> None:
    endpoint.status = 503
    clock = Clock(0.0)
    metrics = TrainingMetrics(
        job_name="j", cluster_name="c", otlp_endpoint=endpoint.url, flush_s=1, clock=clock
    )
    _steps(metrics, clock, 20)  # ten one-second windows
    metrics.close(succeeded=True)
    assert metrics.emitted == 0
    assert metrics.dropped == 10 * 2 + 1 + 1  # windows and heartbeats, the last beat, outcome


def test_an_endpoint_that_accepts_and_never_answers_never_delays_a_step() -> None:
    """A listener that takes the connection and never reads nor answers: the sender thread waits
    out its timeout; the loop never does."""
    with silent_endpoint() as url:
        metrics = TrainingMetrics(
            job_name="j", cluster_name="c", otlp_endpoint=url, flush_s=0.001, close_timeout_s=0
        )
        worst = 0.0
        started = time.perf_counter()
        for _ in metrics.steps(range(2000)):
            now = time.perf_counter()
            worst, started = max(worst, now - started), now
            time.sleep(0.00005)
        metrics.close(succeeded=True)
        assert worst < 0.1
        assert metrics.emitted == 0
