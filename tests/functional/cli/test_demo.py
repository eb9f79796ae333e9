"""The demo end to end: real synth, real moto, files a user opens."""

import json
from pathlib import Path
from typing import Any

import jsonschema

from agent.cloudwatch_agent_config import gpu_node_agent_config
from cdk.settings import Settings
from cli.demo import run_demo


def test_demo_synthesizes_stores_and_fetches_the_agent_config(
    tmp_path: Path, agent_schema: dict[str, Any]
) -> None:
    result = run_demo(
        out_dir=tmp_path / "out",
        cdk_out=tmp_path / "cdk.out",
        settings=Settings(agent_interval_seconds=30),
    )
    assert (
        tmp_path / "cdk.out" / "GpuInsights-example-gpu-cluster-Observability.template.json"
    ).exists()
    assert result.parameter_name == "AmazonCloudWatch-GpuInsights-example-gpu-cluster"
    # What a node fetched from (moto) SSM is exactly what the renderer produced.
    assert result.fetched_agent_config == gpu_node_agent_config(interval_seconds=30)
    written = json.loads((tmp_path / "out" / "agent-config.json").read_text())
    jsonschema.Draft4Validator(agent_schema).validate(written)
    stacks = json.loads((tmp_path / "out" / "stacks.json").read_text())
    assert stacks == {
        "GpuInsights-example-gpu-cluster-Observability": {
            "AWS::EKS::Addon": 1,
            "AWS::EKS::PodIdentityAssociation": 1,
            "AWS::IAM::Role": 1,
            "AWS::SSM::Parameter": 1,
        }
    }
    summary = result.summary()
    assert "4 resources" in summary
    assert "8 nvidia_gpu measurements every 30 s" in summary
