"""The failure classifier on the real-line corpus: accuracy per cause, and lines classified
per CPU second on long logs made of the corpus's lines, half of them as Container Insights JSON
records: one of failure lines only (the worst case, every line names a cause) and one of the
lines that name none with one failure at its end (a job's log as it usually is)."""

import json
import time
from collections import Counter
from dataclasses import dataclass
from typing import Final

from lambdas.training_analyzer.failure_causes import classify_lines, classify_text, read_lines
from tests.unit.reference_data import failure_log_corpus

#: Lines in the throughput log: a day of a chatty job's stderr.
THROUGHPUT_LINES: Final = 200_000


def accuracy() -> dict[str, tuple[int, int]]:
    """cause -> (samples classified as their source says, samples)."""
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for sample in failure_log_corpus():
        total[sample.cause] += 1
        right[sample.cause] += classify_text(sample.text).cause.value == sample.cause
    return {cause: (right[cause], total[cause]) for cause in sorted(total)}


def _long_log(*, quiet: bool = False) -> str:
    corpus = failure_log_corpus()
    pool = [line for s in corpus if (s.cause == "unknown") == quiet for line in s.lines if line]
    lines = []
    for i in range(THROUGHPUT_LINES):
        line = pool[i % len(pool)]
        if i % 2:
            line = json.dumps({"log": line + "\n", "stream": "stderr", "kubernetes": {"host": "n"}})
        lines.append(line)
    if quiet:
        lines += next(s for s in corpus if s.id == "xid-79-then-nccl-timeout").lines
    return "\n".join(lines)


def throughput(*, quiet: bool) -> float:
    """Lines read and classified per CPU second."""
    text = _long_log(quiet=quiet)
    started = time.process_time()
    lines = read_lines(text)
    diagnosis = classify_lines(lines)
    elapsed = time.process_time() - started
    assert diagnosis.cause.value != "unknown"
    return len(lines) / elapsed


@dataclass(frozen=True)
class Result:
    accuracy: dict[str, tuple[int, int]]
    lines_per_s_failures: float
    lines_per_s_quiet: float


def main() -> Result:
    return Result(accuracy(), throughput(quiet=False), throughput(quiet=True))


if __name__ == "__main__":
    result = main()
    for cause, (right, total) in result.accuracy.items():
        print(f"{cause:<24} {right}/{total}")
    print(f"{result.lines_per_s_failures:,.0f} lines/s (failure lines only)")
    print(f"{result.lines_per_s_quiet:,.0f} lines/s (lines naming no cause)")
