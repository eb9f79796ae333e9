"""``make bench`` itself (``benchmarks/run_all.py``) at the smoke sizes of the benchmarks it
runs (each module's own smoke test here), its synth timed as zero: every section runs and its
figures reach the table."""

import functools

import pytest

from benchmarks import attribution, otlp_bytes, run_all

#: benchmarks.<module>.<constant> -> its smoke size.
SMALL = {
    "storage_analyzer.VOLUMES": 40, "storage_analyzer.BASELINE_VOLUMES": 20,
    "analyze_cli.VOLUMES": 20, "training_analyzer.JOBS": 8,
    "training_analyzer.TRAINING_SHARD_JOBS": 8, "fan_out.SAME_FLEET": 250,
    "fan_out.SAME_SHARD": 100, "fan_out.BIG_FLEET": 300, "fan_out.BIG_SHARD": 100,
    "fan_out.JOBS": 100, "fan_out.SAME_JOBS": 12, "fan_out.SAME_JOB_SHARD": 5,
    "exporter.DAY_S": 7200.0, "otlp_bytes.CYCLES": 5, "training_emitter.STEPS": 2_000,
    "training_emitter.FAULT_STEPS": 500, "alarms.NODES": 20,
    "alarms.FAULTS": {(17, 3): "low"}, "failure_causes.THROUGHPUT_LINES": 2_000,
    "failure_logs.JOBS": 200, "page_faults.NODES": 10, "serving_drift.MODEL_DAYS": 10,
    "serving_drift.SHIFTS": 2,
    # The webhook's slow drip waits out two 5-second deadlines; its own test runs the others.
    "webhook_faults.FAULTS": ("garbage",),
}  # fmt: skip


def test_every_section_runs_and_prints_its_rows(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for target, value in SMALL.items():
        monkeypatch.setattr(f"benchmarks.{target}", value)
    monkeypatch.setattr(otlp_bytes.exporter_node, "__defaults__", (5,))
    monkeypatch.setattr(attribution, "main", functools.partial(attribution.main, nodes=2))
    monkeypatch.setattr(run_all, "synth_seconds", lambda: 0.0)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_EC2_METADATA_DISABLED"):
        monkeypatch.setenv(name, "bench")
    run_all.main()
    table = capsys.readouterr().out
    for figure in (
        "storage (floor, real client): calls vs the floor",
        "analyze storage (command line, handlers' session)",
        "pager: pages of one XID across a window boundary",
        "failure causes: corpus samples classified as sourced",
        "serving drift: false alarms, 1,000 requests an hour",
        "cdk synth of the whole app",
    ):
        assert figure in table
