from __future__ import annotations

import logging
import random
import socket
import threading
import time
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

from gpu_insights_agent.emf.document import encode, parse_emf_line
from gpu_insights_agent.emf.sinks import SinkError
from gpu_insights_agent.emitter.otlp import encoder
from gpu_insights_agent.emitter.training import TrainingMetrics, TrainingMetricsError
from tests.unit.agent.emf.emf_contract import valid_emf
from tests.unit.agent.exporter.nvml_trace import Clock
from tests.unit.agent.otlp.otlp_json import parse, rows


class Keep:
    """Keeps what the emitter sends, read back as its encoding carries it: EMF lines checked
    against the specification's schema, or (``encoding="otlp"``) the OTLP JSON bodies the
    emitter's OTLP sink would POST, parsed as opentelemetry-proto's message and read back into
    the same names (the labels as the EMF keys they stand for)."""

    def __init__(self, encoding: str = "emf", namespace: str | None = None) -> None:
        self.documents: list[dict[str, Any]] = []
        self.down = False
        self.encoding = encoding
        self._encode = encoder(namespace)

    def send(self, documents: Any) -> None:
        if self.down:
            raise SinkError("agent unreachable")
        for document in documents:
            if self.encoding == "otlp":
                self.documents.append(_from_otlp(self._encode([document])))
                continue
            # Every line must be EMF by the specification's schema and limits.
            line = encode(document)
            valid_emf(line)
            self.documents.append(parse_emf_line(line))

    @property
    def windows(self) -> list[dict[str, Any]]:
        """The window's means (ClusterName, JobName), without the job alarms' documents."""
        return [d for d in self.documents if "loss_not_finite" not in d]

    @property
    def beats(self) -> list[dict[str, Any]]:
        """The job alarms' documents (ClusterName, JobName, Shard): each has loss_not_finite."""
        return [d for d in self.documents if "loss_not_finite" in d]


def _from_otlp(body: bytes) -> dict[str, Any]:
    """One document's OTLP request as the EMF keys its labels stand for, and its values."""
    found = rows(parse(body))
    (resource,) = {tuple(sorted(r.resource.items())) for r in found}
    (labels,) = {tuple(sorted(r.labels.items())) for r in found}
    assert {r.kind for r in found} == {"gauge"}
    keys = {"k8s.cluster.name": "ClusterName", "k8s.node.name": "NodeName",
            "k8s.pod.name": "PodName", "job_name": "JobName", "rank": "Rank"}  # fmt: skip
    document: dict[str, Any] = {keys[k]: v for k, v in (*resource, *labels) if k in keys}
    document["Rank"] = int(document["Rank"])
    document.update({r.name: r.value for r in found})
    return document


@pytest.fixture(params=["emf", "otlp"])
def encoding(request: pytest.FixtureRequest) -> str:
    """Tests that take it run over both encodings: the same windows and values either way."""
    return str(request.param)


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
    (window,) = sink.windows  # rank 3 records no outcome: rank 0 does, once for the job
    assert window["steps"] == 10
    assert window["step_time_seconds"] == pytest.approx(1.0)
    assert window["data_wait_seconds"] == pytest.approx(0.25)
    # The job's own share of its step time, so no dashboard divides one job by another.
    assert window["data_wait_share"] == pytest.approx(25.0)
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


def test_emission_rate_is_bounded_whatever_the_step_rate(encoding: str) -> None:
    clock, sink = Clock(0.0), Keep(encoding)
    metrics = TrainingMetrics(job_name="j", cluster_name="c", flush_s=60, sink=sink, clock=clock)
    for _ in metrics.steps(loader(clock, 36_000, wait=0.001, size=1)):  # 10 steps/s for an hour
        clock.now += 0.099
    metrics.flush()
    metrics.drain()
    # One document a minute (and the last partial one), however many steps: 36,000 in all.
    assert 60 <= len(sink.windows) <= 61
    assert len(sink.beats) == len(sink.windows)  # and the job alarms' heartbeat with each
    assert sum(d["steps"] for d in sink.windows) == 36_000


def test_a_dead_sink_never_reaches_the_training_loop(encoding: str) -> None:
    clock, sink = Clock(0.0), Keep(encoding)
    sink.down = True
    # close() waits for the queue's 202 refused sends: time enough on a loaded machine that the
    # count is read once each is done (a send cut off by the wait is counted later).
    metrics = TrainingMetrics(
        job_name="j", cluster_name="c", flush_s=1, sink=sink, clock=clock, close_timeout_s=60
    )
    trained = 0
    for _ in metrics.steps(loader(clock, 100, wait=0.1)):
        clock.now += 0.9
        trained += 1
    metrics.close(succeeded=False)
    assert trained == 100
    # 100 windows, each with its heartbeat; the last heartbeat (ended); the outcome
    assert metrics.dropped == 202
    sink.down = False
    metrics.record(loss=1.0)
    metrics.flush()
    metrics.drain()
    assert sink.windows[0]["loss"] == 1.0


def test_checkpoints_model_metrics_and_batches_without_len(encoding: str) -> None:
    clock, sink = Clock(0.0), Keep(encoding)
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
    metrics.drain()
    (document,) = sink.windows
    assert document["samples_per_second"] == pytest.approx(4 * 64 / 154)
    assert (document["checkpoint_save_seconds"], document["checkpoint_restore_seconds"]) == (
        120,
        30,
    )
    assert document["checkpoint_size_bytes"] == 5 * 2**30
    assert (document["loss"], document["learning_rate"]) == (2.0, 1e-4)
    assert "text" not in document


def test_context_manager_records_failure_on_exception(encoding: str) -> None:
    sink = Keep(encoding)
    with pytest.raises(RuntimeError), TrainingMetrics(job_name="j", cluster_name="c", sink=sink):
        raise RuntimeError("NCCL timeout")
    assert sink.documents[-1]["job_failed"] == 1.0


def test_a_record_name_that_would_clobber_the_document_is_refused_and_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock, sink = Clock(0.0), Keep()
    metrics = TrainingMetrics(
        job_name="llm", cluster_name="train", rank=2, node_name="n1", sink=sink, clock=clock
    )
    reserved = {
        "ClusterName": 1.0,
        "JobName": 2.0,
        "Rank": 3.0,
        "NodeName": 4.0,
        "_aws": 5.0,
        "steps": 6.0,
        "step_time_seconds": 7.0,
        "job_failed": 8.0,
    }
    with caplog.at_level(logging.WARNING, logger="gpu_insights_agent.emitter.training"):
        for _ in metrics.steps(loader(clock, 3, wait=0.5)):
            clock.now += 0.5
            metrics.record(loss=0.25, **reserved)  # the loop goes on; loss still counts
        metrics.record(**{"x" * 1025: 1.0})
    metrics.flush()
    metrics.drain()
    (document,) = sink.windows
    assert (document["ClusterName"], document["JobName"], document["Rank"]) == ("train", "llm", 2)
    assert (document["NodeName"], document["steps"], document["loss"]) == ("n1", 3, 0.25)
    assert document["step_time_seconds"] == pytest.approx(1.0)
    assert "job_failed" not in document
    assert metrics.refused == {**dict.fromkeys(reserved, 3), "x" * 1025: 1}
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 9  # once per name, not once per step
    assert "record(ClusterName=...) refused: a dimension; use another name" in warnings
    assert "record(steps=...) refused: a built-in metric; use another name" in warnings
    assert metrics.dropped == 0


def test_more_than_100_names_split_into_several_documents_none_dropped() -> None:
    clock, sink = Clock(0.0), Keep()
    metrics = TrainingMetrics(job_name="llm", cluster_name="train", sink=sink, clock=clock)
    for _ in metrics.steps(loader(clock, 2, wait=0.5)):
        clock.now += 0.5
        metrics.record(**{f"layer_{i:03d}_grad_norm": float(i) for i in range(230)})
    metrics.flush()
    metrics.drain()
    assert len(sink.windows) == 3
    assert metrics.emitted == 4  # and the heartbeat
    assert metrics.dropped == 0
    published: dict[str, float] = {}
    for document in sink.windows:
        names = [m["Name"] for m in document["_aws"]["CloudWatchMetrics"][0]["Metrics"]]
        assert len(names) <= 100
        assert (document["ClusterName"], document["JobName"], document["Rank"]) == (
            "train",
            "llm",
            0,
        )
        published.update({name: document[name] for name in names})
    # and steps, step time, data wait, its share of the step, samples per second; and for
    # goodput the step number, the step the attempt began from, compute and data wait seconds
    assert len(published) == 230 + 5 + 4
    assert published["layer_229_grad_norm"] == 229.0
    assert sink.documents[0]["steps"] == 2  # the built-in metrics lead the first document


def test_the_pod_name_comes_from_the_downward_api_variable(
    monkeypatch: pytest.MonkeyPatch, encoding: str
) -> None:
    """The GPU analyzer joins the job with Container Insights' pod GPU series on PodName (over
    OTLP: k8s.pod.name, as DCGM's series carry it)."""
    monkeypatch.setenv("POD_NAME", "llm-worker-3")
    clock, sink = Clock(0.0), Keep(encoding)
    metrics = TrainingMetrics(job_name="llm", cluster_name="train", sink=sink, clock=clock)
    for _ in metrics.steps(loader(clock, 2, wait=0.5)):
        clock.now += 0.5
    metrics.flush()
    metrics.drain()
    assert sink.documents[0]["PodName"] == "llm-worker-3"
    monkeypatch.delenv("POD_NAME")
    plain = TrainingMetrics(job_name="llm", cluster_name="train", sink=Keep(), clock=clock)
    assert plain.pod_name is None
    named = TrainingMetrics(
        job_name="llm", cluster_name="train", pod_name="p", sink=Keep(), clock=clock
    )
    assert named.pod_name == "p"


class Tensor:
    """The parts of a torch.Tensor the emitter may read: ``shape``, and a ``len()`` that raises
    for a 0-d tensor ("len() of a 0-d tensor"), as torch's does."""

    def __init__(self, *shape: int) -> None:
        self.shape = shape

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]


def _samples(batches: list[object]) -> tuple[float, TrainingMetrics]:
    clock, sink = Clock(0.0), Keep()
    metrics = TrainingMetrics(job_name="j", cluster_name="c", sink=sink, clock=clock)
    for _ in metrics.steps(batches):
        clock.now += 1.0
    metrics.close(succeeded=True)
    return sink.documents[0].get("samples_per_second", 0.0), metrics


def test_a_dict_batch_counts_samples_not_keys() -> None:
    """Hugging Face style: three keys, 16 samples; and a (inputs, labels) pair of tensors."""
    hf = {"input_ids": Tensor(16, 512), "attention_mask": Tensor(16, 512), "labels": [0] * 16}
    rate, _ = _samples([hf, hf])
    assert rate == pytest.approx(16.0)
    rate, _ = _samples([(Tensor(8, 3, 224, 224), Tensor(8)), Tensor(8, 10)])
    assert rate == pytest.approx(8.0)


def test_a_batch_whose_len_raises_is_counted_not_raised() -> None:
    rate, metrics = _samples([Tensor(), Tensor(4), Tensor()])
    assert metrics.unsized_batches == 2
    assert rate == pytest.approx(4 / 3)


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"job_name": ""}, "job_name"),
        ({"job_name": "  "}, "job_name"),
        ({"cluster_name": ""}, "cluster_name"),
        # CloudWatch's Dimension rule: ASCII, no control characters, at most 1024.
        ({"job_name": "a\nb"}, "job_name"),
        ({"job_name": "llama-\u00e9"}, "job_name"),
        ({"job_name": "x" * 1025}, "job_name"),
        ({"rank": float("nan")}, "rank"),
        ({"rank": -1}, "rank"),
        ({"flush_s": float("nan")}, "flush_s"),
        ({"flush_s": 0}, "flush_s"),
        ({"samples_per_step": 0}, "samples_per_step"),
        # Condition.wait(inf) raises OverflowError at close(), after the whole job ran.
        ({"close_timeout_s": float("inf")}, "close_timeout_s"),
        ({"close_timeout_s": -1}, "close_timeout_s"),
        ({"queue_capacity": 0}, "queue_capacity"),
    ],
)
def test_a_bad_argument_is_refused_at_construction_by_name(
    arguments: dict[str, Any], named: str
) -> None:
    with pytest.raises(TrainingMetricsError, match=named):
        TrainingMetrics(**{"job_name": "j", "cluster_name": "c", "sink": Keep(), **arguments})


def test_a_hanging_resolver_never_delays_a_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default endpoint is a DNS name; ``socket.create_connection`` resolves it with
    ``getaddrinfo``, which the socket timeout does not cover (Python docs, socket: "timeout"
    applies to socket operations; name resolution is a blocking libc call). Here it hangs until
    the loop ends: no step may wait for it."""
    released = threading.Event()

    def hang(*_: Any, **__: Any) -> Any:
        released.wait(10)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(socket, "getaddrinfo", hang)
    metrics = TrainingMetrics(job_name="j", cluster_name="c", flush_s=0.001, close_timeout_s=0)
    worst = 0.0
    started = time.perf_counter()
    for _ in metrics.steps(range(2000)):
        now = time.perf_counter()
        worst, started = max(worst, now - started), now
        time.sleep(0.00005)
    released.set()
    metrics.close(succeeded=True)
    assert worst < 0.1  # before: the first flush waited for the resolver (10 s)
    assert metrics.drain(5)
    assert metrics.emitted == 0
    assert metrics.dropped >= 1


# --- what the job alarms compare (cdk/alarms/jobs.py) -----------------------------------------


def _job(clock: Clock, sink: Keep, **kw: Any) -> TrainingMetrics:
    return TrainingMetrics(
        job_name="llm",
        cluster_name="train",
        flush_s=60,
        sink=sink,
        clock=clock,
        heartbeat=False,
        **kw,
    )


def _train(metrics: TrainingMetrics, clock: Clock, minutes: int, step_s: float = 1.0) -> None:
    """``minutes`` of one-second steps (32 samples each), flushed each minute."""
    for _ in metrics.steps(loader(clock, int(minutes * 60 / step_s), wait=0.0)):
        clock.now += step_s


def test_a_hung_rank_keeps_publishing_its_heartbeat_and_grows_overdue() -> None:
    clock, sink = Clock(0.0), Keep()
    metrics = _job(clock, sink)
    _train(metrics, clock, 10)
    # The loop hangs inside a step (a collective that never returns): only the heartbeat runs.
    for _ in range(20):
        clock.now += 60
        metrics.heartbeat()
    metrics.drain()
    beats = sink.beats
    assert beats[-1]["Shard"] == metrics.shard
    assert beats[-1]["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [
        ["ClusterName", "JobName", "Shard"]
    ]
    assert beats[-1]["JobState"] == "stalled"
    assert beats[-1]["seconds_since_step"] == pytest.approx(20 * 60)
    # Overdue from three median steps (3 s) after the last one.
    assert beats[-1]["step_overdue_seconds"] == pytest.approx(20 * 60 - 3)
    assert all(b["step_overdue_seconds"] == 0 for b in beats[:9])  # while it stepped
    # A loop that is stepping flushes by itself: the heartbeat publishes nothing more.
    published = len(sink.documents)
    metrics.heartbeat()
    metrics.drain()
    assert len(sink.documents) == published


def test_a_checkpoint_save_an_evaluation_and_the_end_are_no_hang() -> None:
    clock, sink = Clock(0.0), Keep()
    metrics = _job(clock, sink)
    _train(metrics, clock, 10)
    with metrics.checkpoint_save():
        for _ in range(15):  # a 15-minute save, the heartbeat going on
            clock.now += 60
            metrics.heartbeat()
    with metrics.evaluating():
        for _ in range(15):
            clock.now += 60
            metrics.heartbeat()
    clock.now += 2
    metrics.flush()  # two seconds after the evaluation: not overdue yet (3 s allowed)
    metrics.close(succeeded=True)
    states = [(b["JobState"], b["step_overdue_seconds"]) for b in sink.beats[10:]]
    assert states[:15] == [("checkpointing", 0.0)] * 15
    assert states[15:30] == [("evaluating", 0.0)] * 15
    assert states[30:] == [("stalled", 0.0), ("ended", 0.0)]
    # seconds_since_step still says how long it was since a step, for the dashboard.
    assert sink.beats[-2]["seconds_since_step"] == pytest.approx(30 * 60 + 2)


def test_the_same_pause_without_its_context_is_overdue() -> None:
    """The control of the test above: what makes those no hang is the context manager."""
    clock, sink = Clock(0.0), Keep()
    metrics = _job(clock, sink)
    _train(metrics, clock, 10)
    for _ in range(30):
        clock.now += 60
        metrics.heartbeat()
    metrics.drain()
    assert sink.beats[-1]["step_overdue_seconds"] == pytest.approx(30 * 60 - 3)


def test_overdue_is_measured_against_the_jobs_own_step_time() -> None:
    clock, sink = Clock(0.0), Keep()
    metrics = _job(clock, sink)
    _train(metrics, clock, 20, step_s=30.0)  # 30-second steps: due 90 s after the last
    clock.now += 120
    metrics.heartbeat()
    metrics.drain()
    assert sink.beats[-1]["step_overdue_seconds"] == pytest.approx(120 - 90)


def test_non_finite_losses_are_counted_and_never_published_as_values(encoding: str) -> None:
    clock, sink = Clock(0.0), Keep(encoding)
    metrics = _job(clock, sink)
    for i, _ in enumerate(metrics.steps(loader(clock, 6, wait=0.0))):
        clock.now += 1
        loss = [2.0, float("nan"), float("inf"), "nan", 1.0, float("-inf")][i]
        metrics.record(loss=loss, grad_norm=float("inf"))  # grad_norm inf: not the loss
    metrics.flush()
    metrics.drain()
    (window,) = sink.windows
    (beat,) = sink.beats
    assert beat["loss_not_finite"] == 4
    assert window["loss"] == 1.5  # the finite ones only: CloudWatch refuses NaN and inf
    assert "grad_norm" not in window


def test_a_loss_spike_is_measured_in_robust_deviations_over_the_recent_windows(
    encoding: str,
) -> None:
    clock, sink = Clock(0.0), Keep(encoding)
    metrics = _job(clock, sink)
    losses = [2.0, 1.9, 2.1, 2.0, 1.8, 2.2, 2.0, 9.0]
    for loss in losses:
        for _ in metrics.steps(loader(clock, 60, wait=0.0)):
            clock.now += 1
            metrics.record(loss=loss)
    metrics.flush()
    metrics.drain()
    deviations = [b.get("loss_deviation") for b in sink.beats]
    # Five windows before it says anything; then (loss - median) / (1.4826 x MAD).
    assert deviations[:5] == [None] * 5
    assert deviations[5] == pytest.approx((2.2 - 2.0) / (1.4826 * 0.1))
    # median 2.0, MAD 0.1 of the seven before: (9 - 2) / 0.148 = 47 deviations.
    assert deviations[7] == pytest.approx((9.0 - 2.0) / (1.4826 * 0.1))


def test_throughput_is_a_ratio_to_the_recent_median_leaving_out_checkpoints(encoding: str) -> None:
    clock, sink = Clock(0.0), Keep(encoding)
    metrics = _job(clock, sink)
    _train(metrics, clock, 10)  # 32 samples/s
    for _ in metrics.steps(loader(clock, 30, wait=0.0)):  # a minute with a 30 s checkpoint
        clock.now += 1
    with metrics.checkpoint_save():
        clock.now += 30
    metrics.flush()
    _train(metrics, clock, 3, step_s=4.0)  # a quarter of the speed
    metrics.drain()
    ratios = [b.get("throughput_ratio") for b in sink.beats]
    assert ratios[:5] == [None] * 5
    assert ratios[5:10] == [pytest.approx(1.0)] * 5
    assert ratios[10] == pytest.approx(1.0)  # the save is no slowdown
    assert ratios[11:] == [pytest.approx(0.25)] * 3


def test_the_heartbeat_thread_publishes_while_the_loop_is_stuck() -> None:
    sink = Keep()
    metrics = TrainingMetrics(job_name="llm", cluster_name="train", flush_s=0.05, sink=sink)
    for _ in metrics.steps([[0] * 32] * 3):
        pass
    time.sleep(0.5)  # stuck: no step, no flush from the loop
    metrics.drain()
    stuck = [b for b in sink.beats if b["JobState"] == "stalled"]
    assert len(stuck) >= 3
    assert stuck[-1]["seconds_since_step"] >= 0.3
    metrics.close(succeeded=True)
    assert sink.beats[-1]["JobState"] == "ended"


def test_a_million_record_calls_in_one_window_hold_constant_memory() -> None:
    """A window keeps running aggregates, not every value: before, a million ``record()``
    calls between two flushes held every float until the flush (tens of MB)."""
    clock, sink = Clock(0.0), Keep()
    metrics = _job(clock, sink)
    metrics.record(loss=1.0, grad_norm=1.0)  # the names' first entries, before measuring
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for i in range(1_000_000):
            metrics.record(loss=float(i % 7), grad_norm=0.5)
        after, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 64 * 1024
    assert peak - before < 64 * 1024
    metrics.flush()
    metrics.drain()
    (window,) = sink.windows
    # 1 + (0+1+...+6) over each 7 calls: the mean of what was recorded, nothing dropped.
    total = 1.0 + sum(float(i % 7) for i in range(1_000_000))
    assert window["loss"] == total / 1_000_001
    assert window["grad_norm"] == (1.0 + 0.5 * 1_000_000) / 1_000_001


def test_the_window_means_are_the_same_floats_as_the_mean_of_every_value() -> None:
    """The running mean adds left to right, as ``sum()`` over the kept values did, so the
    document of a small window is what it was to the last bit."""
    rng = random.Random(30)
    values = [rng.uniform(-1e3, 1e3) * 10 ** rng.randint(-8, 8) for _ in range(257)]
    clock, sink = Clock(0.0), Keep()
    metrics = _job(clock, sink)
    for value in values:
        metrics.record(loss=value)
    for seconds in (3.0, 41.5, 7.25):
        with metrics.checkpoint_save(size_bytes=int(seconds * 2**30)):
            clock.now += seconds
        with metrics.checkpoint_restore():
            clock.now += seconds / 2
    metrics.flush()
    metrics.drain()
    (window,) = sink.windows
    assert window["loss"] == sum(values) / len(values)
    assert window["checkpoint_save_seconds"] == 41.5
    assert window["checkpoint_restore_seconds"] == 20.75
    assert window["checkpoint_size_bytes"] == int(41.5 * 2**30)


def test_goodput_is_the_windows_step_time_less_data_wait_and_saves_over_its_wall_time(
    encoding: str,
) -> None:
    """docs/goodput.md's rolling goodput, window by window: a minute of steps a third of which
    waited for the batch is two thirds productive; a 30-second save inside a step is half a
    minute's badput; a minute with no step (a hang the heartbeat publishes) is 0; before the
    first step there is none (startup is the daily analyzer's)."""
    clock, sink = Clock(0.0), Keep(encoding)
    metrics = _job(clock, sink)
    clock.now += 60
    metrics.heartbeat()  # a minute of startup: no goodput yet
    for _ in metrics.steps(loader(clock, 80, wait=0.25)):  # 0.25 s wait + 0.5 s work a step
        clock.now += 0.5
    for i, _ in enumerate(metrics.steps(loader(clock, 20, wait=0.0))):
        clock.now += 1.5
        if i == 0:
            with metrics.checkpoint_save():  # inside the loop body: inside the step's time
                clock.now += 30
    clock.now += 60
    metrics.heartbeat()  # stuck: no step in the window
    metrics.drain()
    goodput = [b.get("goodput") for b in sink.beats]
    assert goodput[0] is None
    # 80 steps of 0.75 s: the minute, 20 s of it waiting for batches.
    assert goodput[1] == pytest.approx(40 / 60)
    # 20 steps of 1.5 s and the 30 s save inside the first: the minute, 30 s of it saving.
    assert goodput[2] == pytest.approx(30 / 60)
    assert goodput[3] == 0.0
