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
