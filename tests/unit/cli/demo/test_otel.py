"""What the OTel demo's Prometheus holds of the replayed node: the DCGM series the add-on sends
in OTel mode (cli/demo/realistic/otel.py), drawn from the EMF the node's exporter wrote."""

import json
from pathlib import Path

from cli.demo.exporter import NODE, REPLAY_PODS
from cli.demo.otel import replay_samples
from cli.demo.realistic import otel
from gpu_insights_agent.contract.metrics import DIM_GPU_INDEX, DIM_NODE, GpuMetric

CLUSTER = "train"
#: A cycle on a whole minute: the scrape (every 60 s, 15 s into the minute) lands 15 s later.
CYCLE_MS = 1_800_000_000_000


def _document(node: str, gpu: int, **readings: float) -> str:
    return json.dumps(
        {"_aws": {"Timestamp": CYCLE_MS}, DIM_NODE: node, DIM_GPU_INDEX: str(gpu), **readings}
    )


def test_the_replayed_node_sends_dcgms_readings_in_dcgms_units(tmp_path: Path) -> None:
    """Each GPU's utilization and power, and its framebuffer memory (in MiB, "MiBy" in the
    add-on's ``transform/cw_k8s_ci_v0_set_unit``) and temperature, the readings Classic's
    node_gpu_* carry, labelled with the pod; another node's line and a lost GPU's (no power
    reading) send nothing."""
    emf = tmp_path / "emf.jsonl"
    readings = {
        str(GpuMetric.POWER_DRAW): 84.0,
        str(GpuMetric.UTILIZATION): 2.0,
        str(GpuMetric.MEMORY_USED): 2 * 2**30,
        str(GpuMetric.TEMPERATURE): 34.0,
        str(GpuMetric.SM_ACTIVE): 1.0,  # profiling: not among the add-on's DCGM fields
    }
    lost = {str(GpuMetric.HEALTHY): 0.0}
    lines = [_document(NODE, 1, **readings), _document("other", 1, **readings)]
    lines.append(_document(NODE, 3, **lost))
    emf.write_text("\n".join(lines) + "\n")
    labels = otel.dcgm_promql_labels(CLUSTER, NODE, 1, REPLAY_PODS[1])
    at = CYCLE_MS / 1000 + 15
    assert list(replay_samples(CLUSTER, emf)) == [
        ("DCGM_FI_DEV_GPU_UTIL", labels, at, 2.0),
        ("DCGM_FI_DEV_POWER_USAGE", labels, at, 84.0),
        ("DCGM_FI_DEV_FB_USED", labels, at, 2048.0),
        ("DCGM_FI_DEV_GPU_TEMP", labels, at, 34.0),
    ]
    assert set(otel.DCGM_METRIC_UNITS) >= {name for name, *_ in replay_samples(CLUSTER, emf)}
