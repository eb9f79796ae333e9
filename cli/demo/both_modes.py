"""``gpu-insights demo --mode otel``: the Classic run, then the OTel run on the same weeks, and
whether the two wrote the same findings and report (cli/demo/otel.py serves the OTel run); then
the alarm stage with the exporter's OTLP sink (cli/demo/otel_alarms.py): each planted fault paged
once by a PromQL alarm replayed on Prometheus."""

import filecmp
import json
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from moto import mock_aws

from cdk.settings import Settings
from cli.demo.command import DEMO_REGION, run_demo
from cli.demo.otel_alarms import otel_alarms_summary, run_otel_alarms
from cli.demo.storage import DEMO_CLUSTER
from lambdas.shared.aws_clients import new_session
from lambdas.shared.container_insights_mode import ContainerInsightsMode

#: What the two runs write that must be equal: the analyzers' findings, the weekly report
#: (its waste table and GPU-hour tables among them) in each of its forms.
COMPARED: Final = (
    "storage-findings.jsonl",
    "training-findings.jsonl",
    "report.json",
    "report.csv",
    "report.html",
    "failures.csv",
    "gpu-memory.csv",
    "funnel.csv",
    "goodput.csv",
)
#: The report's alarm history, the one part of it the modes' alarms make differ: OTel mode
#: deploys one PromQL alarm per kind where Classic shards the job alarms
#: (``...-job-hung-shard-00``), evaluated by PromQL's rules (pending and recovery periods over
#: one-minute samples, cli/backtest/promql_alarm.py) where Classic's are Metrics Insights
#: alarms, so a raise can come a minute apart; and OTel mode's gpu-lost reads every GPU at the
#: exporter's one-minute cycle, the week's lost GPU among them (Classic's backtest reads the
#: replayed node only: the week's other nodes are hourly statistic sets). What must be equal
#: there is which kinds of alarm went into ALARM (``alarm_kinds``).
ALARM_HISTORY: Final = {
    "report.json": lambda text: json.dumps({**json.loads(text), "alarms": None}),
    "report.html": lambda text: re.sub(r'<h2 id="alarms">.*?(?=<h2 )', "", text, flags=re.S),
}


def _same(classic: Path, otel_out: Path, name: str) -> bool:
    """Byte for byte; a report with its alarm history set aside (``ALARM_HISTORY``)."""
    aside = ALARM_HISTORY.get(name)
    if aside is None:
        return filecmp.cmp(classic / name, otel_out / name, shallow=False)
    read = (classic / name).read_text(encoding="utf-8"), (otel_out / name).read_text("utf-8")
    return bool(aside(read[0]) == aside(read[1]))


def alarm_kinds(out: Path) -> list[str]:
    """The kinds of alarm the report says went into ALARM (an alarm's name less its
    deployment's prefix and any shard)."""
    report: dict[str, Any] = json.loads((out / "report.json").read_text(encoding="utf-8"))
    cluster = report["cluster"]
    return sorted(
        {
            re.sub(r"-shard-\d+$", "", a["alarm"]).removeprefix(f"gpu-insights-{cluster}-")
            for a in report["alarms"]
        }
    )


def compare(classic: Path, otel_out: Path) -> list[tuple[str, bool]]:
    """Each compared file of the two runs, and whether they are equal: byte for byte, the
    reports but their alarm history, which must name the same kinds."""
    same_kinds = alarm_kinds(classic) == alarm_kinds(otel_out)
    return [
        (name, _same(classic, otel_out, name) and (name not in ALARM_HISTORY or same_kinds))
        for name in COMPARED
    ]


def run_both(*, out_dir: Path, cdk_out: Path) -> str:
    """The Classic run and the OTel run on the same week (each in a folder of its own) and
    whether each compared file is equal; then the OTel run with the inference replicas in its
    week (their series only OTel mode reads: ``run_demo``'s ``serving``) into ``out_dir``: its
    summary, the comparison's line and the alarm stage's."""
    otel = ContainerInsightsMode.OTEL
    with tempfile.TemporaryDirectory(prefix="classic-") as classic:
        base = Path(classic)
        run_demo(out_dir=base / "out", cdk_out=base / "cdk.out")
        run_demo(out_dir=base / "otel", cdk_out=base / "otel.cdk.out", mode=otel)
        compared = compare(base / "out", base / "otel")
        kinds = alarm_kinds(base / "otel")
    result = run_demo(out_dir=out_dir, cdk_out=cdk_out, mode=otel, serving=True)
    same = [name for name, equal in compared if equal]
    different = [name for name, equal in compared if not equal]
    line = (
        f"The OTel run (exporter_sink=otlp) equals the Classic run: {', '.join(same)} (the "
        f"reports but their alarm history, which names the same {len(kinds)} kinds raised, "
        "one PromQL alarm per kind)"
        if not different
        else f"The OTel run DIFFERS from the Classic run in: {', '.join(different)}"
    )
    with mock_aws():  # the alarm stage's notifier, topics and ledger: a moto of its own
        session = new_session(
            aws_access_key_id="demo", aws_secret_access_key="demo", region_name=DEMO_REGION
        )
        alarms = run_otel_alarms(session, Settings(cluster_name=DEMO_CLUSTER), DEMO_REGION, out_dir)
    result.files = output_files(result.files, alarms.files)
    serving = serving_summary(out_dir)
    return "\n".join([result.summary(), "", line, "", *serving, "", *otel_alarms_summary(alarms)])


def output_files(run: Sequence[Path], stage: Sequence[Path]) -> list[Path]:
    """The summary's output list: the run's files, then those the alarm stage wrote that the
    run did not (its pages' record; it adds its messages to the run's notifications)."""
    return [*run, *(path for path in stage if path not in run)]


def serving_summary(out: Path) -> list[str]:
    """The serving week's lines, from the report the run wrote: each model's price per million
    output tokens and the week's serving findings."""
    report: dict[str, Any] = json.loads((out / "report.json").read_text(encoding="utf-8"))
    serving = report.get("serving") or {}
    if not serving:
        return ["The serving week: the report has no serving section (no table was read)"]
    lines = [
        f"The serving week (a vLLM Deployment and a KServe InferenceService, OTel mode only): "
        f"{serving['gpu_hours']:,.1f} GPU-hours, ${serving['cost_usd']:,.2f}, "
        f"{serving['generation_tokens'] / 1e6:,.1f}M output tokens (report.html, serving.csv)"
    ]
    for model in serving["models"]:
        price = model["usd_per_million_output_tokens"]
        shown = "unpriced" if price is None else f"${price:,.4f}"
        lines.append(f"  {model['model']}: {shown} per million output tokens")
    for finding in serving["findings"]:
        dollars = finding.get("monthly_usd")
        saving = f" (${dollars:,.2f}/month)" if dollars else ""
        lines.append(f"  {finding['kind']} {finding['resource']}{saving}")
    return lines
