"""The exporter as a process: ``python -m gpu_insights_agent.exporter`` on a trace,
stopped with SIGTERM."""

import signal
import subprocess
import sys
import time
from pathlib import Path

from gpu_insights_agent.emf.document import parse_emf_line
from tests.unit.agent.exporter.nvml_trace import trace_lines


def test_sigterm_flushes_and_exits_cleanly(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text("\n".join(trace_lines()) + "\n")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gpu_insights_agent.exporter",
            "--cluster-name",
            "train",
            "--node-name",
            "node-a",
            "--trace",
            str(trace),
            "--sink",
            "stdout",
            "--interval",
            "0.2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    assert parse_emf_line(first)["ClusterName"] == "train"
    time.sleep(0.3)
    process.send_signal(signal.SIGTERM)
    # Read on through the same buffered reader: communicate() reads the raw pipe, and would
    # miss what readline() already buffered (the rest of the first cycle, when the signal
    # comes before a second one).
    out = process.stdout.read()
    assert process.stderr is not None
    err = process.stderr.read()
    process.wait(timeout=10)
    assert process.returncode == 0, err
    documents = [parse_emf_line(line) for line in [first, *out.splitlines()]]
    assert {d["GpuIndex"] for d in documents} == {"0", "1", "2"}
    assert "exporting 3 GPU(s) on node-a" in err


def test_no_nvml_exits_non_zero_with_one_sentence() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpu_insights_agent.exporter",
            "--cluster-name",
            "c",
            "--node-name",
            "n",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if result.returncode == 0:  # pragma: no cover - a machine with a GPU would start exporting
        return
    assert result.returncode == 1
    assert result.stderr.startswith("gpu exporter: NVML is not available on this node")
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
