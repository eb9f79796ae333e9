"""The OTel memory reader's queries, held to the realistic model's DCGM series
(cli/demo/realistic/otel.py) and the add-on's fields (contract.metrics ``ADDON_DCGM_FIELDS``)."""

import json
import urllib.parse
import urllib.request

from cli.demo.realistic import otel
from cli.demo.realistic import pods as k8s
from gpu_insights_agent.contract.metrics import ADDON_DCGM_FIELDS
from lambdas.shared.dcgm import CLOUDWATCH, DCGM_FB_TOTAL, DCGM_FB_USED, MIB
from lambdas.shared.promql import PromQLClient
from lambdas.training_analyzer.gpu_memory.analysis import Verdict, judge_jobs
from lambdas.training_analyzer.gpu_memory.otel import MemoryQueries, read_gpu_memory_otel


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


def _answering(answers: dict[str, list[dict[str, object]]]) -> PromQLClient:
    """A client whose engine answers each query text with its series (none for another)."""

    def engine(request: urllib.request.Request) -> tuple[int, bytes]:
        body = request.data if isinstance(request.data, bytes) else b""
        query = urllib.parse.parse_qs(body.decode())["query"][0]
        result = answers.get(query, [])
        return 200, json.dumps(
            {"status": "success", "data": {"resultType": "matrix", "result": result}}
        ).encode()

    return PromQLClient(endpoint="http://engine.invalid", region="us-east-1", credentials=None,
                        opener=engine)  # fmt: skip


def test_a_pod_name_on_two_nodes_is_two_gpus_each_with_its_own_capacity() -> None:
    """A StatefulSet's pod rescheduled from a p4d (A100 40GB, 39,000 of 40,960 MiB used) to a
    p4de (A100 80GB): the 40 GB GPU's hours stay near its capacity, not diluted by the 80."""
    start = 1_764_547_200.0  # 2025-12-01 00:00 UTC
    queries = MemoryQueries("train")
    pod = {
        CLOUDWATCH.pod: "train-worker-0",
        CLOUDWATCH.namespace: "nlp",
        CLOUDWATCH.gpu: "0",
        CLOUDWATCH.device: "nvidia0",
    }

    def series(node: str, mib: float, model: str) -> dict[str, object]:
        return {
            "metric": {**pod, CLOUDWATCH.node: node, CLOUDWATCH.model: model},
            "values": [[start + 3600 - 0.001, str(mib)]],
        }

    a100_40, a100_80 = "NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB"
    client = _answering(
        {
            queries.nodes(): [{"metric": {CLOUDWATCH.node: n}, "values": []} for n in "ab"],
            queries.used("a"): [series("a", 39_000, a100_40)],
            queries.total("a"): [series("a", 40_960, a100_40)],
            queries.used("b"): [series("b", 20_000, a100_80)],
            queries.total("b"): [series("b", 81_920, a100_80)],
        }
    )
    gpus = read_gpu_memory_otel(client, "train", start=start, end=start + 3600)
    assert sorted((g.capacity_bytes / MIB, g.hourly_peaks[0] / MIB, g.gpu_name) for g in gpus) == [
        (40_960, 39_000, a100_40),
        (81_920, 20_000, a100_80),
    ]
    (job,) = judge_jobs(gpus, gpu_hour_usd=1.0, window_hours=1)
    assert job.verdict is Verdict.NEAR_CAPACITY  # 39,000 of the smaller GPU's 40,960 MiB
