"""The inference servers' series in `gpu-insights cost-estimate`: counted from the serving
table, billed by their OTLP bytes, off unless --serving-replicas says how many run."""

import json
import re
from pathlib import Path

import pytest
from opentelemetry.proto.metrics.v1 import metrics_pb2

from cli.cost.exporter import MINUTES_PER_MONTH, OTLP_BYTES_PER_DATAPOINT
from cli.cost.serving import (
    HISTOGRAM_BOUNDS,
    HISTOGRAM_EXTRA_BYTES,
    classic_metrics_per_model,
    series_per_model,
)
from cli.main import main
from gpu_insights_agent.contract.serving import MetricType, Server

OTEL = ["cost-estimate", "--nodes", "40", "--gpus-per-node", "8"]
LINE = "Inference servers' OTLP metrics ingestion (add-on)"
CLASSIC_LINE = "Inference servers' custom metrics (Classic scrape)"


def _items(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, dict[str, object]]:
    assert main([*OTEL, *extra, "--json"]) == 0
    return {i["name"]: i for i in json.loads(capsys.readouterr().out)["line_items"]}


def test_a_vllm_replica_s_series_are_the_tables() -> None:
    """vLLM: finished requests (its errors are some of them: one name), prompt and generated
    tokens, preemptions; running, waiting, KV cache; TTFT, inter-token and e2e histograms, and
    the per-request prompt and generation length histograms drift reads."""
    assert series_per_model() == {
        MetricType.COUNTER: 4,
        MetricType.GAUGE: 3,
        MetricType.HISTOGRAM: 5,
    }
    assert series_per_model(Server.TRITON) == {MetricType.COUNTER: 2, MetricType.GAUGE: 1,
                                               MetricType.HISTOGRAM: 1}  # fmt: skip


def test_a_histogram_s_extra_bytes_are_measured() -> None:
    """A 22-bound histogram datapoint serialized as OTLP protobuf, against a gauge's."""

    def size(histogram: bool) -> int:
        metric = metrics_pb2.Metric(name="vllm:time_to_first_token_seconds", unit="s")
        start = 1_767_225_600 * 10**9
        if histogram:
            point = metric.histogram.data_points.add(
                start_time_unix_nano=start, time_unix_nano=start + 30 * 10**9,
                count=12_345, sum=987.25,
            )  # fmt: skip
            point.explicit_bounds.extend(float(i + 1) for i in range(HISTOGRAM_BOUNDS))
            point.bucket_counts.extend(range(1000, 1001 + HISTOGRAM_BOUNDS))
            metric.histogram.aggregation_temporality = (
                metrics_pb2.AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
            )
        else:
            metric.gauge.data_points.add(
                start_time_unix_nano=start, time_unix_nano=start + 30 * 10**9, as_double=1.0
            )
        return int(metric.ByteSize())

    assert size(True) - size(False) == HISTOGRAM_EXTRA_BYTES


def test_serving_replicas_are_priced_by_their_bytes_only_when_given(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert LINE not in _items(capsys)  # today's figures: no replica priced by default
    items = _items(capsys, "--serving-replicas", "16", "--serving-models", "2")
    line = items[LINE]
    per_scrape = 12 * OTLP_BYTES_PER_DATAPOINT + 5 * HISTOGRAM_EXTRA_BYTES
    assert per_scrape == 7_355
    gb = 16 * 2 * per_scrape * MINUTES_PER_MONTH * 2 / 1e9  # a scrape every 30 s
    assert line["quantity"] == pytest.approx(gb)
    assert line["usd"] == pytest.approx(round(gb * 0.08, 2))
    assert "4 counters, 3 gauges and 5 histograms" in str(line["basis"])
    # Classic mode collects no serving series through the add-on's OTLP path.
    assert LINE not in _items(capsys, "--serving-replicas", "16", "-c",
                              "container_insights_mode=classic")  # fmt: skip


def test_the_serving_alarms_scan_the_replicas_given_not_a_replica_a_gpu(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With the EMF sink the serving alarms are OTel mode's only PromQL alarms: 64 samples a
    series an evaluation (test_estimate.py), over 16 replicas x 2 models instead of 320 GPUs."""
    quiet = ("-c", "exporter_sink=emf", "-c", "control_plane_alarms=false")
    items = _items(capsys, *quiet, "--serving-replicas", "16", "--serving-models", "2")
    promql = items["PromQL alarms"]
    assert promql["quantity"] == pytest.approx(32 * 64 * MINUTES_PER_MONTH / 1e6)
    assert "the serving alarms over 16 replicas x 2 model(s)" in str(promql["basis"])


def test_the_control_plane_alarms_are_standard_alarms_on_free_metrics(
    capsys: pytest.CaptureFixture[str],
) -> None:
    on = _items(capsys)["Standard alarms"]
    off = _items(capsys, "-c", "control_plane_alarms=false")["Standard alarms"]
    assert "on the control plane's AWS/EKS metrics, which EKS vends free" in str(on["basis"])
    assert "AWS/EKS" not in str(off["basis"])
    assert float(on["usd"]) > float(off["usd"])  # type: ignore[arg-type]


def test_the_readmes_serving_figure_is_what_the_command_prints(
    capsys: pytest.CaptureFixture[str],
) -> None:
    readme = (Path(__file__).parents[4] / "README.md").read_text()
    (said,) = re.findall(r"about ([\d.]+) GB a replica-month", readme)
    one = _items(capsys, "--serving-replicas", "1")[LINE]
    assert f"{float(one['quantity']):.1f}" == said  # type: ignore[arg-type]


def test_classic_prices_each_replicas_counters_and_gauges_as_custom_metrics(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Classic's scrape: a vLLM replica's 6 kept names (tokens in and out, preemptions,
    running, waiting, KV cache) and its finished requests once per finish reason (5): 11
    custom metrics; 20 replicas of 1 model, 220 at $0.30 on a 40-node fleet."""
    assert classic_metrics_per_model() == 11
    classic = ("-c", "container_insights_mode=classic")
    assert CLASSIC_LINE not in _items(capsys, *classic)
    line = _items(capsys, *classic, "--serving-replicas", "20")[CLASSIC_LINE]
    assert line["quantity"] == 220
    assert line["usd"] == pytest.approx(66.0)
    # Custom metrics are tiered over the account's total: after a 500,000-GPU fleet's exporter
    # and emitter metrics (over a million), the replicas' and the notifier's take $0.02.
    big = ("--nodes", "62500", "--serving-replicas", "20")
    assert main([*OTEL, *classic, *big, "--json"]) == 0
    large = {i["name"]: i for i in json.loads(capsys.readouterr().out)["line_items"]}
    assert large[CLASSIC_LINE]["usd"] == pytest.approx(220 * 0.02)
    assert large["Notifier custom metric (refused documents)"]["usd"] == pytest.approx(0.02)
    off = _items(capsys, *classic, "--serving-replicas", "20", "-c", "serving_metrics=false")
    assert CLASSIC_LINE not in off
    # OTel mode prices the same replicas by their OTLP bytes instead.
    assert CLASSIC_LINE not in _items(capsys, "--serving-replicas", "20")
    root = Path(__file__).parents[4]
    readme = " ".join((root / "README.md").read_text().split())
    assert f"({classic_metrics_per_model()} a vLLM replica-month)" in readme
    cli_doc = " ".join((root / "docs" / "cli.md").read_text().split())
    assert f"({classic_metrics_per_model()} a replica and model," in cli_doc
    metrics_doc = " ".join((root / "docs" / "metrics.md").read_text().split())
    assert f"a vLLM replica sends {classic_metrics_per_model()} (" in metrics_doc
