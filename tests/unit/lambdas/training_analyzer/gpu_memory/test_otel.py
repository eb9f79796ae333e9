"""The OTel memory reader's queries, held to the realistic model's DCGM series
(tests/realistic/otel.py) and the add-on's fields (contract.metrics ``ADDON_DCGM_FIELDS``)."""

from gpu_insights_agent.contract.metrics import ADDON_DCGM_FIELDS
from lambdas.shared.dcgm import CLOUDWATCH, DCGM_FB_TOTAL, DCGM_FB_USED
from lambdas.training_analyzer.gpu_memory.otel import MemoryQueries
from tests.realistic import otel
from tests.realistic import pods as k8s


def test_the_reader_reads_fields_the_add_on_sends_in_mib() -> None:
    assert {DCGM_FB_USED, DCGM_FB_TOTAL} <= ADDON_DCGM_FIELDS
    assert otel.DCGM_METRIC_UNITS[DCGM_FB_USED] == otel.DCGM_METRIC_UNITS[DCGM_FB_TOTAL] == "MiBy"


def test_it_groups_by_the_pod_and_device_labels_a_held_gpus_series_carries() -> None:
    (pod,) = k8s.job_pods("vision", "resnet", 1)
    labels = otel.dcgm_promql_labels("train", "ip-1", 3, pod, model="NVIDIA H100 80GB HBM3")
    assert (labels[CLOUDWATCH.device], labels[CLOUDWATCH.model]) == (
        "nvidia3",
        "NVIDIA H100 80GB HBM3",
    )
    query = MemoryQueries("train").used("ip-1")
    assert query == (
        'max by ("@resource.k8s.namespace.name", "@resource.k8s.pod.name", gpu, '
        '"@resource.k8s.job.name", "@resource.k8s.deployment.name", '
        '"@resource.k8s.daemonset.name", device, modelName) (max_over_time({__name__='
        '"DCGM_FI_DEV_FB_USED", "@resource.k8s.cluster.name"="train", '
        '"@resource.k8s.node.name"="ip-1", "@resource.k8s.pod.name"!=""}[1h]))'
    )
    assert '"DCGM_FI_DEV_FB_TOTAL"' in MemoryQueries("train").total("ip-1")
