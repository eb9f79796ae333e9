"""The demo's Monday: the weekly report Lambda over everything the demo produced, and the
dashboard bodies the app deploys."""

import html
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cdk.alarms.model import AlarmSpec
from cdk.function_configs import report_config
from cdk.settings import Settings
from cli.backtest.engine import BacktestResult
from cli.backtest.evaluator import AlarmState
from cli.demo.exporter import INTERVAL_S
from cli.demo.storage import END, REPORT_BUCKET, environment
from cli.service_answers import Params, answer
from dashboards.bodies import all_dashboards, encode
from dashboards.widgets import AlarmLine
from gpu_insights_agent.contract.metrics import ExporterSink
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.weekly_report import handler as report_handler
from lambdas.weekly_report.config import ReportConfig
from lambdas.weekly_report.failures_section import FAILURES_CSV
from lambdas.weekly_report.funnel_section import FUNNEL_CSV
from lambdas.weekly_report.goodput_section import GOODPUT_CSV
from lambdas.weekly_report.handler import report_prefix
from lambdas.weekly_report.memory_section import MEMORY_CSV
from lambdas.weekly_report.serving_section import SERVING_CSV


def raised_items(cluster: str, backtest: list[BacktestResult]) -> list[Params]:
    """The state changes into ALARM that the backtest computed for the app's alarms."""
    return [
        {
            "AlarmName": r.spec.alarm_name(cluster),
            "AlarmType": "MetricAlarm",
            "Timestamp": datetime.fromtimestamp(t.time, UTC),
            "HistoryItemType": "StateUpdate",
            "HistorySummary": f"Alarm updated from {t.old} to {t.new}",
            "HistoryData": json.dumps({"newState": {"stateValue": str(t.new)}}),
        }
        for r in backtest
        for t in r.transitions
        if t.new is AlarmState.ALARM
    ]


def promql_raised_items(cluster: str, raised: Sequence[tuple[AlarmSpec, float]]) -> list[Params]:
    """The PromQL alarms' state changes into ALARM (the alarm, when its first contributor
    went into ALARM), as DescribeAlarmHistory's items (``raised_items``' shape)."""
    return [
        {
            "AlarmName": spec.alarm_name(cluster),
            "AlarmType": "MetricAlarm",
            "Timestamp": datetime.fromtimestamp(at, UTC),
            "HistoryItemType": "StateUpdate",
            "HistorySummary": "Alarm updated from OK to ALARM",
            "HistoryData": json.dumps({"newState": {"stateValue": "ALARM"}}),
        }
        for spec, at in raised
    ]


def alarm_history(items: list[Params]) -> Callable[[Params], Params]:
    """DescribeAlarmHistory as CloudWatch answers it, over these history items, filtered as
    the request asks: moto evaluates no alarm and does not implement the operation."""

    def respond(params: Params) -> Params:
        start, end = params.get("StartDate"), params.get("EndDate")
        return {
            "AlarmHistoryItems": [
                i
                for i in items
                if params.get("AlarmName", i["AlarmName"]) == i["AlarmName"]
                and params.get("HistoryItemType", i["HistoryItemType"]) == i["HistoryItemType"]
                and (start is None or start <= i["Timestamp"])
                and (end is None or i["Timestamp"] < end)
            ]
        }

    return respond


def report_function_config(settings: Settings, topic_arn: str) -> ReportConfig:
    """The function's configuration as the stack builds it, for the deployment whose exporter
    cycles as the demo's does (cli/demo/exporter.py: once a minute)."""
    demo = replace(settings, exporter_interval_seconds=int(INTERVAL_S))
    return report_config(demo, report_bucket=REPORT_BUCKET, topic_arn=topic_arn)


def report_handler_run(
    clients: dict[str, Any],
    settings: Settings,
    backtest: list[BacktestResult],
    *,
    now: float = END,
    promql_raised: Sequence[tuple[AlarmSpec, float]] = (),
) -> dict[str, Any]:
    """The report Lambda's run on the Monday after ``now`` (the demo's "now"): its report
    covers the week that holds ``now``. ``promql_raised``: the PromQL alarms' raises, replayed
    on the local Prometheus (OTel mode)."""
    cluster = settings.cluster_name
    topic = clients["sns"].create_topic(Name=f"gpu-insights-{cluster}-reports")["TopicArn"]
    report_handler._clients.update(
        s3=clients["s3"],
        sns=clients["sns"],
        cloudwatch=clients["cloudwatch"],
    )
    answer(
        clients["cloudwatch"],
        "DescribeAlarmHistory",
        alarm_history(
            raised_items(cluster, backtest) + promql_raised_items(cluster, promql_raised)
        ),
    )
    monday = datetime.fromtimestamp(now, UTC).date()
    monday += timedelta(days=7 - monday.weekday())
    with environment(report_function_config(settings, topic).environment()):
        summary: dict[str, Any] = report_handler.handler(
            {"time": f"{monday.isoformat()}T08:00:00Z"}, None
        )
    return summary


def run_weekly_report(
    clients: dict[str, Any],
    settings: Settings,
    backtest: list[BacktestResult],
    out_dir: Path,
    promql_raised: Sequence[tuple[AlarmSpec, float]] = (),
) -> tuple[dict[str, Any], Path]:
    """The report of the demo's week, and its files in ``out_dir``."""
    summary = report_handler_run(clients, settings, backtest, promql_raised=promql_raised)
    html = clients["s3"].get_object(Bucket=REPORT_BUCKET, Key=summary["key"])["Body"].read()
    path = out_dir / "report.html"
    path.write_bytes(html)
    # The report's JSON and its per-namespace CSV (for a spreadsheet), as the Lambda wrote them.
    prefix = report_prefix(settings.cluster_name, summary["week"])
    for name in ("report.json", "report.csv", MEMORY_CSV, FAILURES_CSV, FUNNEL_CSV, GOODPUT_CSV):
        data = clients["s3"].get_object(Bucket=REPORT_BUCKET, Key=prefix + name)["Body"].read()
        (out_dir / name).write_bytes(data)
    # The serving CSV, written only for a week that served (the OTel run's serving week).
    listed = clients["s3"].list_objects_v2(Bucket=REPORT_BUCKET, Prefix=prefix + SERVING_CSV)
    if listed.get("KeyCount"):
        data = clients["s3"].get_object(Bucket=REPORT_BUCKET, Key=prefix + SERVING_CSV)
        (out_dir / SERVING_CSV).write_bytes(data["Body"].read())
    return summary, path


def chromium() -> str | None:
    return (
        shutil.which("chromium")
        or shutil.which("chromium-browser")
        or shutil.which("google-chrome")
    )


_BROWSER_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--hide-scrollbars",
)


def laid_out(browser: str, page: Path, width: int, script: str) -> str:
    """What ``script`` (a JavaScript expression, given the page as headless Chromium lays it
    out ``width`` CSS pixels wide) says of it, as a string: the browser's layout, not a guess.
    The expression is run in a copy of the page, after its body."""
    with tempfile.TemporaryDirectory() as folder:
        measured = Path(folder) / page.name
        run = f"<script>document.body.dataset.laidOut=String({script})</script>"
        measured.write_text(page.read_text(encoding="utf-8").replace("</body>", run + "</body>"))
        dom = subprocess.run(
            [browser, *_BROWSER_FLAGS, f"--window-size={width},800", "--dump-dom",
             measured.resolve().as_uri()],
            check=True, capture_output=True, text=True, timeout=120,
        ).stdout  # fmt: skip
    found = re.search(r'data-laid-out="([^"]*)"', dom)
    if found is None:
        raise RuntimeError(f"headless Chromium did not lay out {page} (its script said nothing)")
    return html.unescape(found.group(1))


def page_height(browser: str, page: Path, width: int) -> int:
    """The page's full height in CSS pixels at ``width``, as headless Chromium lays it out (a
    screenshot captures the window only, so the window must be that tall)."""
    return int(laid_out(browser, page, width, "Math.ceil(document.documentElement.scrollHeight)"))


def png_size(png: Path) -> tuple[int, int]:
    """A PNG's (width, height) in pixels, from its IHDR chunk (the first, at byte 16)."""
    header = png.read_bytes()[:24]
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")


def render_png(page: Path, png: Path, *, width: int = 900, height: int | None = None) -> bool:
    """A screenshot of the whole report as a browser shows it (``height``: a window of that
    height instead, cut there); False where no Chromium is installed."""
    browser = chromium()
    if browser is None:
        return False
    height = height or page_height(browser, page, width)
    subprocess.run(
        [
            browser,
            *_BROWSER_FLAGS,
            f"--screenshot={png}",
            f"--window-size={width},{height}",
            page.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return png.exists()


def write_dashboards(
    cluster: str,
    buckets: list[str],
    alarm_names: list[str],
    out_dir: Path,
    lines: Sequence[AlarmLine] = (),
    mode: ContainerInsightsMode = ContainerInsightsMode.CLASSIC,
    deployed: Mapping[str, dict[str, Any]] | None = None,
    exporter_sink: ExporterSink = ExporterSink.EMF,
) -> list[Path]:
    """The dashboard bodies as the app deploys them in ``mode`` with the exporter's
    ``exporter_sink``, with the alarms' ``lines`` drawn; ``deployed``: bodies as CloudWatch
    holds them after a run wrote to them, by name."""
    folder = out_dir / "dashboards"
    folder.mkdir(parents=True, exist_ok=True)
    arns = [f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{name}" for name in alarm_names]
    paths = []
    bodies = all_dashboards(
        cluster, buckets, arns, "us-east-1", alarm_lines=lines, mode=mode,
        exporter_sink=exporter_sink,
    )  # fmt: skip
    for name, body in {**bodies, **(deployed or {})}.items():
        path = folder / f"{name}.json"
        path.write_text(json.dumps(json.loads(encode(body)), indent=2) + "\n")
        paths.append(path)
    return paths
