"""A serving alarm's page (cdk/alarms/serving_promql.py): the contributor's labels name the
model, its Deployment and namespace, and for a replica alarm the pod and node."""

from cdk.alarms.catalog import AlarmSettings, deployed_alarms, promql_alarms
from cdk.alarms.serving_promql import ServingAlarmSettings
from lambdas.notifier.incidents import Deployment, from_alarm_event
from lambdas.notifier.notification import Incident, render_text
from lambdas.shared.dcgm import CLOUDWATCH
from tests.unit.lambdas.notifier.events import AWS_CONTRIBUTOR_EXAMPLE, as_promql_contributor

OTEL = AlarmSettings(cluster_name="serve", promql=True, serving=ServingAlarmSettings())
SPECS = {s.key: s for s in promql_alarms(OTEL)}
DEPLOYMENT = Deployment(
    cluster="serve",
    region="us-east-1",
    gpu_dashboard="gpu-insights-serve-gpu-node",
    alarm_kinds={s.kind: (s.severity, s.title) for s in deployed_alarms(OTEL)},  # type: ignore[misc]
    promql_kinds=frozenset(s.kind for s in promql_alarms(OTEL)),
)
MODEL = {
    CLOUDWATCH.cluster: "serve",
    CLOUDWATCH.namespace: "serving",
    CLOUDWATCH.deployment: "llama-vllm",
    "model_name": "meta-llama/Llama-3.1-8B-Instruct",
}


def _page(key: str, attributes: dict[str, str]) -> Incident:
    event = as_promql_contributor(
        AWS_CONTRIBUTOR_EXAMPLE, f"gpu-insights-serve-{key}", SPECS[key].description, attributes
    )
    incident = from_alarm_event(event, DEPLOYMENT)
    assert isinstance(incident, Incident)
    return incident


def test_a_model_slo_page_names_the_model_and_its_deployment() -> None:
    page = _page("serving-ttft-p99", MODEL)
    assert (page.kind, page.severity) == ("serving-ttft-p99", "critical")
    assert page.title == (
        "Time to first token over target for meta-llama/Llama-3.1-8B-Instruct (serving/llama-vllm)"
    )
    rows = page.rows()
    assert ("Model", "meta-llama/Llama-3.1-8B-Instruct") in rows
    assert ("Deployment", "serving/llama-vllm") in rows
    assert ("GPU", "not named (a model's series)") in rows
    assert "Deployment: serving/llama-vllm" in render_text(page)
    assert page.dashboard_url is None  # no node: no node's dashboard


def test_a_replica_page_names_its_pod_and_node() -> None:
    replica = {
        **MODEL,
        CLOUDWATCH.pod: "llama-vllm-5d8f-a",
        CLOUDWATCH.node: "ip-10-0-1-1.ec2.internal",
    }
    page = _page("serving-kv-cache-full", replica)
    assert page.severity == "warning"
    assert page.title.endswith("(serving/llama-vllm) on serving/llama-vllm-5d8f-a")
    assert page.pods == ("serving/llama-vllm-5d8f-a",)
    assert page.node == "ip-10-0-1-1.ec2.internal"


def test_serving_alarms_are_otel_mode_only() -> None:
    classic = AlarmSettings(cluster_name="serve", serving=ServingAlarmSettings())
    assert not any(s.key.startswith("serving-") for s in deployed_alarms(classic))
    assert {k for k in SPECS if k.startswith("serving-")} == {
        "serving-ttft-p99",
        "serving-requests-waiting",
        "serving-kv-cache-full",
        "serving-errors",
        # each kind's fleet count alarm
        "serving-ttft-p99-at-cap",
        "serving-requests-waiting-at-cap",
        "serving-kv-cache-full-at-cap",
        "serving-errors-at-cap",
    }
