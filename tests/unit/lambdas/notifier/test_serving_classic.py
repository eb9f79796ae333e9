"""A Classic serving alarm's page (cdk/alarms/serving_classic.py): a Metrics Insights
contributor whose GROUP BY dimensions (Container Insights' names) name the model, the
Deployment that serves it and the replica's pod."""

from cdk.alarms.catalog import AlarmSettings, deployed_alarms
from cdk.alarms.model import InsightsQuery
from cdk.alarms.serving_promql import ServingAlarmSettings
from lambdas.notifier.incidents import Deployment, from_alarm_event
from lambdas.notifier.notification import Incident, render_text
from tests.unit.lambdas.notifier.events import AWS_CONTRIBUTOR_EXAMPLE, as_gpu_contributor

CLASSIC = AlarmSettings(cluster_name="serve", classic_serving=ServingAlarmSettings())
SPECS = {s.key: s for s in deployed_alarms(CLASSIC)}
DEPLOYMENT = Deployment(
    cluster="serve",
    region="us-east-1",
    gpu_dashboard="gpu-insights-serve-gpu-node",
    alarm_kinds={s.alarm_kind: (s.severity, s.title) for s in deployed_alarms(CLASSIC)},  # type: ignore[misc]
)
REPLICA = {
    "ClusterName": "serve",
    "Namespace": "serving",
    "PodName": "llama-vllm",
    "FullPodName": "llama-vllm-7d9f8c6b5-x2k4p",
    "model_name": "meta-llama/Llama-3.1-8B-Instruct",
}


def _page(key: str, reason: str) -> Incident:
    spec = SPECS[key]
    assert isinstance(spec.metric, InsightsQuery)
    event = as_gpu_contributor(
        AWS_CONTRIBUTOR_EXAMPLE, f"gpu-insights-serve-{key}", REPLICA, spec.metric.sql()
    )
    event["detail"]["configuration"]["description"] = spec.description
    event["detail"]["state"]["reason"] = reason
    incident = from_alarm_event(event, DEPLOYMENT)
    assert isinstance(incident, Incident)
    return incident


def test_a_classic_queue_page_names_the_model_its_deployment_and_the_pod() -> None:
    page = _page(
        "serving-requests-waiting-vllm",
        "Threshold Crossed: 5 datapoints were greater than or equal to the threshold (11.0). "
        "The most recent datapoint which crossed the threshold: [37.0 (01/12/25 13:34:00)].",
    )
    assert (page.kind, page.severity) == ("serving-requests-waiting-vllm", "warning")
    assert page.title == (
        "Requests waiting on a vllm replica for meta-llama/Llama-3.1-8B-Instruct "
        "(serving/llama-vllm) on llama-vllm-7d9f8c6b5-x2k4p"
    )
    assert page.pods == ("llama-vllm-7d9f8c6b5-x2k4p",)
    rows = page.rows()
    assert ("Model", "meta-llama/Llama-3.1-8B-Instruct") in rows
    assert ("Deployment", "serving/llama-vllm") in rows
    text = render_text(page)
    assert "37" in text
    assert "11" in text
    assert "Deployment: serving/llama-vllm" in text


def test_a_classic_preemption_page_names_the_replica() -> None:
    page = _page(
        "serving-kv-cache-full-vllm",
        "Threshold Crossed: 1 datapoint was greater than or equal to the threshold (1.0). "
        "The most recent datapoint which crossed the threshold: [14.0 (01/12/25 13:35:00)].",
    )
    assert page.title.startswith("KV cache full, requests preempted for meta-llama/")
    assert page.title.endswith("on llama-vllm-7d9f8c6b5-x2k4p")
    assert ("Deployment", "serving/llama-vllm") in page.rows()
