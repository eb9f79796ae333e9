import json
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
    assert "GpuInsights custom metrics          495  $    148.50" in out
    assert "Prices assumed" in out
