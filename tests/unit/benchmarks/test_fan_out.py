"""``benchmarks/fan_out.py`` at small sizes: the handler's modes on a few hundred volumes and
jobs merge to what one run finds."""

import pytest

from benchmarks import fan_out


def test_the_sharded_paths_merge_to_the_single_run(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (
        ("SAME_FLEET", 250), ("SAME_SHARD", 100), ("BIG_FLEET", 300), ("BIG_SHARD", 100),
        ("JOBS", 100), ("SAME_JOBS", 12), ("SAME_JOB_SHARD", 5),
    ):  # fmt: skip
        monkeypatch.setattr(fan_out, name, value)
    measured = {"cpu_s": 1.0, "datapoints": 1_000.0}
    figures = fan_out.main(measured, measured)
    assert figures["same"] is True
    assert figures["training"]["same"] == 1.0
    assert figures["big"]["shards"] >= 2
