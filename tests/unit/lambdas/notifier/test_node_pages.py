"""GPU node and crash-looping GPU pod pages (cdk/alarms/nodes.py): a node's contributor names the
node and all its GPUs and links its dashboard; a pod's names the pod, its node and the GPUs it
holds; a hostile name reaches a chat inert, as every page's fields do."""

import json

from cdk.alarms.catalog import AlarmSettings, deployed_alarms, promql_alarms
from cdk.alarms.cluster import ClusterAlarmSettings
from cdk.alarms.nodes import GPU_NODE_HARDWARE, GPU_NODE_NOT_READY, GPU_POD_CRASH_LOOP
from lambdas.notifier.incidents import Deployment, Skipped, from_alarm_event
from lambdas.notifier.notification import Incident, render_text, subject
from lambdas.notifier.webhook_formats import Format, body
from lambdas.shared.dcgm import CLOUDWATCH as L
from tests.unit.lambdas.notifier.events import (
    AWS_CONTRIBUTOR_EXAMPLE,
    alarm_level,
    as_promql_contributor,
)

SETTINGS = AlarmSettings(
    cluster_name="train", jobs=None, promql=True, cluster=ClusterAlarmSettings()
)
SPECS = {s.key: s for s in deployed_alarms(SETTINGS)}
DEPLOYMENT = Deployment(
    cluster="train",
    region="us-east-1",
    gpu_dashboard="gpu-insights-train-gpu-node",
    alarm_kinds={s.kind: (s.severity, s.title) for s in SPECS.values()},  # type: ignore[misc]
    promql_kinds=frozenset(s.kind for s in promql_alarms(SETTINGS)),
)
NODE = "ip-10-0-1-17.ec2.internal"


def _incident(kind: str, labels: dict[str, str]) -> Incident:
    event = as_promql_contributor(
        AWS_CONTRIBUTOR_EXAMPLE, f"gpu-insights-train-{kind}", SPECS[kind].description, labels
    )
    incident = from_alarm_event(event, DEPLOYMENT)
    assert isinstance(incident, Incident), incident
    assert isinstance(from_alarm_event(alarm_level(event), DEPLOYMENT), Skipped)
    return incident


def test_a_not_ready_gpu_node_pages_critical_with_the_node_and_its_gpus() -> None:
    labels = {L.cluster: "train", L.node: NODE, "node_gpus": "8"}
    incident = _incident(GPU_NODE_NOT_READY, labels)
    assert incident.severity == "critical"
    assert subject(incident) == f"[CRITICAL] GPU node NotReady on {NODE}"
    text = render_text(incident)
    for line in (
        f"Node:             {NODE}",
        "GPU:              all 8 of the node's GPUs",
        "GPUs on the node: 8",
    ):
        assert line in text, text
    assert "for 5 minutes" in text
    assert "evicts its pods" in text
    assert incident.dashboard_url is not None
    assert NODE in incident.dashboard_url


def test_the_hardware_page_says_where_the_agents_reason_is() -> None:
    labels = {L.cluster: "train", L.node: NODE, "node_gpus": "4"}
    incident = _incident(GPU_NODE_HARDWARE, labels)
    assert incident.title == f"GPU hardware not ready on {NODE}"
    assert "kubectl describe node" in incident.action
    assert "NvidiaXID79Error" in incident.action
    assert "10 minutes after the condition" in incident.action


def test_a_crash_looping_gpu_pod_names_the_pod_its_node_and_the_gpus_it_holds() -> None:
    labels = {
        L.cluster: "train",
        L.namespace: "serve",
        L.pod: "vllm-llama-0",
        L.node: NODE,
        "pod_gpus": "2",
    }
    incident = _incident(GPU_POD_CRASH_LOOP, labels)
    assert subject(incident) == "[WARNING] GPU pod crash looping on serve/vllm-llama-0"
    text = render_text(incident)
    for line in (
        "Pods:                 serve/vllm-llama-0",
        f"Node:                 {NODE}",
        "GPU:                  2 held by the pod (indices not named)",
        "GPUs held by the pod: 2",
    ):
        assert line in text, text


def test_a_hostile_pod_name_reaches_slack_inert() -> None:
    hostile = "<!channel> <https://evil.example|x>"
    labels = {L.cluster: "train", L.namespace: "a", L.pod: hostile, L.node: NODE, "pod_gpus": "1"}
    text = json.loads(body(_incident(GPU_POD_CRASH_LOOP, labels), Format.SLACK))["text"]
    assert "<!channel>" not in text
    assert "&lt;!channel&gt; &lt;https://evil.example|x&gt;" in text
