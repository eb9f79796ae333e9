"""The demo's deploy with a setting of its own (the agent's interval): real synth, real moto,
the agent configuration a node fetches, the preflight, the files they write. The deploy alone
(``deploy_demo``): the demo's weeks after it change none of this, and
tests/functional/cli/test_demo.py runs them."""

import json
import re
from pathlib import Path
from typing import Any

import jsonschema

from cdk.node_config.cloudwatch_agent_config import gpu_node_agent_config
from cdk.settings import Settings
from cli.demo.command import deploy_demo
from cli.demo.storage import DEMO_CLUSTER


def test_demo_synthesizes_stores_and_fetches_the_agent_config(
    tmp_path: Path, agent_schema: dict[str, Any]
) -> None:
    result = deploy_demo(
        out_dir=tmp_path / "out",
        cdk_out=tmp_path / "cdk.out",
        settings=Settings(cluster_name=DEMO_CLUSTER, agent_interval_seconds=30),
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
    # Eight GPU alarms (gpu-silent among them; no actions), the silence check's heartbeat,
    # the notifier-failing and notifier-refused alarms and the 48 job alarms (six kinds in
    # eight job shards), the fleet count alarm of each of the 12 multi time series kinds, the
    # control plane's 10 (cdk/alarms/cluster.py), and Classic's 5 serving alarms (waiting per
    # server, vLLM's preemptions: cdk/alarms/serving_classic.py) with their 5 count alarms.
    assert stacks["GpuInsights-example-gpu-cluster-Alarms"]["AWS::CloudWatch::Alarm"] == 91
    # Three analyzers and CDK's custom-resource provider (it makes the training log group).
    assert stacks["GpuInsights-example-gpu-cluster-Analyzers"]["AWS::Lambda::Function"] == 4
    del stacks["GpuInsights-example-gpu-cluster-Alarms"]
    del stacks["GpuInsights-example-gpu-cluster-Analyzers"]
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
    assert "7 nvidia_gpu measurements every 30 s" in summary  # the allowlisted defaults
    # Preflight ran on the demo's cluster before anything was written: the Bottlerocket group
    # warns, and its two GPU node groups have no auto repair nor the node monitoring agent
    # (moto's node groups carry no nodeRepairConfig): warnings, nothing fails (moto for EKS,
    # Stubber for its add-on API).
    assert result.preflight[-1] == "10 ok, 4 warn, 0 fail"
    assert sum("node-repair:" in line and "WARN" in line for line in result.preflight) == 3
    # Both GPU node groups' types are ones the exporter's DaemonSet selects.
    (reach,) = [line for line in result.preflight if "exporter-nodes" in line]
    assert reach.startswith("OK   exporter-nodes")
    assert "selects 2 of the 2 NVIDIA GPU nodes" in reach
    # The names' column is as wide as the longest check's name.
    assert re.search(r"^   WARN nodes:gpu-bottlerocket +BOTTLEROCKET_x86_64_NVIDIA", summary, re.M)
