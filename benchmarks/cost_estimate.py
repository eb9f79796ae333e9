"""``gpu-insights cost-estimate`` at the largest fleet it takes: 62,500 nodes x 8 GPUs (the
500,000 GPUs of ``fleet_gpus``' limit, a job a node), in each Container Insights mode, each in
a fresh process as a user runs it. Prints the wall seconds of each and the CPU seconds (the
wall time of an idle machine); the goal is under 10 s.
The PromQL line's requests come from cli/cost/promql_reads.py's model of the readers, in time
linear in the jobs and nodes (the readers run against a recording client took over 20 minutes
at this size)."""

import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[1]
NODES: Final = 62_500
GPUS_PER_NODE: Final = 8
MODES: Final = ("otel", "classic")
GOAL_S: Final = 10.0


@dataclass(frozen=True)
class Run:
    mode: str
    nodes: int
    seconds: float
    #: CPU seconds of the process (user and system): what the wall time is on an idle machine.
    cpu_seconds: float
    #: The command's first line: the Region and mode it priced.
    first_line: str


def run(mode: str, nodes: int = NODES, gpus_per_node: int = GPUS_PER_NODE) -> Run:
    """One ``cost-estimate`` in a fresh process, in us-east-1 (where both modes are offered)."""
    argv = [
        sys.executable, "-m", "cli.main", "cost-estimate",
        "--nodes", str(nodes), "--gpus-per-node", str(gpus_per_node),
        "-c", f"container_insights_mode={mode}", "-c", "region=us-east-1",
    ]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=True, timeout=600)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return Run(mode, nodes, seconds, cpu, done.stdout.splitlines()[0])


def line(result: Run) -> str:
    return (
        f"cost-estimate --nodes {result.nodes:,} --gpus-per-node {GPUS_PER_NODE} "
        f"({result.mode}): {result.seconds:.1f} s, {result.cpu_seconds:.1f} s of CPU (goal under "
        f"{GOAL_S:g} s)"
    )


def main() -> list[Run]:
    runs = [run(mode) for mode in MODES]
    for result in runs:
        print(line(result))
    return runs


if __name__ == "__main__":
    main()
