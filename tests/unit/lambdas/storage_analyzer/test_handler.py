"""The storage handler's settings it reads from its environment at each invocation."""

from typing import Any

import pytest

from cdk.settings import Settings
from lambdas.storage_analyzer import fleet as storage_fleet
from lambdas.storage_analyzer import handler as storage_handler


def test_without_its_settings_in_the_environment_the_plan_uses_the_settings_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SHARD_VOLUMES and LOOKBACK_DAYS fall back to cdk/settings.py's defaults (one module,
    lambdas/shared/shards.py), not to numbers of their own."""
    for name, value in {"CLUSTER_NAME": "train", "REPORT_BUCKET": "report"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.delenv("SHARD_VOLUMES", raising=False)
    monkeypatch.delenv("LOOKBACK_DAYS", raising=False)
    seen: dict[str, Any] = {}
    monkeypatch.setattr(storage_fleet, "plan", lambda **kw: seen.update(kw) or {})
    storage_handler.handler({"mode": "plan", "time": "2026-11-30T06:00:00Z"}, None)
    assert seen["per_shard"] == Settings().storage_shard_volumes == 20_000
