import json
from typing import Any

import jsonschema
import pytest

from cdk.node_config.cloudwatch_agent_config import (
    DEFAULT_GPU_MEASUREMENTS,
    KNOWN_GPU_MEASUREMENTS,
    AgentConfigError,
    container_insights_agent_config,
    gpu_node_agent_config,
)
from cli.main import main
from gpu_insights_agent.contract.metrics import NAMESPACE_CW_AGENT
from tests.unit.reference_data import nvidia_smi_allowlist, unknown_agent_keys


def _validate(schema: dict[str, Any], config: dict[str, Any]) -> None:
    jsonschema.Draft4Validator(schema).validate(config)


def test_gpu_node_config_validates_against_official_schema(agent_schema: dict[str, Any]) -> None:
    config = gpu_node_agent_config(interval_seconds=30)
    _validate(agent_schema, config)
    gpu = config["metrics"]["metrics_collected"]["nvidia_gpu"]
    assert gpu["metrics_collection_interval"] == 30
    assert config["metrics"]["namespace"] == NAMESPACE_CW_AGENT


def _rendered_agent_config(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["agent-config", *args]) == 0
    config: dict[str, Any] = json.loads(capsys.readouterr().out)
    return config


def test_every_rendered_measurement_is_in_the_agents_allowlist(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The translator refuses the whole configuration for one name outside its nvidia_smi
    allowlist ("measurement name power_limit is invalid"); see tests/data/README.md."""
    config = _rendered_agent_config(capsys, "--interval", "30")
    measured = config["metrics"]["metrics_collected"]["nvidia_gpu"]["measurement"]
    assert sorted(set(measured) - nvidia_smi_allowlist()) == []
    assert len(measured) == 7


def test_known_measurements_are_exactly_the_agents_allowlist() -> None:
    assert nvidia_smi_allowlist() == KNOWN_GPU_MEASUREMENTS
    assert len(KNOWN_GPU_MEASUREMENTS) == 17


def test_every_key_of_both_configs_is_one_the_agent_knows() -> None:
    for config in (
        gpu_node_agent_config(),
        container_insights_agent_config(cluster_name="train"),
    ):
        assert unknown_agent_keys(config) == []


def test_a_misspelt_key_is_caught_by_the_key_check() -> None:
    config = gpu_node_agent_config()
    config["metrics"]["aggregation_dimension"] = [["InstanceId"]]
    assert unknown_agent_keys(config) == ["/metrics/aggregation_dimension"]


def test_power_limit_is_refused_with_where_to_find_it() -> None:
    with pytest.raises(AgentConfigError, match="gpu_power_limit_watts"):
        gpu_node_agent_config(measurements=["power_draw", "power_limit"])


def test_gpu_node_config_has_measurements_that_say_whether_a_gpu_works() -> None:
    measured = gpu_node_agent_config()["metrics"]["metrics_collected"]["nvidia_gpu"]["measurement"]
    for name in (
        "power_draw",
        "utilization_gpu",
        "utilization_memory",
        "memory_used",
        "memory_total",
        "temperature_gpu",
        "clocks_current_sm",
    ):
        assert name in measured
    assert tuple(measured) == DEFAULT_GPU_MEASUREMENTS


def test_gpu_node_config_carries_instance_dimensions() -> None:
    dims = gpu_node_agent_config()["metrics"]["append_dimensions"]
    assert dims["InstanceId"] == "${aws:InstanceId}"
    assert dims["InstanceType"] == "${aws:InstanceType}"


def test_schema_rejects_a_gpu_section_without_measurements(agent_schema: dict[str, Any]) -> None:
    """Proves the schema check has teeth for the nvidia_gpu key, not only for known sections."""
    config = gpu_node_agent_config()
    del config["metrics"]["metrics_collected"]["nvidia_gpu"]["measurement"]
    with pytest.raises(jsonschema.ValidationError, match="measurement"):
        _validate(agent_schema, config)


@pytest.mark.parametrize("interval", [0, -5, 172_801])
def test_interval_outside_schema_bounds_is_refused(interval: int) -> None:
    with pytest.raises(AgentConfigError, match=f"interval {interval} s"):
        gpu_node_agent_config(interval_seconds=interval)


def test_unknown_measurement_is_named() -> None:
    with pytest.raises(AgentConfigError, match="power_drawn"):
        gpu_node_agent_config(measurements=["power_draw", "power_drawn"])


def test_empty_measurements_are_refused() -> None:
    with pytest.raises(AgentConfigError, match="at least one"):
        gpu_node_agent_config(measurements=[])


def test_container_insights_config_turns_on_gpu_metrics_and_emf(
    agent_schema: dict[str, Any],
) -> None:
    config = container_insights_agent_config(cluster_name="train-1")
    _validate(agent_schema, config)
    collected = config["logs"]["metrics_collected"]
    assert collected["kubernetes"] == {
        "cluster_name": "train-1",
        "enhanced_container_insights": True,
        "accelerated_compute_metrics": True,
    }
    assert collected["emf"] == {}
