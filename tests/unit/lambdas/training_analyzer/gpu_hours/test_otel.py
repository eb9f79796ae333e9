"""The OTel reader's queries in CloudWatch's own label names, held to the realistic model's
DCGM series (cli/demo/realistic/otel.py: the add-on's pipeline, and CloudWatch's ``@resource.``
naming of resource attributes)."""

from dataclasses import fields

from cli.demo.realistic import otel
from cli.demo.realistic import pods as k8s
from lambdas.shared.dcgm import CLOUDWATCH, DCGM_POWER, DCGM_UTIL
from lambdas.training_analyzer.gpu_hours.otel import OtelQueries, pod_controller


def test_the_reader_reads_metrics_the_add_on_sends() -> None:
    assert {DCGM_UTIL, DCGM_POWER} <= set(otel.DCGM_METRIC_UNITS)
    assert otel.DCGM_METRIC_UNITS[DCGM_POWER] == "W"


def test_every_label_the_reader_groups_by_is_on_a_held_gpus_series() -> None:
    (pod,) = k8s.job_pods("vision", "resnet", 1)
    labels = otel.dcgm_promql_labels(
        "train", "ip-10-0-2-21.ec2.internal", 3, pod, model="NVIDIA H100 80GB HBM3"
    )
    # Not DCGM's: the exporter's XID code label and the prefix of Kube State Metrics' node labels.
    others = {CLOUDWATCH.xid_code, CLOUDWATCH.node_label_prefix, CLOUDWATCH.pod_label_prefix}
    used = {getattr(CLOUDWATCH, f.name) for f in fields(CLOUDWATCH)} - others
    # A Job's pod: no Deployment or DaemonSet owner (the reader takes the first it has).
    assert used - set(labels) == {CLOUDWATCH.deployment, CLOUDWATCH.daemonset}
    assert labels[CLOUDWATCH.pod] == pod.name
    assert labels[CLOUDWATCH.node] == "ip-10-0-2-21.ec2.internal"
    assert labels[CLOUDWATCH.gpu] == "3"
    assert labels[CLOUDWATCH.job] == "resnet"
    # A GPU no pod holds: no pod labels, so the pod queries' ``pod!=""`` leaves it out.
    assert CLOUDWATCH.pod not in otel.dcgm_promql_labels("train", "n", 0)


def test_queries_quote_cloudwatchs_label_names_and_select_by_name() -> None:
    """ "A metric name that contains dots must be quoted", and label names alike (PromQL 3);
    ``{__name__="..."}`` selects by name ("PromQL querying", CloudWatch-PromQL-Querying.html)."""
    queries = OtelQueries("train")
    assert queries.gpu_samples("ip-1") == (
        'sum by (gpu) (count_over_time({__name__="DCGM_FI_DEV_GPU_UTIL", '
        '"@resource.k8s.cluster.name"="train", "@resource.k8s.node.name"="ip-1"}[1h]))'
    )
    assert queries.pod_samples("ip-1").startswith(
        'sum by ("@resource.k8s.namespace.name", "@resource.k8s.pod.name", gpu, '
        '"@resource.k8s.job.name", "@resource.k8s.deployment.name", '
        '"@resource.k8s.daemonset.name", '
        '"@resource.k8s.pod.label.serving.kserve.io/inferenceservice", '
    )
    assert '"@resource.k8s.pod.name"!=""' in queries.pod_samples("ip-1")
    assert OtelQueries('a"b').nodes().count('\\"') == 1


def _cloudwatch(pod: str, deployment: str | None, pod_labels: dict[str, str]) -> dict[str, str]:
    """A DCGM series' labels as CloudWatch gives them: owner attributes and every pod label
    under ``@resource.k8s.pod.label.`` (the add-on's ``k8sattributes/cw_k8s_ci_v0_pod``)."""
    found = {CLOUDWATCH.pod: pod, CLOUDWATCH.namespace: "serving"}
    if deployment:
        found[CLOUDWATCH.deployment] = deployment
    found.update({CLOUDWATCH.pod_label_prefix + k: v for k, v in pod_labels.items()})
    return found


def test_the_reader_groups_by_the_serving_controllers_pod_labels() -> None:
    query = OtelQueries("train").pod_samples("ip-1")
    assert '"@resource.k8s.pod.label.serving.kserve.io/inferenceservice"' in query
    assert '"@resource.k8s.pod.label.ray.io/originated-from-cr-name"' in query


def test_a_serving_pods_controller_is_read_from_its_labels_as_cloudwatch_names_them() -> None:
    # KServe raw mode: Deployment <isvc>-predictor, its pods labelled with the InferenceService
    # (kserve pkg/constants InferenceServicePodLabelKey, RawDeploymentAppLabel).
    kserve = _cloudwatch(
        "llama-predictor-7c9b4d6f8-x2v9k",
        "llama-predictor",
        {
            "serving.kserve.io/inferenceservice": "llama",
            "component": "predictor",
            "app": "isvc.llama-predictor",
        },
    )
    assert pod_controller(kserve, CLOUDWATCH) == ("InferenceService", "llama")
    # KubeRay's RayService: no Deployment; the pods of its RayCluster name it.
    ray = _cloudwatch(
        "chat-raycluster-x2v9k-head-ml4pw",
        None,
        {
            "ray.io/originated-from-crd": "RayService",
            "ray.io/originated-from-cr-name": "chat",
            "ray.io/cluster": "chat-raycluster-x2v9k",
            "ray.io/node-type": "head",
        },
    )
    assert pod_controller(ray, CLOUDWATCH) == ("RayService", "chat")
    plain = _cloudwatch("llm-api-7c9b4d6f8-q8hzt", "llm-api", {"app": "llm-api"})
    assert pod_controller(plain, CLOUDWATCH) == ("Deployment", "llm-api")
    (job_pod,) = k8s.job_pods("vision", "resnet", 1)
    labels = otel.dcgm_promql_labels("train", "n", 0, job_pod, model="NVIDIA H100 80GB HBM3")
    assert pod_controller(labels, CLOUDWATCH) is None
