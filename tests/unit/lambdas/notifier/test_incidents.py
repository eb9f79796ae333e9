"""The notifier's formatter: one message per incident, from CloudWatch's events and from
grouped XIDs, valid as an Amazon Q Developer custom notification, with the console links."""

import json
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import jsonschema
import pytest

from cdk.alarms.catalog import (
    AlarmSettings,
    deployed_alarms,
    gpu_alarms,
    low_power_alarm,
    promql_alarms,
    silence_check_alarm,
)
from cdk.alarms.model import BreachCount, InsightsQuery
from dashboards.bodies import gpu_node
from gpu_insights_agent.emf.sinks import BufferedSender
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from gpu_insights_agent.exporter.xid_watcher import XidEvent
from lambdas.notifier.incidents import (
    AlarmEventError,
    Crossing,
    Deployment,
    Skipped,
    from_alarm_event,
    from_xid_group,
    read_reason,
)
from lambdas.notifier.links import gpu_dashboard_url
from lambdas.notifier.messages import GROUP_WINDOW_S, XidGroup, group_xids, parse_log_events
from lambdas.notifier.notification import (
    Incident,
    publish_arguments,
    render_chatbot,
    render_text,
    subject,
)
from lambdas.shared.console_links import node_dashboard_url
from lambdas.shared.dcgm import CLOUDWATCH as DCGM_LABELS
from tests.unit.agent.exporter.nvml_trace import Clock, trace_lines
from tests.unit.lambdas.notifier.events import (
    AWS_CONTRIBUTOR_EXAMPLE,
    LOW_POWER_QUERY,
    NODE,
    SINGLE_METRIC,
    alarm_level,
    as_gpu_contributor,
    as_promql_contributor,
    low_power_contributor,
)

SCHEMA = json.loads((Path(__file__).parent / "chatbot_custom_notification.schema.json").read_text())
SETTINGS = AlarmSettings(cluster_name="train")
DEPLOYMENT = Deployment(
    cluster="train",
    region="us-east-1",
    gpu_dashboard="gpu-insights-train-gpu-node",
    alarm_kinds={s.kind: (str(s.severity), s.title) for s in gpu_alarms(SETTINGS)},  # type: ignore[misc]
)
LOW_POWER_DESCRIPTION = low_power_alarm(SETTINGS).description


class Keep:
    def __init__(self) -> None:
        self.documents: list[dict[str, Any]] = []

    def send(self, documents: Any) -> None:
        self.documents.extend(documents)


def _exporter() -> Exporter:
    return Exporter(
        NvmlSource(FakeNvml(trace_lines(), clock=Clock(16))),
        BufferedSender(Keep()),
        ExporterConfig(cluster_name="train", node_name=NODE),
    )


def _payload(messages: list[str], times_ms: list[int]) -> dict[str, Any]:
    return {
        "logStream": NODE,
        "logEvents": [
            {"id": str(i), "timestamp": t, "message": m}
            for i, (m, t) in enumerate(zip(messages, times_ms, strict=True))
        ],
    }


def low_power_incident() -> Incident:
    incident = from_alarm_event(low_power_contributor(LOW_POWER_DESCRIPTION), DEPLOYMENT)
    assert isinstance(incident, Incident)
    return incident


def fatal_xid_incident() -> Incident:
    """XID 79 (fallen off the bus) on GPU 3, as the exporter writes it, with the pod on it."""
    exporter = _exporter()
    t0 = 1_772_460_000.0  # 2026-03-02 14:00:00 UTC
    documents = [
        exporter.xid_document(XidEvent(gpu_index=3, code=79, time=t0 + i), ["7f1c2d3e-pod-a"])
        for i in range(3)
    ]
    payload = _payload([json.dumps(d) for d in documents], [int((t0 + i) * 1000) for i in range(3)])
    (group,) = group_xids(parse_log_events(payload, cluster="train").notices)
    return from_xid_group(group, DEPLOYMENT)


def test_a_low_power_contributor_names_its_gpu_threshold_value_and_links() -> None:
    incident = low_power_incident()
    assert incident.severity == "warning"
    assert incident.kind == "gpu-low-power"  # the shard suffix is not part of the kind
    assert incident.title == f"GPU in use but not working on {NODE} GPU 5"
    assert (incident.cluster, incident.node, incident.gpu) == ("train", NODE, "5")
    assert incident.threshold == "30"
    assert incident.observed == (
        "12.4 (the most recent breach; 12 datapoints were less than the threshold)"
    )
    assert incident.what == (
        f"GPU in use but not working on {NODE} GPU 5: 12 datapoints were less than the "
        "threshold (30)."
    )
    assert incident.action == LOW_POWER_DESCRIPTION
    assert incident.key == (
        "alarm/gpu-insights-train-gpu-low-power-shard-3/6d442278dba546f6/"
        "2026-03-02T14:05:12.345+0000"
    )
    assert incident.alarm_url == (
        "https://us-east-1.console.aws.amazon.com/cloudwatch/home?region=us-east-1"
        "#alarmsV2:alarm/gpu-insights-train-gpu-low-power-shard-3"
    )
    assert incident.dashboard_url is not None
    assert incident.dashboard_url.endswith(
        "#dashboards/dashboard/gpu-insights-train-gpu-node?var-node=ip-10-0-12-34.ec2.internal"
    )
    text = render_text(incident)
    print(text)
    assert text.splitlines()[0] == f"[WARNING] GPU in use but not working on {NODE} GPU 5"
    for line in ("Node:          " + NODE, "GPU:           5", "Threshold:     30"):
        assert line in text


def test_a_fatal_xid_is_critical_with_its_pod_count_and_what_to_do() -> None:
    incident = fatal_xid_incident()
    text = render_text(incident)
    print(text)
    assert incident.severity == "critical"
    assert subject(incident) == f"[CRITICAL] XID 79 on {NODE} GPU 3"
    assert "Pods:          7f1c2d3e-pod-a (pod UID)" in text
    assert "XID:           79 (fatal)" in text
    seen = "3 times between 2026-03-02 14:00:00 UTC and 2026-03-02 14:00:02 UTC"
    assert f"Seen:          {seen}" in text
    assert "Cordon and drain the node" in text
    assert incident.key == f"xid/train/{NODE}/3/79/1772460000000"


def _xid_79_group(pods_seen_at: list[float | None]) -> XidGroup:
    """XID 79 on GPU 3 once per entry, each naming worker-2 by UID: read from NVML at the XID
    (None), or remembered from the last cycle that could read them, at that time."""
    exporter = _exporter()
    t0 = 1_772_460_000.0  # 2026-03-02 14:00:00 UTC
    documents = [
        exporter.xid_document(
            XidEvent(gpu_index=3, code=79, time=t0 + i, source="lost"),
            ["7f1c2d3e-pod-a"],
            pods_seen_at=seen,
        )
        for i, seen in enumerate(pods_seen_at)
    ]
    times = [int((t0 + i) * 1000) for i in range(len(documents))]
    payload = _payload([json.dumps(d) for d in documents], times)
    (group,) = group_xids(parse_log_events(payload, cluster="train").notices)
    return group


def test_a_lost_gpus_xid_names_its_pods_as_last_seen_on_it_with_the_time() -> None:
    """A GPU fallen off the bus cannot say what runs on it: the exporter sends the pods it
    last read, and when, and the page says so. Before: no Pods row on an XID 79 page."""
    group = _xid_79_group([1_772_459_990.0, 1_772_459_990.0])  # 13:59:50, ten seconds before
    text = render_text(from_xid_group(group, DEPLOYMENT))
    print(text)
    assert (
        "Pods:          7f1c2d3e-pod-a (pod UID) (last seen on this GPU at 2026-03-02 13:59:50 UTC)"
    ) in text


def test_pods_read_at_the_xid_are_not_called_last_seen() -> None:
    text = render_text(from_xid_group(_xid_79_group([1_772_459_990.0, None]), DEPLOYMENT))
    assert "Pods:          7f1c2d3e-pod-a (pod UID)\n" in text
    assert "last seen" not in text


def test_a_storm_of_500_identical_xids_is_one_incident_with_a_count() -> None:
    line = json.dumps({"message": "NVRM: Xid (PCI:0000:53:00): 13, Graphics SM Warp Exception"})
    t0 = 1_772_460_000_000
    payload = _payload([line] * 500, [t0 + 10 * i for i in range(500)])
    groups = group_xids(parse_log_events(payload, cluster="train").notices)
    assert [(g.first.code, g.count) for g in groups] == [(13, 500)]
    incident = from_xid_group(groups[0], DEPLOYMENT)
    assert incident.severity == "warning"
    assert "500 times between" in render_text(incident)


def test_xids_group_per_node_gpu_code_and_window() -> None:
    line = "NVRM: Xid (PCI:0000:{bus}:00): {code}, something"
    t0 = 1_772_460_000_000  # a window boundary
    window = GROUP_WINDOW_S * 1000
    rows = [
        ("53", 13, t0),
        ("53", 13, t0 + window - 1),  # same window
        ("53", 13, t0 + window),  # the next window
        ("54", 13, t0),  # another GPU
        ("53", 31, t0),  # another code
    ]
    payload = _payload(
        [json.dumps({"message": line.format(bus=b, code=c)}) for b, c, _ in rows],
        [t for _, _, t in rows],
    )
    groups = group_xids(parse_log_events(payload, cluster="train").notices)
    assert sorted((g.first.gpu, g.first.code, g.window_start_ms - t0, g.count) for g in groups) == [
        ("PCI 0000:53:00", 13, 0, 2),
        ("PCI 0000:53:00", 13, window, 1),
        ("PCI 0000:53:00", 31, 0, 1),
        ("PCI 0000:54:00", 13, 0, 1),
    ]
    assert len({g.key for g in groups}) == 4


@pytest.mark.parametrize("make", [low_power_incident, fatal_xid_incident])
def test_every_message_is_a_valid_custom_notification_and_plain_text_for_email(make: Any) -> None:
    incident = make()
    chatbot = render_chatbot(incident)
    jsonschema.validate(chatbot, SCHEMA)
    arguments = publish_arguments(incident, "arn:aws:sns:us-east-1:123456789012:t")
    assert arguments["MessageStructure"] == "json"
    message = json.loads(arguments["Message"])
    assert message["default"] == message["email"] == render_text(incident)
    assert json.loads(message["https"]) == chatbot
    assert chatbot["metadata"]["threadId"] == incident.key
    assert len(arguments["Subject"]) < 100
    assert arguments["Subject"].isascii()


def test_the_schema_refuses_what_amazon_q_developer_would_not_render() -> None:
    valid = render_chatbot(low_power_incident())
    for broken in (
        {**valid, "version": "2.0"},
        {**valid, "source": "aws.cloudwatch"},
        {**valid, "content": {"title": "no description"}},
        {**valid, "content": {**valid["content"], "textType": "html"}},
        {**valid, "metadata": {**valid["metadata"], "thread": "misspelt"}},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, SCHEMA)


def test_only_a_gpu_going_into_alarm_is_an_incident() -> None:
    contributor = low_power_contributor(LOW_POWER_DESCRIPTION)
    skipped = [
        alarm_level(contributor),  # its contributors carry the GPUs
        low_power_contributor(LOW_POWER_DESCRIPTION, state="OK"),
        SINGLE_METRIC,  # another app's alarm
    ]
    xid_alarm = alarm_level(contributor)
    xid_alarm["detail"]["alarmName"] = "gpu-insights-train-gpu-xid-fatal"
    skipped.append(xid_alarm)
    reasons = [from_alarm_event(e, DEPLOYMENT) for e in skipped]
    assert all(isinstance(r, Skipped) for r in reasons), reasons
    with pytest.raises(AlarmEventError, match="detail-type"):
        from_alarm_event({**contributor, "detail-type": "Scheduled Event"}, DEPLOYMENT)


def test_a_single_series_alarm_reads_threshold_and_value_from_reason_data() -> None:
    event = json.loads(json.dumps(SINGLE_METRIC))
    event["detail"]["alarmName"] = "gpu-insights-train-gpu-lost"
    incident = from_alarm_event(event, DEPLOYMENT)
    assert isinstance(incident, Incident)
    assert incident.severity == "critical"
    assert (incident.threshold, incident.observed) == (
        "50",
        "99.5016 (1 of the last 1 datapoints were greater than the threshold)",
    )
    assert incident.dashboard_url is None  # no node to pick


def test_the_dashboard_link_picks_the_node_in_the_deployed_dashboards_variable() -> None:
    body = gpu_node("train", "us-east-1")
    (variable,) = body["variables"]
    assert variable["type"] == "pattern"  # it rewrites the node inside the queries
    url = gpu_dashboard_url("eu-west-1", "gpu-insights-train-gpu-node", "ip-10-0-1-2 a/b")
    assert unquote(url.rsplit(f"var-{variable['id']}=", 1)[1]) == "ip-10-0-1-2 a/b"
    assert url == node_dashboard_url("eu-west-1", "train", "ip-10-0-1-2 a/b")
    assert url.startswith(
        "https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1#"
    )


def test_aws_documented_contributor_event_reads_as_cloudwatch_wrote_it() -> None:
    """AWS's own "Alarm Contributor Example" (User Guide, "Alarm events and EventBridge",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html,
    quoted verbatim in events.py): a contributor's reason names how many datapoints crossed
    and the most recent one, not "M out of the last N datapoints [...]"; it has no
    previousState and no reasonData. Verbatim it is another app's alarm, so no page."""
    detail = AWS_CONTRIBUTOR_EXAMPLE["detail"]
    assert "previousState" not in detail
    assert "reasonData" not in detail["state"]
    assert read_reason(detail["state"]["reason"]) == Crossing(
        hits=1, of=None, comparison="less than", threshold="1", values=("0",)
    )
    skipped = from_alarm_event(AWS_CONTRIBUTOR_EXAMPLE, DEPLOYMENT)
    assert isinstance(skipped, Skipped)
    assert "not an alarm of cluster train" in skipped.reason


def test_aws_documented_contributor_event_of_a_gpu_alarm_names_cluster_node_and_gpu() -> None:
    """The same example with what our alarm sets (its name, the GROUP BY attributes, the
    query) in place of the DynamoDB alarm's; every other field, the reason included, is
    AWS's verbatim."""
    event = as_gpu_contributor(
        AWS_CONTRIBUTOR_EXAMPLE,
        "gpu-insights-train-gpu-low-power-shard-3",
        {"ClusterName": "train", "NodeName": NODE, "GpuIndex": "5"},
        LOW_POWER_QUERY,
    )
    incident = from_alarm_event(event, DEPLOYMENT)
    assert isinstance(incident, Incident)
    assert (incident.cluster, incident.node, incident.gpu) == ("train", NODE, "5")
    assert incident.title == f"GPU in use but not working on {NODE} GPU 5"
    assert (incident.threshold, incident.observed) == (
        "1",
        "0 (the most recent breach; 1 datapoint was less than the threshold)",
    )
    assert incident.what == (
        f"GPU in use but not working on {NODE} GPU 5: 1 datapoint was less than the threshold (1)."
    )
    assert incident.key == (
        "alarm/gpu-insights-train-gpu-low-power-shard-3/6d442278dba546f6/"
        "2025-12-01T13:42:04.919+0000"
    )
    text = render_text(incident)
    for line in ("Cluster:       train", f"Node:          {NODE}", "GPU:           5"):
        assert line in text, text
    # The alarm's own state change ("6 out of 6 time series evaluated to ALARM") is no
    # second page: each GPU comes as its contributor event.
    alarm = alarm_level(event)
    alarm["detail"]["state"]["reason"] = "6 out of 6 time series evaluated to ALARM"
    assert isinstance(from_alarm_event(alarm, DEPLOYMENT), Skipped)


OTEL = AlarmSettings(cluster_name="train", promql=True, gpu_instance_type="p5.48xlarge")
PROMQL_LOW_POWER, _ = promql_alarms(OTEL)  # the low-power alarm and its fleet count
OTEL_DEPLOYMENT = replace(
    DEPLOYMENT,
    alarm_kinds={s.kind: (str(s.severity), s.title) for s in deployed_alarms(OTEL)},  # type: ignore[misc]
    promql_kinds=frozenset({PROMQL_LOW_POWER.kind}),
)


def test_a_promql_contributor_names_the_gpu_node_and_pod_from_its_series_labels() -> None:
    """OTel mode's low-power PromQL alarm: its contributor's attributes are the series'
    labels, so the page names the GPU, its node and the pod that holds it, with no pod lookup
    in the exporter's log."""
    event = as_promql_contributor(
        AWS_CONTRIBUTOR_EXAMPLE, "gpu-insights-train-gpu-low-power", PROMQL_LOW_POWER.description
    )
    incident = from_alarm_event(event, OTEL_DEPLOYMENT)
    assert isinstance(incident, Incident)
    assert (incident.cluster, incident.node, incident.gpu) == ("train", NODE, "5")
    assert incident.pods == ("nlp/bert-data-bound-worker-0",)
    assert incident.title == f"GPU in use but not working on {NODE} GPU 5"
    assert incident.kind == "gpu-low-power"
    assert incident.severity == "warning"
    assert "210 W" in incident.action  # the description names the threshold in watts
    text = render_text(incident)
    for line in ("Cluster:       train", f"Node:          {NODE}", "GPU:           5"):
        assert line in text, text
    assert "nlp/bert-data-bound-worker-0" in text
    # Its return to OK is no page.
    event["detail"]["state"]["value"] = "OK"
    assert isinstance(from_alarm_event(event, OTEL_DEPLOYMENT), Skipped)


def test_otel_modes_silent_node_contributor_names_the_node_from_its_labels() -> None:
    """With the exporter's OTLP sink gpu-silent is a PromQL alarm whose series is the node's
    (its cluster and node labels), not a GPU's: the page names the node."""
    otlp = AlarmSettings(cluster_name="train", promql=True, otlp=True, jobs=None)
    (silent,) = [s for s in promql_alarms(otlp) if s.key == "gpu-silent"]
    deployment = replace(
        DEPLOYMENT,
        alarm_kinds={s.kind: (str(s.severity), s.title) for s in deployed_alarms(otlp)},  # type: ignore[misc]
        promql_kinds=frozenset(s.kind for s in promql_alarms(otlp)),
    )
    event = as_promql_contributor(
        AWS_CONTRIBUTOR_EXAMPLE, "gpu-insights-train-gpu-silent", silent.description
    )
    event["detail"]["alarmContributor"]["attributes"] = {
        DCGM_LABELS.cluster: "train",
        DCGM_LABELS.node: NODE,
    }
    incident = from_alarm_event(event, deployment)
    assert isinstance(incident, Incident)
    assert incident.title == f"GPU not reporting on {NODE}"
    assert (incident.cluster, incident.node, incident.severity) == ("train", NODE, "critical")
    assert incident.gpu == "not named (some of the node's GPUs)"
    assert "Kube State Metrics" in incident.action


def test_a_promql_alarms_own_state_change_is_no_second_page() -> None:
    """Every series a PromQL alarm returns is a contributor with its own event; the alarm's
    own ALARM would page the same GPU twice, whatever its configuration lists."""
    event = as_promql_contributor(
        AWS_CONTRIBUTOR_EXAMPLE, "gpu-insights-train-gpu-low-power", PROMQL_LOW_POWER.description
    )
    alarm = alarm_level(event)
    skipped = from_alarm_event(alarm, OTEL_DEPLOYMENT)
    assert isinstance(skipped, Skipped)
    assert "contributor event" in skipped.reason
    # Without knowing the kind is a PromQL alarm's, the event would have paged.
    assert isinstance(
        from_alarm_event(alarm, replace(OTEL_DEPLOYMENT, promql_kinds=frozenset())), Incident
    )


def test_a_silent_node_pages_critical_naming_the_node_and_how_many_gpus() -> None:
    """gpu-silent's contributor event (AWS's example with our alarm's name, attributes and
    query): GpuIndex "all" is a node that sent nothing, its value the GPUs it stands for."""
    (spec,) = [a for a in gpu_alarms(SETTINGS) if a.key == "gpu-silent"]
    assert isinstance(spec.metric, InsightsQuery)
    event = as_gpu_contributor(
        AWS_CONTRIBUTOR_EXAMPLE,
        "gpu-insights-train-gpu-silent",
        {"ClusterName": "train", "NodeName": NODE, "GpuIndex": "all"},
        spec.metric.sql(),
    )
    event["detail"]["state"]["reason"] = (
        "Threshold Crossed: 1 datapoint was greater than or equal to the threshold (1.0). The "
        "most recent datapoint which crossed the threshold: [8.0 (01/12/25 13:35:00)]."
    )
    del event["detail"]["muteDetail"]
    incident = from_alarm_event(event, DEPLOYMENT)
    assert isinstance(incident, Incident)
    assert (incident.severity, incident.kind) == ("critical", "gpu-silent")
    assert incident.title == f"GPU not reporting on {NODE}, all its GPUs"
    assert incident.observed == (
        "8 (the most recent breach; 1 datapoint was greater than or equal to the threshold)"
    )
    # One silent GPU of a node that reports the others is named by its index.
    event["detail"]["alarmContributor"]["attributes"]["GpuIndex"] = "7"
    one = from_alarm_event(event, DEPLOYMENT)
    assert isinstance(one, Incident)
    assert one.title == f"GPU not reporting on {NODE} GPU 7"


def test_a_silence_check_that_stopped_pages_as_a_cluster_wide_alarm() -> None:
    """gpu-silence-check has no contributors: its own ALARM is the incident."""
    heartbeat = silence_check_alarm(SETTINGS)
    deployment = replace(
        DEPLOYMENT,
        alarm_kinds={**DEPLOYMENT.alarm_kinds, heartbeat.kind: ("warning", heartbeat.title)},
    )
    event = alarm_level(_gpu_example("gpu-insights-train-gpu-silence-check"))
    event["detail"]["configuration"]["metrics"] = [{"id": "m1", "metricStat": {}}]
    incident = from_alarm_event(event, deployment)
    assert isinstance(incident, Incident)
    assert (incident.severity, incident.kind) == ("warning", "gpu-silence-check")
    assert incident.title.startswith("Silence check not running")


def _gpu_example(name: str = "gpu-insights-train-gpu-low-power-shard-3") -> dict[str, Any]:
    return as_gpu_contributor(
        AWS_CONTRIBUTOR_EXAMPLE,
        name,
        {"ClusterName": "train", "NodeName": NODE, "GpuIndex": "5"},
        LOW_POWER_QUERY,
    )


def test_a_change_inside_an_alarm_mute_window_is_not_paged() -> None:
    """A mute rule mutes the alarm's actions while it evaluates on; the notifier is the GPU
    alarms' only action. AWS's example carries muteDetail (2026-01-01 10:00 to 12:00)."""
    event = _gpu_example()
    event["detail"]["state"]["timestamp"] = "2026-01-01T11:00:00.000+0000"
    skipped = from_alarm_event(event, DEPLOYMENT)
    assert isinstance(skipped, Skipped)
    assert "muted by arn:aws:cloudwatch:us-east-1:1234567890:alarm-mute-rule:testMute" in (
        skipped.reason
    )
    event["detail"]["state"]["timestamp"] = "2026-01-01T12:00:01.000+0000"
    assert isinstance(from_alarm_event(event, DEPLOYMENT), Incident)


def test_another_clusters_alarm_that_shares_the_prefix_is_not_paged() -> None:
    """The rule matches names by prefix: cluster train-eu's gpu-insights-train-eu-gpu-lost
    starts with cluster train's prefix, and so does train-gpu-lost's
    gpu-insights-train-gpu-lost-gpu-lost."""
    for name in ("gpu-insights-train-eu-gpu-lost", "gpu-insights-train-gpu-lost-gpu-lost"):
        skipped = from_alarm_event(_gpu_example(name), DEPLOYMENT)
        assert isinstance(skipped, Skipped), name
        assert "no alarm of this deployment" in skipped.reason


def test_a_malformed_configuration_is_the_projects_error() -> None:
    event = _gpu_example()
    event["detail"]["configuration"] = "x"
    with pytest.raises(AlarmEventError, match="configuration"):
        from_alarm_event(event, DEPLOYMENT)


def _documents_delivered_late(delay_s: float) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """XID 79 three times, as the exporter writes it, in a log batch that reached CloudWatch
    Logs ``delay_s`` later (the agent retried it): the events' timestamps are the later ones."""
    exporter = _exporter()
    t0 = 1_772_460_000.0  # 2026-03-02 14:00:00 UTC
    documents = [
        exporter.xid_document(XidEvent(gpu_index=3, code=79, time=t0 + i), ["7f1c2d3e-pod-a"])
        for i in range(3)
    ]
    late = [int((t0 + delay_s + i) * 1000) for i in range(3)]
    return documents, _payload([json.dumps(d) for d in documents], late)


def test_an_exporter_xid_is_dated_by_its_documents_timestamp_not_its_log_event() -> None:
    # The EMF specification's _aws.Timestamp: "the time stamp used for metrics extracted from
    # the event ... milliseconds after Jan 1, 1970 00:00:00 UTC" (CloudWatch User Guide,
    # "Specification: Embedded metric format"; ../shared/reference/cloudwatch-emf.schema.json).
    documents, payload = _documents_delivered_late(3600.0)
    assert [d["_aws"]["Timestamp"] for d in documents] == [
        1_772_460_000_000,
        1_772_460_001_000,
        1_772_460_002_000,
    ]
    (group,) = group_xids(parse_log_events(payload, cluster="train").notices)
    text = render_text(from_xid_group(group, DEPLOYMENT))
    seen = "3 times between 2026-03-02 14:00:00 UTC and 2026-03-02 14:00:02 UTC"
    assert f"Seen:          {seen}" in text
    # The incident's window is the GPU's: a late batch of the same XIDs is the same incident.
    assert group.key == f"xid/train/{NODE}/3/79/1772460000000"


@pytest.mark.parametrize("stamp", [None, "1772460000000", True, -5, float("nan")])
def test_without_a_readable_document_timestamp_the_log_events_stands(stamp: Any) -> None:
    documents, _ = _documents_delivered_late(0.0)
    document = dict(documents[0], _aws=dict(documents[0]["_aws"]))
    if stamp is None:
        del document["_aws"]["Timestamp"]
    else:
        document["_aws"]["Timestamp"] = stamp
    at = 1_772_463_600_000  # 15:00:00
    (notice,) = parse_log_events(_payload([json.dumps(document)], [at]), cluster="train").notices
    assert notice.time_ms == at


def test_a_fleet_count_alarm_pages_how_many_breach_and_where_to_look() -> None:
    """gpu-low-power-at-cap reads the kind's GROUP BY query (returnData false) and watches the
    count (returnData true): its own ALARM is the page, with the count CloudWatch wrote in
    its reason (newest datapoint first) and where to look. Before, the GROUP BY in the query
    it reads made it "each GPU comes as its own contributor event", and 412 idle GPUs past
    the 100-contributor cap paged nobody."""
    (spec,) = [s for s in gpu_alarms(SETTINGS) if s.key == "gpu-low-power-at-cap"]
    metric = spec.metric
    assert isinstance(metric, BreachCount)
    event = alarm_level(_gpu_example("gpu-insights-train-gpu-low-power-at-cap"))
    points = ", ".join(f"{412 - i}.0 (02/03/26 {14 - i // 12:02d}:{55 - 5 * (i % 12):02d}:00)"
                       for i in range(12))  # fmt: skip
    event["detail"]["state"] = {
        "value": "ALARM",
        "reason": f"Threshold Crossed: 12 out of the last 12 datapoints [{points}] was greater "
        "than or equal to the threshold (90.0) (minimum 12 datapoints for OK -> ALARM "
        "transition).",
        "timestamp": "2026-03-02T14:05:12.345+0000",
    }
    event["detail"]["configuration"] = {
        "description": spec.description,
        "metrics": [
            {"id": "q1", "expression": metric.query.sql(), "period": 300, "returnData": False},
            {"id": "e1", "expression": metric.expression("q1"), "returnData": True},
        ],
    }
    incident = from_alarm_event(event, DEPLOYMENT)
    assert isinstance(incident, Incident)
    assert (incident.severity, incident.kind) == ("warning", "gpu-low-power-at-cap")
    assert incident.title == "90+ at once: GPU in use but not working"
    assert incident.what.startswith("412 series breach gpu-low-power at once (12 of the last 12")
    assert "gpu-insights status" in incident.action
    assert "gpu-insights-train-gpu-low-power alarm's contributors" in incident.action
    # The kind's own alarm still comes contributor by contributor, not as a second page.
    assert isinstance(from_alarm_event(alarm_level(_gpu_example()), DEPLOYMENT), Skipped)
