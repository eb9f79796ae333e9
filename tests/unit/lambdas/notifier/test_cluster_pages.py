"""The cluster's pages (cdk/alarms/cluster.py): a control-plane alarm, one series, pages from its
own state change with what the metric means and where to look; a pending GPU pod's contributor
names the pod, its namespace and the GPUs it asked for, on no node."""

import copy
import json

from cdk.alarms.catalog import AlarmSettings, deployed_alarms, promql_alarms
from cdk.alarms.cluster import GPU_PENDING, ClusterAlarmSettings
from lambdas.notifier.incidents import Deployment, Skipped, from_alarm_event
from lambdas.notifier.notification import Incident, render_text, subject
from lambdas.shared.dcgm import CLOUDWATCH as L
from tests.unit.lambdas.notifier.events import (
    AWS_CONTRIBUTOR_EXAMPLE,
    SINGLE_METRIC,
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
POD_LABELS = {
    L.cluster: "train",
    L.namespace: "serve",
    L.pod: "mixtral-serve-0",
    "gpus_requested": "8",
}


def _incident(event: dict) -> Incident:  # type: ignore[type-arg]
    incident = from_alarm_event(event, DEPLOYMENT)
    assert isinstance(incident, Incident), incident
    return incident


def test_a_pending_gpu_pod_pages_with_its_namespace_name_and_gpus_on_no_node() -> None:
    spec = SPECS[GPU_PENDING]
    event = as_promql_contributor(
        AWS_CONTRIBUTOR_EXAMPLE, "gpu-insights-train-gpu-pods-pending", spec.description, POD_LABELS
    )
    incident = _incident(event)
    assert (incident.kind, incident.severity) == (GPU_PENDING, "warning")
    assert incident.title == "GPU pod waiting for GPUs on serve/mixtral-serve-0"
    assert subject(incident) == "[WARNING] GPU pod waiting for GPUs on serve/mixtral-serve-0"
    text = render_text(incident)
    for line in (
        "Pods:           serve/mixtral-serve-0",
        "Node:           none: the pod is not scheduled",
        "GPU:            none allocated (8 requested)",
        "GPUs requested: 8",
    ):
        assert line in text, text
    # How long, and where to look: the alarm's description is the page's action.
    assert "unschedulable for 15 minutes" in text
    assert "the GPUs it asked for." in text  # whole: the description fits the page
    assert incident.dashboard_url is None  # no node: no node dashboard to link
    # The alarm's own state change is no second page: each pod comes as a contributor.
    skipped = from_alarm_event(alarm_level(event), DEPLOYMENT)
    assert isinstance(skipped, Skipped)


def test_a_control_plane_alarm_pages_from_its_own_state_change_saying_where_to_look() -> None:
    spec = SPECS["control-plane-etcd-size"]
    event = copy.deepcopy(SINGLE_METRIC)
    name = "gpu-insights-train-control-plane-etcd-size"
    event["resources"] = [f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{name}"]
    detail = event["detail"]
    detail["alarmName"] = name
    detail["configuration"]["description"] = spec.description
    detail["state"]["reason"] = (
        "Threshold Crossed: 1 out of the last 1 datapoints [7.2E9 (02/10/19 16:59:00)] was "
        "greater than or equal to the threshold (6.871947674E9) (minimum 1 datapoint for OK -> "
        "ALARM transition)."
    )
    detail["state"]["reasonData"] = json.dumps(
        {"recentDatapoints": [7.2e9], "threshold": 6871947674.0}
    )
    incident = _incident(event)
    assert (incident.kind, incident.severity) == ("control-plane-etcd-size", "warning")
    assert incident.title == "etcd database near its limit"
    assert (incident.threshold, incident.observed) == (
        "6.87195e+09",
        "7.2e+09 (1 of the last 1 datapoints were greater than or equal to the threshold)",
    )
    assert "80% of its 8 GiB limit" in incident.action
    assert "apiserver_storage_objects" in incident.action
    assert incident.node == "not named (a cluster-wide series)"
