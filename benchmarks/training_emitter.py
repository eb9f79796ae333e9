"""What emitter.training costs a training loop: the same loop with and without ``steps()``.

The loop body is a few microseconds of arithmetic, far lighter than any real training step,
so the overhead per step is measured against almost nothing; the share is then given for a
tight 10 ms step and a typical 100 ms step.
"""

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks.exporter import EncodingSink
from benchmarks.otlp_bytes import rank_window
from gpu_insights_agent.emf.sinks import TcpEmfSink
from gpu_insights_agent.emitter.training import TrainingMetrics

STEPS = 200_000


class Discard:
    def send(self, documents: Any) -> None:
        del documents


def _body(batch: list[int]) -> int:
    return sum(batch)


def emf_window() -> dict[str, float]:
    """What one rank's window costs over EMF (exporter_sink=emf, as in Classic mode): its lines'
    bytes (CloudWatch Logs ingestion) and the custom metrics it publishes for its job (every
    rank of a job publishes the same series: the job's dimensions, not the rank's)."""
    sink = EncodingSink()
    metrics = rank_window(sink=sink)
    series = {(name, dimensions) for name, dimensions, _ in sink.series_hours}
    metrics.close(succeeded=True)
    return {"emf_bytes_per_flush": float(sink.bytes), "emf_series_per_job": float(len(series))}


def main() -> dict[str, float]:
    batches = [[1, 2, 3, 4]] * STEPS
    started = time.perf_counter()
    for batch in batches:
        _body(batch)
    bare = time.perf_counter() - started
    metrics = TrainingMetrics(job_name="bench", cluster_name="bench", sink=Discard(), flush_s=0.05)
    started = time.perf_counter()
    for batch in metrics.steps(batches):
        _body(batch)
    wrapped = time.perf_counter() - started
    metrics.close(succeeded=True)
    per_step_us = (wrapped - bare) / STEPS * 1e6
    figures = {
        **emf_window(),
        "per_step_overhead_us": per_step_us,
        "share_of_10ms_step": per_step_us / 10_000,
        "share_of_100ms_step": per_step_us / 100_000,
        "documents": float(metrics.emitted),
    }
    print(
        f"training emitter: {STEPS:,} steps, {metrics.emitted} EMF documents "
        "(one every 50 ms, far more often than the default minute)"
    )
    print(f"  overhead per step         {per_step_us:8.2f} us")
    print(f"  share of a 10 ms step     {per_step_us / 10_000:8.3%}   (goal well under 1%)")
    print(f"  share of a 100 ms step    {per_step_us / 100_000:8.4%}")
    print(
        f"  over EMF, a rank's window {figures['emf_bytes_per_flush']:8,.0f} bytes, "
        f"{figures['emf_series_per_job']:.0f} custom metrics a job"
    )
    return figures


FAULT_STEPS = 20_000


def _gaps_s(metrics: TrainingMetrics | None) -> list[float]:
    """For each step of a loop with a 20 us body, the time from the end of its body to the start
    of the next: what the emitter adds (bare loop: the iterator alone). Windows are due every
    millisecond, so the loop hands off about a thousand under each fault."""
    gaps: list[float] = []
    batches: Iterator[int] = iter(range(FAULT_STEPS))
    if metrics is not None:
        batches = metrics.steps(batches)
    ended = time.perf_counter()
    for _ in batches:
        now = time.perf_counter()
        gaps.append(now - ended)
        spin_until = now + 20e-6
        while time.perf_counter() < spin_until:
            pass
        ended = time.perf_counter()
    return gaps[1:]


@contextlib.contextmanager
def _hanging_resolver() -> Iterator[None]:
    """``getaddrinfo`` that blocks (a DNS server that does not answer) until the run ends."""
    released = threading.Event()
    real = socket.getaddrinfo

    def hang(*_: Any, **__: Any) -> Any:
        released.wait(30)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    socket.getaddrinfo = hang
    try:
        yield
    finally:
        released.set()
        socket.getaddrinfo = real


def _refusing_port() -> int:
    """A local port nothing listens on: connects are refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@contextlib.contextmanager
def _silent_listener() -> Iterator[int]:
    """An agent that accepts and never reads, with small buffers so writes block soon."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


def _small_buffer_connect(address: tuple[str, int], timeout: float) -> socket.socket:
    sock = socket.create_connection(address, timeout)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    return sock


def _faulted(make: Callable[[], TrainingMetrics]) -> list[float]:
    metrics = make()
    gaps = _gaps_s(metrics)
    metrics.close(succeeded=True)
    return gaps


def faults() -> dict[str, float]:
    """Worst and 99.9th-percentile delay (ms) the emitter adds to a step, bare and under each
    fault of the agent. The worst includes the host's scheduling noise, which the bare loop
    shows on its own."""

    def emitter(**kwargs: Any) -> Callable[[], TrainingMetrics]:
        return lambda: TrainingMetrics(
            job_name="bench", cluster_name="bench", flush_s=0.001, close_timeout_s=0, **kwargs
        )

    runs = {"bare": _gaps_s(None)}
    with _hanging_resolver():
        runs["dns_hangs"] = _faulted(emitter(endpoint=("gpu-insights.invalid", 25888)))
    runs["agent_refuses"] = _faulted(emitter(endpoint=("127.0.0.1", _refusing_port())))
    with _silent_listener() as port:
        sink = TcpEmfSink("127.0.0.1", port, timeout_s=0.5, connect=_small_buffer_connect)
        runs["agent_never_reads"] = _faulted(emitter(sink=sink))
    figures: dict[str, float] = {}
    print(f"training emitter under faults: {FAULT_STEPS:,} steps each, a window every 1 ms")
    print(f"  {'':<20} {'worst':>9} {'p99.9':>9} {'mean':>9}   (ms added to a step)")
    for name, gaps in runs.items():
        ordered = sorted(gaps)
        figures[f"{name}_worst_ms"] = ordered[-1] * 1e3
        figures[f"{name}_p999_ms"] = ordered[int(len(ordered) * 0.999)] * 1e3
        figures[f"{name}_mean_ms"] = sum(gaps) / len(gaps) * 1e3
        print(
            f"  {name.replace('_', ' '):<20} {figures[f'{name}_worst_ms']:9.3f}"
            f" {figures[f'{name}_p999_ms']:9.3f} {figures[f'{name}_mean_ms']:9.4f}"
        )
    return figures


if __name__ == "__main__":
    main()
    faults()
