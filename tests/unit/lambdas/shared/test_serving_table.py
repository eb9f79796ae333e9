import json
from datetime import date

import pytest

from lambdas.shared.serving_table import (
    ServingRow,
    ServingTableError,
    decode,
    encode,
    serving_key,
)

ROW = ServingRow(
    namespace="inference",
    workload="llama-70b",
    kind="Deployment",
    model="meta-llama/Llama-3.1-70B-Instruct",
    replicas=4,
    gpu_hours=96.0,
    cost_usd=660.48,
    requests=120_000.0,
    prompt_tokens=60_000_000.0,
    generation_tokens=24_000_000.0,
    mean_power_percent=61.5,
    mean_kv_cache_percent=42.0,
    max_waiting=3.0,
    preemptions=0.0,
    ttft_p99_s=0.84,
)


def test_cost_per_million_output_tokens() -> None:
    # 660.48 USD over 24 M tokens: 27.52 USD a million.
    assert ROW.usd_per_million_output_tokens == pytest.approx(27.52)


def test_no_tokens_no_price() -> None:
    idle = ServingRow(**{**ROW.__dict__, "generation_tokens": 0.0})
    assert idle.usd_per_million_output_tokens is None


def test_round_trip() -> None:
    table = decode(encode(date(2026, 11, 30), [ROW]))
    day, rows = table.day, table.rows
    assert table.skipped == []
    assert day == date(2026, 11, 30)
    assert rows == [ROW]


def test_key() -> None:
    assert serving_key("train", date(2026, 11, 30)) == (
        "reports/cluster=train/date=2026-11-30/serving.json"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"gpu_hours": "96"}, "row 0: gpu_hours is not a number: '96'"),
        ({"cost_usd": float("nan")}, "row 0: cost_usd is not a number: nan"),
        ({"preemptions": -1}, "row 0: preemptions is negative: -1"),
        ({"model": ""}, "row 0: model is not a name: ''"),
        ({"replicas": True}, "row 0: replicas is not a number: True"),
    ],
)
def test_bad_row_named(change: dict[str, object], message: str) -> None:
    """A bad row is skipped and named; the day's other rows are kept."""
    document = json.loads(encode(date(2026, 11, 30), [ROW, ROW]))
    document["rows"][0].update(change)
    table = decode(json.dumps(document))
    assert table.skipped == [message]
    assert table.rows == [ROW]


def test_optional_figures_may_be_missing() -> None:
    document = json.loads(encode(date(2026, 11, 30), [ROW]))
    document["rows"][0]["ttft_p99_s"] = None
    assert decode(json.dumps(document)).rows[0].ttft_p99_s is None


def test_not_a_table() -> None:
    with pytest.raises(ServingTableError, match="not a serving table"):
        decode("[]")


def test_a_bad_rows_value_is_shown_cut() -> None:
    """The reason a row was skipped goes into the report's HTML and JSON: a 10 KB value is shown
    by its first characters, not whole."""
    document = json.loads(encode(date(2026, 11, 30), [ROW, ROW]))
    document["rows"][0]["replicas"] = "y" * 10_000
    table = decode(json.dumps(document))
    (why,) = table.skipped
    assert why == "row 0: replicas is not a number: '" + "y" * 59 + "…"
    assert table.rows == [ROW]
