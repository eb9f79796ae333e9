"""Training metrics for CloudWatch, from inside the training loop, at a bounded cost.

Three lines in a training script::

    from gpu_insights_agent.emitter.training import TrainingMetrics
    metrics = TrainingMetrics(job_name="llama-ft", cluster_name="train", rank=rank)
    for batch in metrics.steps(loader):   # times each step and the wait for its batch
        ...                               # the training step, unchanged
    metrics.close(succeeded=True)         # or False; also flushes what is left

It aggregates in process and emits one EMF document per ``flush_s`` (60 s by default) however
fast the loop steps (more than 100 metrics go out as several documents, as EMF allows 100 a
directive), to the CloudWatch agent's EMF listener or stdout; or, only when ``otlp_endpoint``
(or the ``GPU_INSIGHTS_OTLP_ENDPOINT`` variable) names it, as OTLP/HTTP JSON to the add-on's
OTLP endpoint (``emitter.otlp``: the same windows and values, labelled for PromQL), which a
training pod of an OTel-mode deployment with exporter_sink=otlp sets; nothing picks it by
itself, since a training script cannot see the deployment's settings.

It never blocks or raises into the loop. The loop only adds to an in-memory aggregate; once
a window is due it hands the window's documents to a daemon sender thread through a bounded
queue, and that thread does all network work (name resolution, connecting, writing). A
resolver that hangs, an agent that refuses, or one that accepts and never reads cost dropped
documents and a counter (``dropped``), never a step. A ``record()`` name that would clobber part
of the document is refused, counted and logged once; a batch whose size cannot be read is
counted in ``unsized_batches``. ``close()`` waits up to ``close_timeout_s`` for the queue.

Besides the window's means it publishes, with the job's alarm shard, what the job alarms
compare (cdk/alarms/jobs.py), because CloudWatch can neither see a series that stopped nor
take a median: a heartbeat that a daemon thread keeps publishing every ``flush_s`` while the
loop is stuck (``seconds_since_step``, ``step_overdue_seconds``, which stays 0 inside
``checkpoint_save()`` and ``evaluating()`` and ends at ``close()``); the count of NaN and
infinite losses, which CloudWatch refuses as values ("CloudWatch rejects values that are
either too small or too large. Values must be in the range of -2^360 to 2^360. In addition,
special values (for example, NaN, +Infinity, -Infinity) are not supported", MetricDatum,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricDatum.html); and the
loss and throughput against the rank's own recent median, which Metrics Insights (AVG, COUNT,
MAX, MIN, SUM) cannot compute.

Standard library only, Python 3.9 and later (with emf.document, emf.sinks,
emitter.background_sender, emitter.otlp, otlp.json_encoding, otlp.http_sink and
contract.metrics, which are too; ``make test`` checks them
with vermin).
"""

import contextlib
import logging
import math
import os
import statistics
import threading
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional, Tuple, TypeVar

from gpu_insights_agent.contract.metrics import (
    ATTEMPT_ENVS,
    DIM_CLUSTER,
    DIM_JOB,
    DIM_NODE,
    DIM_SHARD,
    EMF_PORT,
    GPUS_ENV,
    JOB_ALARM_DIMENSIONS,
    MIN_RECENT_WINDOWS,
    NAMESPACE_TRAINING,
    OTLP_ENDPOINT_ENV,
    POD_NAME_ENV,
    PROP_ATTEMPT,
    PROP_GPUS,
    PROP_JOB_STATE,
    PROP_POD_NAME,
    PROP_RANK,
    RECENT_WINDOWS,
    STEP_DUE_MULTIPLE,
    TIME_METRICS,
    TRAINING_DIMENSIONS,
    TRAINING_METRIC_UNITS,
    JobState,
    TrainingMetric,
    dimension_value_problem,
    job_shard,
    training_log_group,
)
from gpu_insights_agent.emf.document import (
    MAX_NAME_LENGTH,
    METADATA_KEY,
    EmfDocument,
    emf_document,
    metric_chunks,
)
from gpu_insights_agent.emf.sinks import Sink, StdoutSink, TcpEmfSink
from gpu_insights_agent.emitter.background_sender import BackgroundSender
from gpu_insights_agent.emitter.otlp import encoder, pod_namespace
from gpu_insights_agent.otlp.http_sink import OtlpJsonSink, endpoint_problem

log = logging.getLogger(__name__)
T = TypeVar("T")
_UNITS = {str(metric): unit for metric, unit in TRAINING_METRIC_UNITS.items()}

#: Names ``record()`` refuses, with why: each is already a member of the document's root (EMF
#: keeps metrics, dimensions and properties side by side there), and reusing one would
#: overwrite a dimension, the rank, a built-in metric or the metadata.
RESERVED_NAMES: dict[str, str] = {
    METADATA_KEY: "EMF's metadata member",
    DIM_CLUSTER: "a dimension",
    DIM_JOB: "a dimension",
    PROP_RANK: "the rank property",
    DIM_NODE: "the node property",
    PROP_POD_NAME: "the pod name property",
    **{str(metric): "a built-in metric" for metric in TrainingMetric},
}


class TrainingMetricsError(ValueError):
    """A ``TrainingMetrics`` argument it cannot run with; raised at construction, before the
    loop, and the message names the argument."""


def batch_size(batch: object) -> Optional[int]:
    """Samples in a batch: the first dimension of a tensor (``.shape[0]``); for a mapping
    (Hugging Face style) or a sequence whose items are tensors, the first dimension of its
    first tensor-like value; otherwise ``len()``. None when it has none of these. May raise
    whatever the batch's own ``len()`` or ``shape`` raise (a 0-d tensor's ``len()``)."""
    if isinstance(batch, Mapping):
        for value in batch.values():
            if hasattr(value, "shape"):
                return int(value.shape[0])
        return None
    if hasattr(batch, "shape"):
        return int(batch.shape[0])
    if isinstance(batch, (list, tuple)) and batch and hasattr(batch[0], "shape"):
        return int(batch[0].shape[0])
    if hasattr(batch, "__len__"):
        return len(batch)
    return None


class _Mean:
    """A running mean: ``record()`` may be called millions of times in one window, and the
    document needs only the mean, so each name holds two numbers, not its values. Adding left
    to right gives the same float as ``sum()`` over the list did."""

    __slots__ = ("count", "total")

    def __init__(self) -> None:
        self.total = 0.0
        self.count = 0

    def add(self, value: float) -> None:
        self.total += value
        self.count += 1

    @property
    def mean(self) -> float:
        return self.total / self.count


def _max(current: Optional[float], value: float) -> float:
    return value if current is None or value > current else current


@dataclass
class _Window:
    """What happened since the last flush: running aggregates only, so memory stays flat
    however many steps, checkpoints and ``record()`` calls a window holds."""

    started: float
    #: Wall-clock start: the window's metrics are stamped with the time they began, so the
    #: last window of a run does not fall into the next hour.
    wall_started: float = 0.0
    steps: int = 0
    samples: float = 0.0
    step_time: float = 0.0
    data_wait: float = 0.0
    #: The longest save and restore, the largest checkpoint (the document publishes maxima).
    checkpoint_save: Optional[float] = None
    checkpoint_restore: Optional[float] = None
    checkpoint_size: Optional[float] = None
    model: dict[str, _Mean] = field(default_factory=dict)
    #: Seconds inside checkpoint_save() or evaluating(): not training time.
    paused: float = 0.0
    #: Of them, those inside a step (the loop body saved or evaluated): in ``step_time``.
    paused_in_steps: float = 0.0
    loss_not_finite: int = 0
    #: Seconds by what the rank was doing (``TIME_METRICS``): they add up to the window.
    times: dict[TrainingMetric, float] = field(default_factory=dict)
    #: The step number after the window's last step, and where this attempt began (its
    #: first window with a step only).
    step_number: Optional[int] = None
    resumed_from: Optional[int] = None


#: Scales a median absolute deviation to a standard deviation's size for normal data.
MAD_TO_SIGMA = 1.4826


def robust_deviation(value: float, recent: "Iterable[float]") -> Optional[float]:
    """``value`` in robust deviations from the median of ``recent``: (value - median) /
    (1.4826 x MAD). None with fewer than ``MIN_RECENT_WINDOWS`` values, or no spread."""
    values = list(recent)
    if len(values) < MIN_RECENT_WINDOWS:
        return None
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values)
    if mad <= 0:
        return None
    return (value - median) / (MAD_TO_SIGMA * mad)


def window_goodput(
    step_time: float, data_wait: float, paused_in_steps: float, elapsed: float
) -> Optional[float]:
    """The share of a window spent on productive steps (0 to 1): the steps' time less their
    data wait and the checkpoint saves and evaluation inside them, over the window's wall time
    (docs/goodput.md). None for a window of no time. A step is counted in the window it ends
    in, so one that began in the last window may make the share pass 1: it is held to 1."""
    if elapsed <= 0:
        return None
    productive = step_time - data_wait - paused_in_steps
    return min(1.0, max(0.0, productive / elapsed))


def attempt_id(environ: Mapping[str, str]) -> str:
    """The attempt (this process) as the job's launcher numbers it (``ATTEMPT_ENVS``:
    ``torchelastic-2``, ``jobset-1``), else an id drawn now: each process is an attempt."""
    for name in ATTEMPT_ENVS:
        value = environ.get(name, "").strip()
        if value.isdigit():
            return f"{name.split('_')[0].lower()}-{value}"
    return uuid.uuid4().hex[:12]


def _sink(
    sink: Optional[Sink], endpoint: Optional[Tuple[str, int]], otlp_endpoint: Optional[str]
) -> Sink:
    """Where the documents go: ``sink``; else OTLP/HTTP JSON to ``otlp_endpoint`` or the
    ``GPU_INSIGHTS_OTLP_ENDPOINT`` variable; else EMF to ``endpoint`` (stdout when None)."""
    if sink is not None:
        return sink
    if otlp_endpoint is None:
        otlp_endpoint = os.environ.get(OTLP_ENDPOINT_ENV) or None
    if otlp_endpoint is not None:
        problem = endpoint_problem(otlp_endpoint)
        if problem:
            raise TrainingMetricsError(f"otlp_endpoint: {problem}")
        return OtlpJsonSink(otlp_endpoint, encoder(pod_namespace()))
    return StdoutSink() if endpoint is None else TcpEmfSink(*endpoint, timeout_s=0.5)


class TrainingMetrics:
    def __init__(
        self,
        *,
        job_name: str,
        cluster_name: str,
        rank: int = 0,
        node_name: Optional[str] = None,
        pod_name: Optional[str] = None,
        flush_s: float = 60.0,
        sink: Optional[Sink] = None,
        endpoint: Optional[Tuple[str, int]] = ("cloudwatch-agent.amazon-cloudwatch", EMF_PORT),
        samples_per_step: Optional[int] = None,
        close_timeout_s: float = 5.0,
        queue_capacity: int = 64,
        clock: Callable[[], float] = time.perf_counter,
        wall_clock: Callable[[], float] = time.time,
        loss_name: str = "loss",
        heartbeat: bool = True,
        gpus: Optional[str] = None,
        otlp_endpoint: Optional[str] = None,
    ) -> None:
        """``sink`` wins over ``otlp_endpoint``, which wins over ``endpoint``;
        ``endpoint=None`` prints EMF to stdout (Fluent Bit ships it). ``otlp_endpoint`` (default:
        the ``GPU_INSIGHTS_OTLP_ENDPOINT`` variable; in OTel mode the add-on's
        ``DEFAULT_OTLP_ENDPOINT``) sends the same metrics as OTLP/HTTP JSON to that URL instead
        of EMF, for PromQL. ``samples_per_step`` counts samples where batches have no size of their
        own. ``pod_name`` (default: the ``POD_NAME`` variable the downward API sets) lets the
        GPU analyzer attribute the pod's GPU-hours to this job exactly. ``loss_name`` is the
        ``record()`` name whose NaN and infinities are counted and whose spikes are measured.
        ``gpus`` (default: ``NVIDIA_VISIBLE_DEVICES``, which the NVIDIA device plugin sets to
        the container's GPUs) names the rank's GPUs in a job alarm's page.
        ``heartbeat`` starts the daemon thread that publishes the window every ``flush_s``
        when the loop has not (a loop stuck in a collective); without it, ``heartbeat()``
        does that when called. A bad argument raises ``TrainingMetricsError`` here, never in
        the loop."""
        for what, name in (("job_name", job_name), ("cluster_name", cluster_name)):
            problem = dimension_value_problem(what, name)
            if problem:
                raise TrainingMetricsError(problem)
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
            raise TrainingMetricsError(f"rank must be an integer of 0 or more, not {rank!r}")
        if not (isinstance(flush_s, (int, float)) and 0 < flush_s < math.inf):
            raise TrainingMetricsError(f"flush_s must be a positive number, not {flush_s!r}")
        if not (isinstance(close_timeout_s, (int, float)) and 0 <= close_timeout_s <= 3600):
            raise TrainingMetricsError(
                f"close_timeout_s must be 0 to 3600 seconds, not {close_timeout_s!r}"
            )
        if isinstance(queue_capacity, bool) or not (
            isinstance(queue_capacity, int) and queue_capacity >= 1
        ):
            raise TrainingMetricsError(
                f"queue_capacity must be a positive integer, not {queue_capacity!r}"
            )
        if samples_per_step is not None and (
            isinstance(samples_per_step, bool)
            or not isinstance(samples_per_step, int)
            or samples_per_step < 1
        ):
            raise TrainingMetricsError(
                f"samples_per_step must be a positive integer, not {samples_per_step!r}"
            )
        sink = _sink(sink, endpoint, otlp_endpoint)
        self.job_name = job_name
        self.cluster_name = cluster_name
        self.rank = rank
        self.node_name = node_name
        self.pod_name = pod_name if pod_name is not None else os.environ.get(POD_NAME_ENV) or None
        self.flush_s = flush_s
        self.samples_per_step = samples_per_step
        self.close_timeout_s = close_timeout_s
        #: Batches whose size could not be read (their ``len()`` or ``shape`` raised).
        self.unsized_batches = 0
        #: Values ``record()`` refused, by name (a reserved or over-long name); logged once each.
        self.refused: Counter[str] = Counter()
        self._clock = clock
        self._wall = wall_clock
        self.loss_name = loss_name
        self.shard = job_shard(job_name)
        self.gpus = gpus if gpus is not None else os.environ.get(GPUS_ENV) or None
        #: Guards the window between the loop and the heartbeat thread (held for in-memory
        #: work only, never for I/O).
        self._lock = threading.RLock()
        started = clock()
        self._last_step: Optional[float] = None
        self._progress_at = started
        #: checkpoint_save() and evaluating() in progress (they may nest).
        self._pauses: list[JobState] = []
        #: The loop body of ``steps()`` is running: a pause now is inside a step's time.
        self._in_step = False
        self._recent_step_time: deque[float] = deque(maxlen=RECENT_WINDOWS)
        self._recent_rate: deque[float] = deque(maxlen=RECENT_WINDOWS)
        self._recent_loss: deque[float] = deque(maxlen=RECENT_WINDOWS)
        self._start_accounting(started)
        self._sender = BackgroundSender(sink, capacity=queue_capacity)
        self._sender.start()
        self._window = _Window(started=started, wall_started=wall_clock())
        self._closed = False
        self._stop = threading.Event()
        if heartbeat:
            thread = threading.Thread(
                target=self._beat, name="training-metrics-heartbeat", daemon=True
            )
            thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.flush_s):
            try:
                self.heartbeat()
            except Exception:  # never let the thread die with a traceback in the job's log
                log.exception("training metrics heartbeat failed")

    def heartbeat(self) -> None:
        """Publish the window if the loop has not for ``flush_s`` (it is stuck in a step, a
        checkpoint save or an evaluation): the heartbeat keeps the job's series alive, so a
        hang is a value the alarm compares, not a series that stops (which a multi time
        series alarm reads as OK)."""
        with self._lock:
            if not self._closed and self._clock() - self._window.started >= self.flush_s:
                self.flush()

    # --- measuring ---------------------------------------------------------------------------

    def steps(self, batches: Iterable[T]) -> Iterator[T]:
        """Yields the batches unchanged. The time spent getting each batch is its data wait;
        the time from one batch to the next is a step. Works for any iterable (a PyTorch
        DataLoader among them) without importing torch."""
        iterator = iter(batches)
        clock = self._clock
        step_started = clock()
        try:
            while True:
                wait_started = clock()
                self._switch(TrainingMetric.DATA_WAIT_TIME, wait_started)
                try:
                    batch = next(iterator)
                except StopIteration:
                    return
                got = clock()
                self._switch(TrainingMetric.COMPUTE_TIME, got, step_work=True)
                self._in_step = True
                try:
                    yield batch
                finally:
                    self._in_step = False
                done = clock()
                self._record_step(done - step_started, got - wait_started, batch)
                step_started = done
        finally:  # the loop ended, broke out, or raised: the rank no longer steps
            self._switch(TrainingMetric.IDLE_TIME, clock())

    # --- where the time goes (goodput) ------------------------------------------------------

    def _start_accounting(self, started: float) -> None:
        #: What the rank is doing now (a ``TIME_METRICS`` member, None once closed), since when,
        #: and when its current step's work began (for the part past due: stalled).
        self._doing: Optional[TrainingMetric] = TrainingMetric.STARTUP_TIME
        self._doing_since = started
        self._step_work_since: Optional[float] = None
        self._step_number = 0
        self._stepped = False
        #: This process's attempt (``attempt_id``), the ``Attempt`` property of its documents.
        self.attempt = attempt_id(os.environ)

    def resume_from_step(self, step: int) -> None:
        """Say the step this attempt goes on from (the restored checkpoint's): the step numbers
        it publishes count on from it, and a restart that went back to an earlier step shows as
        progress lost (docs/goodput.md). Call it before the first step."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise TrainingMetricsError(f"step must be an integer of 0 or more, not {step!r}")
        with self._lock:
            self._step_number = step

    def _charge(self, now: float) -> None:
        """Add the time since the last charge to what the rank was doing; a step's work past
        when it was due (``STEP_DUE_MULTIPLE`` x the recent median step) is stalled."""
        doing, since = self._doing, self._doing_since
        if doing is None or now <= since:
            return
        times = self._window.times
        if doing is TrainingMetric.COMPUTE_TIME and self._step_work_since is not None:
            recent = self._recent_step_time
            if recent:
                due = self._step_work_since + STEP_DUE_MULTIPLE * statistics.median(recent)
                stalled = now - max(since, due)
                if stalled > 0:
                    times[TrainingMetric.STALLED_TIME] = (
                        times.get(TrainingMetric.STALLED_TIME, 0.0) + stalled
                    )
                    now_working = max(0.0, min(now, due) - since)
                    times[doing] = times.get(doing, 0.0) + now_working
                    self._doing_since = now
                    return
        times[doing] = times.get(doing, 0.0) + (now - since)
        self._doing_since = now

    def _switch(self, doing: TrainingMetric, now: float, step_work: bool = False) -> None:
        with self._lock:
            self._switch_locked(doing, now, step_work)

    def _switch_locked(self, doing: TrainingMetric, now: float, step_work: bool = False) -> None:
        if self._doing is None:
            return
        self._charge(now)
        self._doing = doing
        if step_work:
            self._step_work_since = now
        elif doing is not TrainingMetric.COMPUTE_TIME:
            self._step_work_since = None

    def _record_step(self, step_time: float, data_wait: float, batch: object) -> None:
        with self._lock:
            self._switch_locked(TrainingMetric.IDLE_TIME, self._clock())
            self._record_step_locked(step_time, data_wait, batch)

    def _record_step_locked(self, step_time: float, data_wait: float, batch: object) -> None:
        window = self._window
        self._last_step = self._progress_at = self._clock()
        if not self._stepped:
            self._stepped = True
            window.resumed_from = self._step_number
        self._step_number += 1
        window.step_number = self._step_number
        window.steps += 1
        window.step_time += step_time
        window.data_wait += data_wait
        if self.samples_per_step is not None:
            window.samples += self.samples_per_step
        else:
            try:
                size = batch_size(batch)
            except Exception:  # the batch's own len() or shape: counted, never raised
                self.unsized_batches += 1
            else:
                if size is not None and size >= 0:
                    window.samples += size
        if self._clock() - window.started >= self.flush_s:
            self.flush()

    @property
    def emitted(self) -> int:
        """Documents the sink took."""
        return self._sender.sent

    @property
    def dropped(self) -> int:
        """Documents lost: the sink failed, or the queue to it was full."""
        return self._sender.dropped

    @contextlib.contextmanager
    def _paused(self, state: JobState) -> Iterator[float]:
        """A stretch that is no training: the heartbeat says so, and the rank's step is not
        overdue while it lasts, nor its throughput lower for it."""
        doing = (
            TrainingMetric.CHECKPOINT_SAVE_TIME
            if state is JobState.CHECKPOINTING
            else TrainingMetric.EVALUATION_TIME
        )
        with self._lock:
            self._pauses.append(state)
            started = self._clock()
            before, work_since = self._doing, self._step_work_since
            self._switch_locked(doing, started)
        try:
            yield started
        finally:
            with self._lock:
                self._pauses.remove(state)
                now = self._progress_at = self._clock()
                if before is not None:
                    # Back to what it was doing; a step's work goes on from now, its due time
                    # from its own start (a save in the step is no stall).
                    self._switch_locked(before, now)
                    if work_since is not None and before is TrainingMetric.COMPUTE_TIME:
                        self._step_work_since = work_since + (now - started)
                # The part of the pause inside the current window (a flush may fall within it).
                inside = now - max(started, self._window.started)
                self._window.paused += inside
                if self._in_step:
                    self._window.paused_in_steps += inside

    @contextlib.contextmanager
    def checkpoint_save(self, size_bytes: Optional[int] = None) -> Iterator[None]:
        with self._paused(JobState.CHECKPOINTING) as started:
            try:
                yield
            finally:
                w = self._window
                w.checkpoint_save = _max(w.checkpoint_save, self._clock() - started)
                if size_bytes is not None:
                    w.checkpoint_size = _max(w.checkpoint_size, float(size_bytes))

    @contextlib.contextmanager
    def evaluating(self) -> Iterator[None]:
        """Wrap evaluation between epochs (``with metrics.evaluating(): evaluate(model)``):
        no step completes while it runs, and that is no hang."""
        with self._paused(JobState.EVALUATING):
            yield

    @contextlib.contextmanager
    def checkpoint_restore(self) -> Iterator[None]:
        started = self._clock()
        try:
            yield
        finally:
            w = self._window
            w.checkpoint_restore = _max(w.checkpoint_restore, self._clock() - started)

    def record(self, **values: object) -> None:
        """Free-form model metrics (loss, learning_rate, grad_norm, eval_accuracy, ...): the
        mean over the flush interval is published.

        A name in ``RESERVED_NAMES`` (``ClusterName``, ``JobName``, ``Rank``, ``NodeName``,
        ``_aws``, a built-in metric such as ``steps``) or longer than EMF's 1024 characters is
        refused: never published, counted in ``refused`` and logged once, so that the loop goes
        on and the other values still count. Values that are not numbers, and NaN or infinity,
        are skipped; for ``loss_name``, NaN and infinity are counted in ``loss_not_finite``."""
        with self._lock:
            self._record_locked(values)

    def _record_locked(self, values: Mapping[str, object]) -> None:
        model = self._window.model
        for name, value in values.items():
            if name not in model and not self._accepts(name):
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                continue
            try:
                number = float(value)
            except ValueError:
                continue
            if math.isfinite(number):
                mean = model.get(name)
                if mean is None:
                    mean = model[name] = _Mean()
                mean.add(number)
            elif name == self.loss_name:
                self._window.loss_not_finite += 1

    def _accepts(self, name: str) -> bool:
        why = RESERVED_NAMES.get(name)
        if why is None and 1 <= len(name) <= MAX_NAME_LENGTH:
            return True
        self.refused[name] += 1
        if self.refused[name] == 1:
            reason = why or f"EMF takes names of 1 to {MAX_NAME_LENGTH} characters"
            log.warning("record(%.60s=...) refused: %s; use another name", name, reason)
        return False

    # --- emitting ----------------------------------------------------------------------------

    def documents(self) -> list[EmfDocument]:
        """The current window as EMF documents: none when nothing happened, one up to 100
        metrics, one more for each further 100 (the built-in metrics in the first)."""
        w = self._window
        elapsed = self._clock() - w.started
        metrics: dict[str, float] = {}
        if w.steps:
            metrics[TrainingMetric.STEPS] = w.steps
            metrics[TrainingMetric.STEP_TIME] = w.step_time / w.steps
            metrics[TrainingMetric.DATA_WAIT] = w.data_wait / w.steps
            if w.step_time > 0:
                metrics[TrainingMetric.DATA_WAIT_SHARE] = 100 * w.data_wait / w.step_time
            if w.samples and elapsed > 0:
                metrics[TrainingMetric.SAMPLES_PER_SECOND] = w.samples / elapsed
        for checkpoint, longest in (
            (TrainingMetric.CHECKPOINT_SAVE, w.checkpoint_save),
            (TrainingMetric.CHECKPOINT_RESTORE, w.checkpoint_restore),
            (TrainingMetric.CHECKPOINT_SIZE, w.checkpoint_size),
        ):
            if longest is not None:
                metrics[checkpoint] = longest
        if w.step_number is not None:
            metrics[TrainingMetric.STEP_NUMBER] = w.step_number
        if w.resumed_from is not None:
            metrics[TrainingMetric.RESUMED_FROM_STEP] = w.resumed_from
        for spent in TIME_METRICS:
            seconds = w.times.get(spent, 0.0)
            if seconds > 0:
                metrics[spent] = seconds
        for name, mean in w.model.items():
            metrics[name] = mean.mean
        return self._emf(metrics, w.wall_started) + self._job_alarm_documents(elapsed)

    def state(self) -> JobState:
        if self._closed:
            return JobState.ENDED
        if self._pauses:
            return self._pauses[-1]
        return JobState.STEPPING if self._window.steps else JobState.STALLED

    def _job_alarm_metrics(self, elapsed: float) -> dict[str, float]:
        """What the job alarms compare, for the window (see the module's docstring)."""
        w, now, state = self._window, self._clock(), self.state()
        metrics: dict[str, float] = {TrainingMetric.LOSS_NOT_FINITE: float(w.loss_not_finite)}
        if self._last_step is not None:
            metrics[TrainingMetric.SECONDS_SINCE_STEP] = now - self._last_step
            overdue = 0.0
            if state in (JobState.STEPPING, JobState.STALLED):
                recent = self._recent_step_time
                due = STEP_DUE_MULTIPLE * statistics.median(recent) if recent else 0.0
                overdue = max(0.0, now - self._progress_at - due)
            metrics[TrainingMetric.STEP_OVERDUE] = overdue
        losses = w.model.get(self.loss_name)
        if losses:
            loss = losses.mean
            deviation = robust_deviation(loss, self._recent_loss)
            if deviation is not None:
                metrics[TrainingMetric.LOSS_DEVIATION] = deviation
        training_s = elapsed - w.paused
        if w.steps and w.samples and training_s > 0:
            rate = w.samples / training_s
            if len(self._recent_rate) >= MIN_RECENT_WINDOWS:
                usual = statistics.median(self._recent_rate)
                if usual > 0:
                    metrics[TrainingMetric.THROUGHPUT_RATIO] = rate / usual
        goodput = window_goodput(w.step_time, w.data_wait, w.paused_in_steps, elapsed)
        if self._last_step is not None and goodput is not None:
            metrics[TrainingMetric.GOODPUT] = goodput
        return metrics

    def _remember(self, elapsed: float) -> None:
        """The window joins the recent ones the medians are over (after it was compared)."""
        w = self._window
        if w.steps:
            self._recent_step_time.append(w.step_time / w.steps)
            training_s = elapsed - w.paused
            if w.samples and training_s > 0:
                self._recent_rate.append(w.samples / training_s)
        losses = w.model.get(self.loss_name)
        if losses:
            self._recent_loss.append(losses.mean)

    def _job_alarm_documents(self, elapsed: float) -> list[EmfDocument]:
        metrics = self._job_alarm_metrics(elapsed)
        properties = self._properties()
        properties[PROP_JOB_STATE] = str(self.state())
        if self.gpus:
            properties[PROP_GPUS] = self.gpus
        return [
            emf_document(
                namespace=NAMESPACE_TRAINING,
                timestamp_ms=int(self._window.wall_started * 1000),
                dimension_sets=[JOB_ALARM_DIMENSIONS],
                dimensions={
                    DIM_CLUSTER: self.cluster_name,
                    DIM_JOB: self.job_name,
                    DIM_SHARD: self.shard,
                },
                metrics={str(k): v for k, v in metrics.items()},
                units={str(k): _UNITS[str(k)] for k in metrics},
                properties=properties,
                log_group=training_log_group(self.cluster_name),
            )
        ]

    def _properties(self) -> dict[str, object]:
        properties: dict[str, object] = {PROP_RANK: self.rank, PROP_ATTEMPT: self.attempt}
        if self.node_name:
            properties[DIM_NODE] = self.node_name
        if self.pod_name:
            properties[PROP_POD_NAME] = self.pod_name
        return properties

    def _emf(self, metrics: dict[str, float], stamp: float) -> list[EmfDocument]:
        units = {name: _UNITS.get(name, "None") for name in metrics}
        properties = self._properties()
        return [
            emf_document(
                namespace=NAMESPACE_TRAINING,
                timestamp_ms=int(stamp * 1000),
                dimension_sets=[TRAINING_DIMENSIONS],
                dimensions={DIM_CLUSTER: self.cluster_name, DIM_JOB: self.job_name},
                metrics=chunk,
                units=units,
                properties=properties,
                log_group=training_log_group(self.cluster_name),
            )
            for chunk in metric_chunks({str(k): v for k, v in metrics.items()})
        ]

    def flush(self) -> None:
        """Hand the window to the sender thread and start a new one. Never blocks or raises:
        a document that cannot be built is dropped and counted."""
        with self._lock:
            self._charge(self._clock())
            try:
                documents = self.documents()
            except ValueError as err:  # an EMF limit the window broke; the loop goes on
                self._sender.dropped += 1
                log.warning("training metrics window dropped: %s", err)
                documents = []
            self._remember(self._clock() - self._window.started)
            self._window = _Window(started=self._clock(), wall_started=self._wall())
        self._sender.submit(documents)

    def drain(self, timeout_s: float = 5.0) -> bool:
        """Wait up to ``timeout_s`` for queued documents to be sent (or dropped); True when the
        queue is empty. For the end of a job, tests and notebooks, not the loop."""
        return self._sender.drain(timeout_s)

    def close(self, *, succeeded: bool) -> None:
        """Flush, record how the job ended (job_succeeded or job_failed, a count), and wait up
        to ``close_timeout_s`` for delivery; what is still queued then is dropped and counted,
        and the sender thread ends. Only rank 0 records the outcome, so a job counts
        once however many ranks it has."""
        if self._closed:
            return
        self._stop.set()
        with self._lock:
            self._closed = True  # the last heartbeat says ended: step_overdue_seconds 0
            self.flush()
            self._doing = None  # nothing more is charged
        if self.rank == 0:
            outcome = TrainingMetric.JOB_SUCCEEDED if succeeded else TrainingMetric.JOB_FAILED
            self._sender.submit(self._emf({outcome: 1.0}, self._wall()))
        self.drain(self.close_timeout_s)
        self._sender.close()

    def __enter__(self) -> "TrainingMetrics":
        return self

    def __exit__(self, kind: Optional[type[BaseException]], *_: Any) -> None:
        self.close(succeeded=kind is None)
