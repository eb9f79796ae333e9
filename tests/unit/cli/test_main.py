import json
import re
from importlib import metadata
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from cli.main import main


def test_agent_config_prints_schema_valid_json(
    capsys: pytest.CaptureFixture[str], agent_schema: dict[str, Any]
) -> None:
    assert main(["agent-config", "--interval", "15", "--measurement", "power_draw"]) == 0
    config = json.loads(capsys.readouterr().out)
    jsonschema.Draft4Validator(agent_schema).validate(config)
    assert config["metrics"]["metrics_collected"]["nvidia_gpu"] == {
        "measurement": ["power_draw"],
        "metrics_collection_interval": 15,
    }


def test_agent_config_bad_interval_is_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agent-config", "--interval", "0"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == (
        "gpu-insights agent-config: collection interval 0 s is outside 1..172800 seconds"
    )


def test_manifest_prints_a_list_kubectl_applies(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifest", "--image", "repo/exporter:1", "--cluster-name", "train"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["kind"] == "List"
    daemon_set = document["items"][2]
    assert daemon_set["spec"]["template"]["spec"]["containers"][0]["image"] == "repo/exporter:1"


def test_manifest_bad_label_is_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["manifest", "--image", "x", "--cluster-name", "c", "-c", "gpu_node_labels=gpu"]) == 2
    )
    assert capsys.readouterr().err.strip() == (
        "gpu-insights manifest: setting gpu_node_labels='gpu' is not valid: expected Kubernetes "
        "labels as key=value, such as nvidia.com/gpu.present=true"
    )


def test_cost_estimate_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cost-estimate", "--nodes", "4", "--gpus-per-node", "8"]) == 0
    out = capsys.readouterr().out
    assert "4 GPU nodes x 8 GPUs = 32 GPUs" in out
    # The default (OTel mode, the OTLP sink): 4 nodes x 4.92 GB a month at $0.08 per GB, and
    # every GPU, job, serving and pending GPU pod alarm PromQL (8 GPU, 6 job, 4 serving
    # kinds and the pending pods', each with its fleet count); the only catalog metric alarms
    # are the control plane's 10 on AWS/EKS.
    assert re.search(r"^\$\s+1\.57  Exporter OTLP metrics ingestion\s+19\.7 GB$", out, re.M)
    assert "46 alarms (one per kind and its fleet count, no shard)" in out
    assert "10 catalog alarms (10 metrics)" in out
    assert "GpuInsights" not in out
    # The EMF sink: 4 x 8 GPUs x 4 gauges + 4 cluster series, and 4.48 fault metric-months,
    # at $0.30.
    argv = ["cost-estimate", "--nodes", "4", "--gpus-per-node", "8", "-c", "exporter_sink=emf"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "$      40.94  Exporter custom metrics (GpuInsights)" in out
    assert "136.5 metric-months" in out


def _history(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _sample(minute: int, value: float) -> str:
    return json.dumps(
        {
            "namespace": "GpuInsights",
            "metric": "gpu_allocated_power_utilization",
            "dimensions": {"ClusterName": "train", "NodeName": "n1", "GpuIndex": "3", "Shard": "0"},
            "timestamp": 1_764_331_200 + minute * 60,
            "value": value,
        }
    )


def test_backtest_from_a_file_says_when_an_alarm_fires(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = _history(tmp_path, [_sample(m, 9.5) for m in range(120)])
    (tmp_path / "cdk.json").write_text("{}")  # settings from -c alone
    args = ["backtest", "--history", str(history), "--cdk-json", str(tmp_path / "cdk.json")]
    # A history file holds GpuInsights series: the EMF sink's (in OTel mode the OTLP sink is
    # the default, whose alarms are all PromQL), so these replays pin exporter_sink=emf.
    args += ["-c", "exporter_sink=emf"]
    assert main([*args, "-c", "cluster_name=train", "--json"]) == 0
    results = {r["alarm"]: r for r in json.loads(capsys.readouterr().out)}
    low = results["gpu-low-power"]
    assert [(t["to"], t["time"] - 1_764_331_200) for t in low["transitions"]] == [
        ("OK", 300),
        ("ALARM", 3600),
    ]
    (gpu,) = low["contributors"]
    assert gpu["attributes"] == {"ClusterName": "train", "NodeName": "n1", "GpuIndex": "3"}
    # A contributor is born OK (it is only ever OK or ALARM): one transition, into ALARM.
    assert [(t["from"], t["to"]) for t in gpu["transitions"]] == [("OK", "ALARM")]
    assert results["gpu-xid-fatal"]["transitions"][0]["to"] == "OK"
    # A stricter threshold from the same settings the app takes: the idle GPU no longer fires.
    assert main([*args, "-c", "cluster_name=train", "-c", "low_power_percent=5", "--json"]) == 0
    stricter = {r["alarm"]: r for r in json.loads(capsys.readouterr().out)}
    assert [t["to"] for t in stricter["gpu-low-power"]["transitions"]] == ["OK"]


def test_backtest_of_a_file_says_when_every_alarm_is_promql(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default settings (OTel mode, the OTLP sink) make every GPU and job alarm a PromQL
    alarm, which a file of GpuInsights samples cannot replay, and the control plane's metric
    alarms read AWS/EKS, which it does not hold: one line with the two ways that do, not an
    empty report of the control plane's alarms that reads as no alarm firing. Classic replays
    the same file."""
    history = _history(tmp_path, [_sample(m, 9.5) for m in range(120)])
    argv = ["backtest", "--history", str(history), "-c", "cluster_name=train"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "every GPU and job alarm of these settings is a PromQL alarm" in err
    assert "no AWS/EKS series" in err
    assert "no PromQL series" in err
    assert "docs/history.md" in err
    assert "--cloudwatch" in err
    assert "-c exporter_sink=emf" in err
    assert main([*argv, "-c", "container_insights_mode=classic", "--json"]) == 0
    results = {r["alarm"]: r for r in json.loads(capsys.readouterr().out)}
    assert [t["to"] for t in results["gpu-low-power"]["transitions"]] == ["OK", "ALARM"]
    # The line's other way: the EMF sink's alarms in OTel mode replay the file too.
    assert main([*argv, "-c", "exporter_sink=emf", "--json"]) == 0
    emf = {r["alarm"]: r for r in json.loads(capsys.readouterr().out)}
    assert [t["to"] for t in emf["gpu-low-power"]["transitions"]] == ["OK", "ALARM"]
    # A file with the control plane's AWS/EKS series replays their alarms in the default mode:
    # 3 unschedulable pods every minute for 20 minutes page after the 15-minute default.
    unschedulable = [
        json.dumps(
            {
                "namespace": "AWS/EKS",
                "metric": "scheduler_pending_pods_UNSCHEDULABLE",
                "dimensions": {"ClusterName": "train"},
                "timestamp": 1_764_331_200 + m * 60,
                "value": 3,
            }
        )
        for m in range(20)
    ]
    eks = _history(tmp_path, unschedulable)
    assert main(["backtest", "--history", str(eks), "-c", "cluster_name=train", "--json"]) == 0
    cluster = {r["alarm"]: r for r in json.loads(capsys.readouterr().out)}
    pending = cluster["control-plane-unschedulable-pods"]["transitions"]
    assert [t["to"] for t in pending] == ["OK", "ALARM"]


def test_backtest_names_the_bad_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A bad line is skipped and named; the file's good lines are replayed."""
    history = _history(tmp_path, [_sample(0, 9.5), '{"namespace": "GpuInsights"'])
    argv = ["backtest", "--history", str(history), "-c", "cluster_name=train"]
    assert main([*argv, "-c", "exporter_sink=emf"]) == 0
    out, err = capsys.readouterr()
    assert f"\nskipped: {history} line 2: " in out
    assert "Traceback" not in out + err


def test_backtest_bad_setting_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = _history(tmp_path, [_sample(0, 9.5)])
    argv = ["backtest", "--history", str(history), "-c", "cluster_name=train"]
    assert main([*argv, "-c", "low_power_percent=150"]) == 2
    assert "low_power_percent=150.0 must be above 0 and below 100" in capsys.readouterr().err


#: 2026-11-29 15:00 UTC.
T15 = 1_795_964_400


def _healthy(node: str, gpu: int, at: int) -> str:
    """What a reporting GPU sends every cycle and the silence check reads (REPORTING_METRIC),
    with the exporter's alarmed dimension set (gpu_schema in
    agent/gpu_insights_agent/contract/metrics.py)."""
    dims = {"ClusterName": "train", "NodeName": node, "GpuIndex": str(gpu), "Shard": "0"}
    return json.dumps(
        {
            "namespace": "GpuInsights",
            "metric": "gpu_healthy",
            "dimensions": dims,
            "timestamp": at,
            "value": 1.0,
        }
    )


def test_backtest_from_a_file_pages_gpu_silent_for_a_node_that_stops_sending(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Node n1 sends until 15:45, n2 until 17:00: the silence check's rule, run every 5 minutes
    over the file, finds n1 silent once its 10-minute look back holds nothing, and gpu-silent
    pages for n1 (GpuIndex "all": the whole node) and never for n2."""
    lines = [
        _healthy(node, gpu, T15 + minute * 60)
        for minute in range(120)
        for node in ("n1", "n2")
        for gpu in (0, 1)
        if node == "n2" or minute < 45
    ]
    history = _history(tmp_path, lines)
    (tmp_path / "cdk.json").write_text("{}")
    args = ["backtest", "--history", str(history), "--cdk-json", str(tmp_path / "cdk.json")]
    args += ["-c", "cluster_name=train", "-c", "exporter_sink=emf"]  # the EMF sink's gpu-silent
    args += ["--end", "2026-11-29T17:00:00Z"]
    assert main([*args, "--json"]) == 0
    silent = {r["alarm"]: r for r in json.loads(capsys.readouterr().out)}["gpu-silent"]
    (node,) = silent["contributors"]
    assert node["attributes"] == {"ClusterName": "train", "NodeName": "n1", "GpuIndex": "all"}
    (paged,) = [t["time"] - T15 for t in node["transitions"] if t["to"] == "ALARM"]
    # Silent at the first run whose look back (600 s) starts after its last sample (15:44),
    # 15:55; the alarm's 5-minute period holding that datapoint is evaluated at 16:00.
    assert 45 * 60 < paged <= 60 * 60
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "gpu-silent [critical] GPU not reporting: raised 1 time(s)" in out
    assert "a history has no EC2 view" in out


def test_backtest_says_a_silence_after_the_history_is_not_seen_and_the_json_carries_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --end the range ends at the history's last sample: a node that stopped with
    everything else cannot be seen as silent, and the output says so (text and JSON alike)."""
    lines = [_healthy("n1", 0, T15 + minute * 60) for minute in range(45)]
    history = _history(tmp_path, lines)
    args = ["backtest", "--history", str(history), "-c", "cluster_name=train"]
    args += ["-c", "exporter_sink=emf"]  # the silence check runs with the EMF sink
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "raised 0 time(s)" in out
    assert "so a silence after it is not seen: pass --end to replay past it" in out
    assert main([*args, "--json"]) == 0
    silent = {r["alarm"]: r for r in json.loads(capsys.readouterr().out)}["gpu-silent"]
    assert "a history has no EC2 view" in silent["note"]
    assert "pass --end" in silent["note"]


def test_backtest_names_where_each_end_of_a_reversed_range_came_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = _history(tmp_path, [_healthy("n1", 0, T15 + minute * 60) for minute in range(5)])
    argv = ["backtest", "--history", str(history), "-c", "cluster_name=train"]
    argv += ["-c", "exporter_sink=emf"]
    assert main([*argv, "--end", "2026-11-29T14:00:00Z"]) == 2
    err = capsys.readouterr().err
    assert "(2026-11-29 14:00 UTC, --end)" in err
    assert "the history's first sample" in err
    assert "--start" not in err


def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"gpu-insights {metadata.version('eks-gpu-insights')}\n"


def test_a_reader_that_went_away_ends_the_command_quietly() -> None:
    """``gpu-insights agent-config | head -0``: the pipe closes before the output is written;
    no BrokenPipeError traceback, and the shell's status for a closed pipe (128 + SIGPIPE)."""
    import subprocess
    import sys

    child = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "agent-config"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert child.stdout is not None
    assert child.stderr is not None
    child.stdout.close()
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == 141
    assert "Traceback" not in err, err
