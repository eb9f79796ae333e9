"""A serving alarm's page (cdk/alarms/serving_promql.py): the contributor's labels name the
model, its Deployment and namespace, and for a replica alarm the pod and node."""

from cdk.alarms.catalog import AlarmSettings, deployed_alarms, promql_alarms
from cdk.alarms.serving_promql import ServingAlarmSettings
from lambdas.notifier.incidents import Deployment, from_alarm_event
from lambdas.notifier.notification import Incident, render_text
from lambdas.notifier.serving import Replica, model_deployment, read_replicas, with_replicas
from lambdas.shared.dcgm import CLOUDWATCH
from lambdas.shared.promql import Series
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


class _Answering:
    """A PromQL client that answers one query with ``series`` and records what it was asked."""

    def __init__(self, series: list[Series]) -> None:
        self.series = series
        self.asked: list[tuple[str, float]] = []

    def query(self, query: str, at: float) -> list[Series]:
        self.asked.append((query, at))
        return self.series


def _replica(pod: str, node: str, gpu: str) -> Series:
    return Series({CLOUDWATCH.pod: pod, CLOUDWATCH.node: node, CLOUDWATCH.gpu: gpu})


def test_a_model_page_is_told_its_replicas_nodes_and_gpus_by_number() -> None:
    page = _page("serving-ttft-p99", MODEL)
    assert model_deployment(page) == ("serving", "llama-vllm")
    node = "ip-10-0-1-1.ec2.internal"
    client = _Answering([_replica(f"llama-vllm-{g}", node, str(g)) for g in (10, 2, 9)])
    replicas = read_replicas(client, "serve", "serving", "llama-vllm", 1_800_000_000.0)  # type: ignore[arg-type]
    ((query, at),) = client.asked
    assert at == 1_800_000_000.0
    assert query == (
        'count by ("@resource.k8s.pod.name", "@resource.k8s.node.name", gpu) '
        '(last_over_time({__name__="DCGM_FI_DEV_GPU_UTIL", "@resource.k8s.cluster.name"="serve", '
        '"@resource.k8s.namespace.name"="serving", "@resource.k8s.deployment.name"="llama-vllm"}'
        "[5m]))"
    )
    told = with_replicas(page, replicas, "serving")
    assert told.pods == ("serving/llama-vllm-2", "serving/llama-vllm-9", "serving/llama-vllm-10")
    assert told.node == node
    assert told.gpu == f"{node} GPU 2, {node} GPU 9, {node} GPU 10"
    assert ("Replicas", "3") in told.rows()


def test_many_replicas_are_counted_and_an_unread_or_empty_read_is_said() -> None:
    page = _page("serving-errors", MODEL)
    many = [Replica(f"p{i}", f"n{i}", "0") for i in range(12)]
    told = with_replicas(page, many, "serving")
    assert told.node == "n0, n1, n2, n3, n4 and 7 more (12 nodes)"
    assert told.gpu.endswith("and 7 more (12 GPUs)")
    assert ("Replicas", "12") in told.rows()
    unread = with_replicas(page, None, "serving")
    assert ("Replicas", "not read (DCGM's series could not be queried)") in unread.rows()
    assert unread.gpu == "not named (a model's series)"
    assert ("Replicas", "none held a GPU in the last 5 minutes") in with_replicas(
        page, [], "serving"
    ).rows()


def test_a_replica_page_is_not_looked_up_again() -> None:
    replica = {**MODEL, CLOUDWATCH.pod: "llama-vllm-a", CLOUDWATCH.node: "n"}
    assert model_deployment(_page("serving-kv-cache-full", replica)) is None
