"""The OTel reader's queries in CloudWatch's own label names, held to the realistic model's
DCGM series (cli/demo/realistic/otel.py: the add-on's pipeline, and CloudWatch's ``@resource.``
naming of resource attributes)."""

from dataclasses import fields

from cli.demo.realistic import otel
from cli.demo.realistic import pods as k8s
from lambdas.shared.dcgm import CLOUDWATCH, DCGM_POWER, DCGM_UTIL
from lambdas.training_analyzer.gpu_hours.otel import OtelQueries


def test_the_reader_reads_metrics_the_add_on_sends() -> None:
    assert {DCGM_UTIL, DCGM_POWER} <= set(otel.DCGM_METRIC_UNITS)
    assert otel.DCGM_METRIC_UNITS[DCGM_POWER] == "W"


def test_every_label_the_reader_groups_by_is_on_a_held_gpus_series() -> None:
    (pod,) = k8s.job_pods("vision", "resnet", 1)
    labels = otel.dcgm_promql_labels(
        "train", "ip-10-0-2-21.ec2.internal", 3, pod, model="NVIDIA H100 80GB HBM3"
    )
    # Not DCGM's: the exporter's XID code label and the prefix of Kube State Metrics' node labels.
    others = {CLOUDWATCH.xid_code, CLOUDWATCH.node_label_prefix}
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
        '"@resource.k8s.daemonset.name") (count_over_time({__name__="DCGM_FI_DEV_GPU_UTIL", '
    )
    assert '"@resource.k8s.pod.name"!=""' in queries.pod_samples("ip-1")
    assert OtelQueries('a"b').nodes().count('\\"') == 1
