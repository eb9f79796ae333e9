"""`gpu-insights demo --mode otel`'s serving run (``run_demo(..., serving=True)``): the week with
the inference replicas (cli/demo/serving.py: a 3-replica vLLM Deployment, one replica idle all
week, saturated in the working hours of ``SATURATED_DAY``; a 1-replica KServe
InferenceService) read through the real analyzer and report, priced at the demo's $6.88 a
GPU-hour (H100's, lambdas/training_analyzer/gpu_prices.py; a month is 30.4167 days).

Hand figures: each replica holds its A10G all week, 168 GPU-hours: the Deployment 504
($3,467.52), the InferenceService 168 ($1,155.84). The saturated day's 15 night hours held 2
replicas more than they needed, 30 GPU-hours: 30 x 6.88 x 30.4167 = $6,278.00 a month; the idle
replica's 24 idle GPU-hours a day $5,022.40 a month."""

import csv
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cli.demo.command import DemoResult, run_demo
from cli.demo.realistic.serving import KSERVE, NAMESPACE, VLLM
from cli.demo.realistic.serving import NODE as SERVING_NODE
from cli.demo.serving import DRIFT_HOUR, SATURATED_DAY
from cli.demo.week import THIS_WEEK
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.weekly_report.serving_section import SERVING_CSV
from tests.functional.cli.one_figure import check_one_figure_per_fact
from tests.prometheus import binaries

pytestmark = pytest.mark.promql_engine

PRICE = 6.88


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[DemoResult, dict[str, Any]]:
    binaries()  # skipped, saying how to get it, without Prometheus
    folder = tmp_path_factory.mktemp("serving")
    result = run_demo(out_dir=folder / "out", cdk_out=folder / "cdk.out",
                      mode=ContainerInsightsMode.OTEL, serving=True)  # fmt: skip
    report = json.loads((result.out_dir / "report.json").read_text(encoding="utf-8"))
    return result, report


def test_each_model_is_priced_per_million_output_tokens_from_its_replicas_gpu_hours(
    served: tuple[DemoResult, dict[str, Any]],
) -> None:
    _, report = served
    serving = report["serving"]
    rows = {(w["workload"], w["kind"]): w for w in serving["workloads"]}
    assert set(rows) == {(VLLM.deployment, "Deployment"), ("mistral-7b", "InferenceService")}
    vllm, kserve = rows[(VLLM.deployment, "Deployment")], rows[("mistral-7b", "InferenceService")]
    assert (vllm["model"], vllm["replicas"], vllm["gpu_hours"], vllm["cost_usd"]) == (
        VLLM.model,
        3,
        504.0,
        3467.52,
    )
    assert (kserve["model"], kserve["replicas"], kserve["gpu_hours"], kserve["cost_usd"]) == (
        KSERVE.model,
        1,
        168.0,
        1155.84,
    )
    for row in (vllm, kserve):
        assert row["namespace"] == NAMESPACE
        # Its cost over the tokens it generated, per million: a few dollars on an A10G.
        price = round(row["cost_usd"] / row["generation_tokens"] * 1e6, 4)
        assert row["usd_per_million_output_tokens"] == price
        assert 1.0 < price < 10.0
    # The figures README.md and docs/demo.md quote.
    assert (vllm["usd_per_million_output_tokens"], kserve["usd_per_million_output_tokens"]) == (
        4.1672,
        3.0238,
    )
    assert serving["missing_days"] == []
    assert len(serving["days_read"]) == 7
    assert [m["model"] for m in serving["models"]] == [VLLM.model, KSERVE.model]


def test_the_saturated_day_and_the_idle_replica_are_found_with_their_dollars(
    served: tuple[DemoResult, dict[str, Any]],
) -> None:
    """The Deployment's findings agree: its saturated working hours and spare night are one
    autoscaling finding (no "add replicas" beside its idle replica), and the idle replica's
    held GPU is found on the Deployment, named as the serving findings name it."""
    result, report = served
    resource = f"namespace/{NAMESPACE}/Deployment/{VLLM.deployment}"
    (autoscaling,) = report["serving"]["findings"]
    day = datetime.fromtimestamp(THIS_WEEK.start + SATURATED_DAY * 86_400, UTC).date()
    assert autoscaling["kind"] == "serving_autoscaling"
    assert autoscaling["resource"] == resource
    assert (
        f"on {day} held up to 3 replicas while its hours needed 1 to 5: saturated in 9 hours "
        "(up to 30 requests waiting" in autoscaling["summary"]
    )
    advice = autoscaling["recommendation"]
    assert "frees 30 GPU-hours a day off-peak (about $6,278 a month)" in advice
    findings = [
        json.loads(line)
        for line in (result.out_dir / "training-findings.jsonl").read_text().splitlines()
    ]
    assert not [f for f in findings if f["kind"] == "serving_saturated"]
    # The idle replica: its Deployment's GPUs held and a third of them idle, each day.
    idle = [f for f in findings if f["kind"] == "gpu_held_not_working"
            and f["resource"] == resource]  # fmt: skip
    assert idle, "the idle replica's held GPU is not found"
    assert not [f for f in findings if f["resource"].endswith(f"/job/{VLLM.deployment}")]
    assert all(f["estimated_monthly_waste_usd"] == pytest.approx(5022.40) for f in idle)
    assert all("24.0 of them without work ($165.12)" in f["summary"] for f in idle)
    assert all("notebook" not in f["recommendation"] for f in idle)


def test_the_serving_section_and_csv_are_written(
    served: tuple[DemoResult, dict[str, Any]],
) -> None:
    result, report = served
    html = (result.out_dir / "report.html").read_text(encoding="utf-8")
    assert '<h2 id="serving">Inference serving</h2>' in html
    assert "672.0 GPU-hours held by inference servers this week" in html
    path: Path = result.out_dir / SERVING_CSV
    assert path in result.files
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["workload"], r["usd_per_million_output_tokens"]) for r in rows] == [
        (w["workload"], str(w["usd_per_million_output_tokens"]))
        for w in report["serving"]["workloads"]
    ]


def test_one_figure_per_fact_in_otel_mode_with_the_served_tokens_productive(
    served: tuple[DemoResult, dict[str, Any]],
) -> None:
    """The OTel run's outputs hold every job's GPU-hours and dollars equal in every table,
    finding, action and CSV; its paid stage (Kube State Metrics' capacity) is what EC2 bills
    for the world's GPU nodes within 1%, the serving node's included; the replicas' productive
    hours are those of the days they generated tokens."""
    result, _ = served
    report = check_one_figure_per_fact(result.out_dir, all_week=(SERVING_NODE,))
    rows = {w["workload"]: w for w in report["funnel"]["workloads"]}
    vllm = rows[VLLM.deployment]
    assert vllm["productive_source"] == "served tokens"
    assert vllm["productive"] == vllm["active"]
    assert vllm["allocated"]["gpu_hours"] == 504.0
    fleet = report["funnel"]["fleet"]
    # What EC2 bills: the week's three p5.48xlarge's eight GPUs all week, the replayed one's
    # eight for its two hours, the serving g5.12xlarge's four all week.
    assert fleet["paid"]["gpu_hours"] == 3 * 8 * 168 + 8 * 2 + 4 * 168


def test_the_planted_drift_is_a_finding_and_the_reports_drift_section(
    served: tuple[DemoResult, dict[str, Any]],
) -> None:
    """The KServe model's traffic drifts from ``DRIFT_HOUR`` (prompts 80% longer, a quarter of
    its outputs cut at max_tokens): a ``serving_drift`` finding on its days, none for the vLLM
    model, and the report's drift section, from the hour it began (the week's last two days are
    scraped every minute: ``SCRAPED_FROM_DAY``)."""
    result, report = served
    (drift,) = report["drift"]
    assert (drift["namespace"], drift["model"]) == (NAMESPACE, KSERVE.model)
    began = datetime.fromtimestamp(THIS_WEEK.start + DRIFT_HOUR * 3600, UTC)
    assert drift["since"] == began.strftime("%Y-%m-%d %H:00 UTC")
    assert any(m.startswith("prompts ") and "% longer" in m for m in drift["moved"])
    assert any(
        m.startswith("truncated outputs (finish reason length)") and m.endswith("-> 25.0%")
        for m in drift["moved"]
    )
    findings = [
        json.loads(line)
        for line in (result.out_dir / "training-findings.jsonl").read_text().splitlines()
        if line.strip()
    ]
    drifted = {f["resource"] for f in findings if f["kind"] == "serving_drift"}
    assert drifted == {f"namespace/{NAMESPACE}/model/{KSERVE.model}"}
    html = (result.out_dir / "report.html").read_text(encoding="utf-8")
    assert '<h2 id="drift">Traffic drift</h2>' in html
