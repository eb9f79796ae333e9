"""The two demo runs' comparison: every file byte for byte, the reports but their alarm history,
which must name the same kinds of alarm raised (cli/demo/both_modes.py ``ALARM_HISTORY``)."""

import json
from pathlib import Path

from cli.demo.both_modes import COMPARED, alarm_kinds, compare

PREFIX = "gpu-insights-c-"


def _run(folder: Path, alarms: list[tuple[str, str]], gpu_hours: float = 1184.0) -> Path:
    folder.mkdir()
    for name in COMPARED:
        (folder / name).write_text(f"{name}\n")
    report = {"cluster": "c", "gpu_hours": gpu_hours, "alarms": [
        {"alarm": PREFIX + alarm, "time": time} for alarm, time in alarms
    ]}  # fmt: skip
    (folder / "report.json").write_text(json.dumps(report))
    rows = "".join(f"<tr><td>{PREFIX}{a}</td><td>{t}</td></tr>" for a, t in alarms)
    (folder / "report.html").write_text(
        f'<h2 id="xids">XIDs</h2><p>{gpu_hours}</p><h2 id="alarms">Alarms raised</h2>'
        f'<table>{rows}</table><h2 id="findings">Findings</h2>'
    )
    return folder


def test_the_reports_are_equal_but_their_alarm_history_which_names_the_same_kinds(
    tmp_path: Path,
) -> None:
    classic = _run(tmp_path / "classic", [("gpu-xid", "15:37"), ("job-hung-shard-00", "15:56")])
    otel = _run(tmp_path / "otel", [("job-hung", "15:55"), ("gpu-xid", "15:36")])
    assert alarm_kinds(classic) == alarm_kinds(otel) == ["gpu-xid", "job-hung"]
    assert compare(classic, otel) == [(name, True) for name in COMPARED]


def test_a_kind_raised_in_one_run_only_or_another_figure_makes_the_reports_differ(
    tmp_path: Path,
) -> None:
    classic = _run(tmp_path / "classic", [("gpu-xid", "15:37"), ("gpu-lost", "16:38")])
    fewer = _run(tmp_path / "fewer", [("gpu-xid", "15:37")])
    other = _run(tmp_path / "other", [("gpu-xid", "15:37"), ("gpu-lost", "16:38")], 1183.0)
    differ = ["report.json", "report.html"]
    assert [n for n, same in compare(classic, fewer) if not same] == differ
    assert [n for n, same in compare(classic, other) if not same] == differ
    (other / "report.csv").write_text("changed\n")
    assert [n for n, same in compare(classic, other) if not same] == ["report.json", "report.csv",
                                                                      "report.html"]  # fmt: skip


def test_the_serving_lines_name_each_models_price_and_finding(tmp_path: Path) -> None:
    from cli.demo.both_modes import serving_summary

    serving = {
        "gpu_hours": 672.0, "cost_usd": 4623.36, "generation_tokens": 1_387_630_565.4,
        "models": [{"model": "llama", "usd_per_million_output_tokens": 3.4547},
                   {"model": "mistral", "usd_per_million_output_tokens": None}],
        "findings": [{"kind": "serving_saturated", "resource": "namespace/i/Deployment/d",
                      "monthly_usd": None}],
    }  # fmt: skip
    (tmp_path / "report.json").write_text(json.dumps({"serving": serving}))
    assert serving_summary(tmp_path)[1:] == [
        "  llama: $3.4547 per million output tokens",
        "  mistral: unpriced per million output tokens",
        "  serving_saturated namespace/i/Deployment/d",
    ]
    assert "672.0 GPU-hours, $4,623.36, 1,387.6M output tokens" in serving_summary(tmp_path)[0]
    (tmp_path / "report.json").write_text(json.dumps({"serving": {}}))
    assert serving_summary(tmp_path) == [
        "The serving week: the report has no serving section (no table was read)"
    ]


def test_the_output_list_adds_the_alarm_stages_files(tmp_path: Path) -> None:
    from cli.demo.both_modes import output_files
    from cli.demo.notifications import NOTIFICATIONS
    from cli.demo.otel_alarms import PAGES_FILE

    run = [tmp_path / "report.html", tmp_path / NOTIFICATIONS, tmp_path / "stacks.json"]
    stage = [tmp_path / PAGES_FILE, tmp_path / NOTIFICATIONS]
    assert output_files(run, stage) == [*run, tmp_path / "otel-alarms.json"]
