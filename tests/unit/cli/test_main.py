import json
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
    assert main(["manifest", "--image", "x", "--cluster-name", "c", "--node-label", "gpu"]) == 2
    assert capsys.readouterr().err.strip() == (
        "gpu-insights manifest: GPU node label 'gpu' is not key=value"
    )


def test_cost_estimate_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cost-estimate", "--nodes", "4", "--gpus-per-node", "8"]) == 0
    out = capsys.readouterr().out
    assert "4 GPU nodes x 8 GPUs = 32 GPUs" in out
    # 4 x 8 GPUs x 4 gauges + 4 cluster series, and 2.56 fault metric-months, at $0.30.
    assert "GpuInsights custom metrics          132  $     40.37" in out
    assert "Per node, before and after: 124 series $38.68 -> 33 series $11.12 a month" in out
    assert "Prices assumed" in out


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


def test_backtest_names_the_bad_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = _history(tmp_path, [_sample(0, 9.5), '{"namespace": "GpuInsights"'])
    assert main(["backtest", "--history", str(history), "-c", "cluster_name=train"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpu-insights backtest: {history} line 2:")
    assert "Traceback" not in err


def test_backtest_bad_setting_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = _history(tmp_path, [_sample(0, 9.5)])
    argv = ["backtest", "--history", str(history), "-c", "cluster_name=train"]
    assert main([*argv, "-c", "low_power_percent=150"]) == 2
    assert "low_power_percent=150.0 must be above 0 and below 100" in capsys.readouterr().err
