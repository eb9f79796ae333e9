from collections.abc import Iterator
from typing import Any

import pytest

from agent.emf import encode, parse_emf_line
from agent.sinks import SinkError
from agent.training import TrainingMetrics
from tests.unit.agent.nvml_trace import Clock


class Keep:
    def __init__(self) -> None:
        self.documents: list[dict[str, Any]] = []
        self.down = False

    def send(self, documents: Any) -> None:
        if self.down:
            raise SinkError("agent unreachable")
        self.documents.extend(parse_emf_line(encode(d)) for d in documents)


def loader(clock: Clock, batches: int, wait: float, size: int = 32) -> Iterator[list[int]]:
    for _ in range(batches):
        clock.now += wait  # the time the loader takes to produce the batch
        yield [0] * size


def test_steps_time_the_wait_and_the_step(monkeypatch: pytest.MonkeyPatch) -> None:
    clock, sink = Clock(0.0), Keep()
    metrics = TrainingMetrics(
        job_name="llm",
        cluster_name="train",
        rank=3,
        node_name="n1",
        flush_s=60,
        sink=sink,
        clock=clock,
        wall_clock=lambda: 1_764_000_000.0,
    )
    for _ in metrics.steps(loader(clock, 10, wait=0.25)):
        clock.now += 0.75  # the training step
    metrics.close(succeeded=True)
    (window,) = sink.documents  # rank 3 records no outcome: rank 0 does, once for the job
    assert window["steps"] == 10
    assert window["step_time_seconds"] == pytest.approx(1.0)
    assert window["data_wait_seconds"] == pytest.approx(0.25)
    assert window["samples_per_second"] == pytest.approx(32.0)
    assert (window["ClusterName"], window["JobName"], window["Rank"], window["NodeName"]) == (
        "train",
        "llm",
        3,
        "n1",
    )
    directive = window["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == "GpuInsights/Training"
    assert directive["Dimensions"] == [["ClusterName", "JobName"]]
    assert window["_aws"]["LogGroupName"] == "/aws/gpu-insights/train/training"
    assert "job_succeeded" not in window


def test_emission_rate_is_bounded_whatever_the_step_rate() -> None:
    clock, sink = Clock(0.0), Keep()
    metrics = TrainingMetrics(job_name="j", cluster_name="c", flush_s=60, sink=sink, clock=clock)
    for _ in metrics.steps(loader(clock, 36_000, wait=0.001, size=1)):  # 10 steps/s for an hour
        clock.now += 0.099
    metrics.flush()
    # One document a minute (and the last partial one), however many steps: 36,000 in all.
    assert 60 <= len(sink.documents) <= 61
    assert sum(d["steps"] for d in sink.documents) == 36_000


def test_a_dead_sink_never_reaches_the_training_loop() -> None:
    clock, sink = Clock(0.0), Keep()
    sink.down = True
    metrics = TrainingMetrics(job_name="j", cluster_name="c", flush_s=1, sink=sink, clock=clock)
    trained = 0
    for _ in metrics.steps(loader(clock, 100, wait=0.1)):
        clock.now += 0.9
        trained += 1
    metrics.close(succeeded=False)
    assert trained == 100
    assert metrics.dropped == 101  # 100 windows and the outcome
    sink.down = False
    metrics.record(loss=1.0)
    metrics.flush()
    assert sink.documents[0]["loss"] == 1.0


def test_checkpoints_model_metrics_and_batches_without_len() -> None:
    clock, sink = Clock(0.0), Keep()
    metrics = TrainingMetrics(
        job_name="j", cluster_name="c", sink=sink, clock=clock, samples_per_step=64
    )

    def unsized() -> Iterator[object]:
        for _ in range(4):
            clock.now += 0.5
            yield object()

    for _ in metrics.steps(unsized()):
        clock.now += 0.5
        metrics.record(loss=2.0, learning_rate=1e-4, text="ignored")
    with metrics.checkpoint_save(size_bytes=5 * 2**30):
        clock.now += 120
    with metrics.checkpoint_restore():
        clock.now += 30
    metrics.flush()
    (document,) = sink.documents
    assert document["samples_per_second"] == pytest.approx(4 * 64 / 154)
    assert (document["checkpoint_save_seconds"], document["checkpoint_restore_seconds"]) == (
        120,
        30,
    )
    assert document["checkpoint_size_bytes"] == 5 * 2**30
    assert (document["loss"], document["learning_rate"]) == (2.0, 1e-4)
    assert "text" not in document


def test_context_manager_records_failure_on_exception() -> None:
    sink = Keep()
    with pytest.raises(RuntimeError), TrainingMetrics(job_name="j", cluster_name="c", sink=sink):
        raise RuntimeError("NCCL timeout")
    assert sink.documents[-1]["job_failed"] == 1.0
