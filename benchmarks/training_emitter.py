"""What agent.training costs a training loop: the same loop with and without ``steps()``.

The loop body is a few microseconds of arithmetic, far lighter than any real training step,
so the overhead per step is measured against almost nothing; the share is then given for a
tight 10 ms step and a typical 100 ms step.
"""

import time
from typing import Any

from agent.training import TrainingMetrics

STEPS = 200_000


class Discard:
    def send(self, documents: Any) -> None:
        del documents


def _body(batch: list[int]) -> int:
    return sum(batch)


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
    per_step_us = (wrapped - bare) / STEPS * 1e6
    figures = {
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
    return figures


if __name__ == "__main__":
    main()
