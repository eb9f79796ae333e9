"""``gpu-insights backtest --history`` and ``analyze training --history`` over the documented
history file (tests/data/history/otel-node.jsonl: the demo's OTel series, labels as the add-on
sets them, from 12:30 UTC on 2026-11-30), replayed on a real PromQL engine (Debian's
Prometheus, tests/prometheus.py) with the app's default settings: OTel mode, the OTLP sink,
every alarm a PromQL alarm. Before, such a file replayed nothing (every GPU and job alarm was
"a PromQL alarm ... a history file does not hold") and its XID log lines were refused."""

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import pytest

from cdk.alarms.catalog import promql_alarms
from cdk.settings import Settings
from cli.demo.otel_alarms import otlp_settings
from cli.main import main
from tests.prometheus import binaries

pytestmark = pytest.mark.promql_engine

HISTORY: Final = Path(__file__).parents[3] / "data" / "history" / "otel-node.jsonl"
CLUSTER: Final = "example-gpu-cluster"
NODE: Final = "ip-10-0-1-17.ec2.internal"
START: Final = datetime(2026, 11, 30, 12, 30, tzinfo=UTC).timestamp()
ARGS: Final = ("-c", f"cluster_name={CLUSTER}")


@pytest.fixture(scope="module")
def replayed() -> list[dict[str, Any]]:
    binaries()
    outputs: list[str] = []

    def kept(output: str, status: int) -> int:
        outputs.append(output)
        return status

    def account() -> None:
        raise AssertionError("a replay read the account's PromQL API")

    with pytest.MonkeyPatch.context() as patch:  # the module's one run, its output kept
        patch.setattr("cli.main._emit", kept)
        # Every page's reads go to the replay's engine (docs/history.md: no account).
        patch.setattr("lambdas.notifier.handler._promql", account)
        assert main(["backtest", "--history", str(HISTORY), *ARGS, "--json"]) == 0
    document: list[dict[str, Any]] = json.loads(outputs[0])
    return document


def _raised(document: list[dict[str, Any]], alarm: str) -> list[tuple[float, dict[str, str]]]:
    (entry,) = [a for a in document if a["alarm"] == alarm]
    return [
        ((t["time"] - START) / 60, c["attributes"])
        for c in entry["contributors"]
        for t in c["transitions"]
        if t["to"] == "ALARM"
    ]


def test_every_otel_alarm_kind_is_replayed_and_each_planted_fault_raises_its_alarm(
    replayed: list[dict[str, Any]],
) -> None:
    # The app's settings in OTel mode with the OTLP sink (the command's default settings).
    settings = otlp_settings(Settings(cluster_name=CLUSTER))
    deployed = {s.key for s in promql_alarms(settings.alarm_settings())}
    assert {a["alarm"] for a in replayed} == deployed | {"xid-log"}
    minutes = {
        alarm: [(m, a.get("gpu") or a.get("job_name"), a.get("xid_code")) for m, a in raised]
        for alarm in sorted(deployed)
        if (raised := _raised(replayed, alarm))
    }
    assert minutes == {
        # Pending 55 minutes from the first breach at 12:30.
        "gpu-low-power": [(55.0, "1", None)],
        # The trace's XID 13 at 36 minutes; the exporter's one-minute cycle.
        "gpu-xid": [(36.0, "0", "13")],
        "gpu-xid-fatal": [(86.0, "3", "48"), (96.0, "3", "79")],
        "gpu-ecc-uncorrected": [(86.0, "3", None)],
        # Throttled from 13:00, pending 30 minutes.
        "gpu-thermal-throttling": [(60.0, "2", None)],
        # Power-braked from 42 minutes (35% of the two hours), pending 30 minutes.
        "gpu-power-brake": [(72.0, "4", None)],
        "gpu-lost": [(96.0, "3", None)],
        # Hung from 45 minutes in: 10 minutes past its next step, and 3 steps' grace.
        "job-hung": [(55.0, "llama-hangs", None)],
        # Each job's rolling hour of goodput under 70% (the emitters' goodput series): the
        # data-bound job's 60% in the training hours before the node's, the hung job's hang,
        # the steady job's save and evaluation. Not the slow checkpointer (each hour 84% or more),
        # whose windows ended at 11:49, a save last: a job that sends none is not paged.
        "job-goodput-low": [
            (-510.0, "bert-data-bound", None),
            (63.0, "llama-hangs", None),
            (86.0, "resnet-steady", None),
        ],
    }


def test_each_alarm_pages_as_the_notifier_would_and_the_xid_log_lines_page_too(
    replayed: list[dict[str, Any]],
) -> None:
    pages = {a["alarm"]: a["pages"] for a in replayed if a.get("pages")}
    (idle,) = pages["gpu-low-power"]
    assert idle["subject"] == f"[WARNING] GPU in use but not working on {NODE} GPU 1"
    assert "Pods:          speech/whisper-finetune-worker-0" in idle["text"]
    assert idle["time"] == START + 55 * 60
    (hung,) = pages["job-hung"]
    # The job's ranks placed by the notifier's own PromQL read, from the replay's engine.
    assert hung["subject"].startswith("[CRITICAL] Training job hung: job llama-hangs on ")
    assert "Node:          ip-10-0-4-10.ec2.internal, ip-10-0-4-11.ec2.internal" in hung["text"]
    # The goodput pages' badput, read from the replay's engine: the data-bound job's wait.
    badput = {
        p["subject"].split(": job ")[1].split()[0]: line.split(": ", 1)[1]
        for p in pages["job-goodput-low"]
        for line in p["text"].splitlines()
        if "Badput that grew:" in line
    }
    assert badput["bert-data-bound"].startswith("data wait: 40% of the hour, 0% the hour before")
    # The hung job's ranks stalled past their step's due time (the emitter's time split).
    assert badput["llama-hangs"].startswith("no steps: 31% of the hour, 0% the hour before")
    # The XID alarms' contributors are left to the exporter's log line, as the notifier does.
    assert [p["text"] for p in pages["gpu-xid-fatal"]] == [
        f"no page: gpu-insights-{CLUSTER}-gpu-xid-fatal: XIDs are reported per GPU from the "
        "exporter's log"
    ] * 2
    assert [(p["time"] - START, p["subject"]) for p in pages["xid-log"]] == [
        (36 * 60, f"[WARNING] XID 13 on {NODE} GPU 0"),
        (86 * 60, f"[CRITICAL] XID 48 on {NODE} GPU 3"),
        (96 * 60, f"[CRITICAL] XID 79 on {NODE} GPU 3"),
    ]
    # The lost GPU's pods, last seen on it the minute before (the line's times move together).
    assert (
        "worker-2 (last seen on this GPU at 2026-11-30 14:05:00 UTC)" in pages["xid-log"][2]["text"]
    )


def test_a_bad_series_is_skipped_and_named_the_others_replayed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binaries()
    bad = {"metric": {"__name__": "gpu_healthy", "gpu": "9"}, "values": [[START, "up"]]}
    history = tmp_path / "history.jsonl"
    # A bad series, and an interrupted export's last line: each skipped and named.
    history.write_text(HISTORY.read_text() + json.dumps(bad) + "\n" + '{"status": "succ\n')
    assert main(["backtest", "--history", str(history), *ARGS]) == 0
    out = capsys.readouterr().out
    assert f"skipped: {history} line 38 " in out  # the 37 lines of the file, then it
    assert "value 'up' is not a number" in out
    assert f"skipped: {history} line 39: Unterminated string" in out
    assert f"      page: [CRITICAL] GPU lost on {NODE} GPU 3" in out
    lost = "gpu-lost [critical] GPU lost (PromQL, every 60 s, pending 0 s, recovery 300 s): 1 "
    assert lost in out


def test_in_a_classic_deployment_the_files_series_are_said_to_be_read_by_no_alarm(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Outside the OTel Regions an unset mode is Classic, which deploys no PromQL alarm: the
    file's series were left out with no word (only its XID log lines paged)."""
    binaries()
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-central-1")
    monkeypatch.delenv("AWS_REGION", raising=False)
    assert main(["backtest", "--history", str(HISTORY), *ARGS]) == 0
    out = capsys.readouterr().out
    assert "PromQL series of the file are read by no alarm: this deployment is classic" in out
    assert "(Region eu-central-1)" in out


def test_analyze_training_reads_the_jobs_from_the_file_with_no_account(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The training analyzer's OTel readers on the file's series (no credentials: its other
    reads go to an empty moto)."""
    binaries()
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    argv = ["analyze", "training", "--history", str(HISTORY), *ARGS, "--json"]
    assert main(argv) == 0
    findings = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line]
    found = {(f["kind"], f["resource"]): f for f in findings}
    data_bound = found["training_data_bound", "job/bert-data-bound"]
    assert data_bound["resource"] == "job/bert-data-bound"
    assert "waits for data 40% of each step (0.800 s of 2.010 s)" in data_bound["summary"]
    slow = found["training_slow_checkpoint", "job/llama-slow-checkpoint"]
    assert slow["resource"] == "job/llama-slow-checkpoint"
    assert "takes 420 s to save a checkpoint" in slow["summary"]


def test_analyze_training_gives_the_days_funnel_with_productive_from_each_jobs_goodput(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under its findings, the table output gives the file's last day's GPU-hour funnel
    (docs/goodput.md): the node's capacity (Kube State Metrics) is paid. The file holds no
    DCGM series labelled with a pod and no emitter time split, so its held hours are no job's
    and have no goodput (``day_funnel``'s unit test joins them)."""
    binaries()
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    assert main(["analyze", "training", "--history", str(HISTORY), *ARGS]) == 0
    out = capsys.readouterr().out
    funnel = out[out.index("GPU-hour funnel, 2026-11-30:") :]
    assert "  paid              24.0 GPU-hours  $      165.12" in funnel
    # GPUs 5-7 ran unallocated for the file's 3 clock hours; GPU 3, lost at 14:06, was held
    # on a lost GPU that hour: every drop is printed, so the stages' differences are the
    # drops' sums.
    assert "  allocated         15.0 GPU-hours" in funnel
    assert "  active            11.0 GPU-hours" in funnel
    assert "capacity no pod asked for: p5.48xlarge 9.0 GPU-hours ($61.92)" in funnel
    assert "held and idle: (unknown)/(no Container Insights data) 3.0 GPU-hours" in funnel
    assert "held on a lost GPU: (unknown)/(no Container Insights data) 1.0 GPU-hours" in funnel
    assert "active but not productive: no_step_or_token_signal 11.0 GPU-hours" in funnel


def test_analyze_training_refuses_a_file_of_another_cluster_by_name(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As backtest does (docs/cli.md: exit 2), before any read: the file's clusters named."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    argv = ["analyze", "training", "--history", str(HISTORY), "-c", "cluster_name=ml-prod"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no sample is of cluster 'ml-prod' (the cluster_name setting)" in err
    assert f"it holds '{CLUSTER}'" in err
