"""The OTel demo's alarm stage (cli/demo/otel_alarms.py): the exporters' and the training
emitters' OTLP series, the app's
PromQL alarms replayed on a real Prometheus, each ALARM through the real notifier handler on
moto. Each planted fault pages exactly once, naming its node, GPU and pod, within its alarm's
window; the steady GPUs and nodes page nothing."""

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import pytest
from moto import mock_aws

from cdk.settings import Settings
from cli.demo.command import DEMO_REGION
from cli.demo.exporter import INTERVAL_S, REPLAYED
from cli.demo.jobs import ALARM_JOBS
from cli.demo.notifications import NOTIFICATIONS
from cli.demo.otel_alarms import (
    FAILED_AT_S,
    FAULTS,
    PAGES_FILE,
    PENDING_POD,
    PODS,
    SILENT,
    SILENT_AT_S,
    START,
    STEADY,
    OtelAlarmsDemo,
    otel_alarms_summary,
    run_otel_alarms,
    steady_pages,
    within_s,
)
from cli.demo.realistic.serving import GPU_OF, IDLE_REPLICA, KSERVE, VLLM
from cli.demo.realistic.serving import NODE as SERVING
from cli.demo.storage import DEMO_CLUSTER
from gpu_insights_agent.contract.metrics import OTLP_JOB
from lambdas.shared.aws_clients import new_session
from lambdas.shared.dcgm import CLOUDWATCH as L
from tests.docs_text import README

pytestmark = pytest.mark.promql_engine

MINUTE: Final = 60
#: Each fault's page, minutes after the fault: the low-power window's 60 minutes less the
#: 5-minute range the first breach fills; XIDs from the log line 5 s after it; the ECC count
#: and the lost GPU at the first evaluation that reads them; the throttling's and the power
#: brake's 30-minute window; the silent node's 10-minute range and 5-minute pending period.
PAGED_AFTER_MIN: Final = {
    "idle held GPU": 55,
    "idle replica": 55,
    # The first spike minute's requests lift the 5-minute p99 over 2 s at the next evaluation,
    # then the 5-minute pending period; the pending pod after gpu_pending_alarm_minutes (15).
    "TTFT spike": 6,
    "GPU pod pending": 15,
    "XID 13": 0,
    "thermal throttling": 30,
    "power brake": 30,
    "uncorrectable ECC": 0,
    "XID 48": 0,
    "XID 79": 0,
    "GPU lost": 0,
    "silent node": 15,
    # cli/demo/jobs.py: hung after its 45 minutes of steps, due 10 minutes on; NaN and the
    # spike in their first minute; the slowdown three 5-minute periods on.
    "llama-hangs": 10,
    "gpt-nan": 0,
    "t5-loss-spike": 0,
    "bert-slows": 15,
    # Its fail-slow: three one-minute flushes 10% slower. The hung job's rolling hour under
    # 70% goodput once 18 of its minutes are hung; the steady job's once its 12-minute save
    # and the first 6 minutes of its evaluation (46 minutes after the save began) are in it.
    "bert-slows fail-slow": 3,
    "llama-hangs goodput": 18,
    "resnet-steady goodput": 46,
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the stage writes its files, as ``make demo-otel`` has it write them to out/."""
    return tmp_path_factory.mktemp("out")


@pytest.fixture(scope="module")
def demo(folder: Path) -> Iterator[OtelAlarmsDemo]:
    with mock_aws():
        session = new_session(
            aws_access_key_id="demo", aws_secret_access_key="demo", region_name=DEMO_REGION
        )
        yield run_otel_alarms(session, Settings(cluster_name=DEMO_CLUSTER), DEMO_REGION, folder)


def test_each_planted_fault_pages_once_named_within_its_window(demo: OtelAlarmsDemo) -> None:
    for fault in FAULTS:
        (page,) = demo.pages_for(fault)
        (raised,) = demo.raised(fault)  # one contributor, into ALARM once
        after = page.at - START - fault.at_s
        assert round(after / MINUTE) == PAGED_AFTER_MIN[fault.what], fault.what
        assert 0 <= raised.at - START - fault.at_s <= within_s(fault, demo.alarms), fault.what
        assert (fault.job or fault.node or "") in page.subject, fault.what
        if fault.gpu is not None:
            assert page.subject.endswith(f"GPU {fault.gpu}"), fault.what
    assert len(demo.pages) == len(FAULTS)  # nothing else paged


def test_the_pages_name_the_pod_from_the_exporters_labels(demo: OtelAlarmsDemo) -> None:
    named = {f.what: demo.pages_for(f)[0].pods for f in FAULTS}
    # The idle GPU's pod is named only because its process holds it (the planted fault): the
    # exporter names a pod from a GPU process's cgroup and the kubelet's pod log directory.
    assert named["idle held GPU"] == "speech/whisper-finetune-worker-0"
    assert named["uncorrectable ECC"] == "speech/whisper-finetune-worker-2"
    assert named["XID 13"] == "speech/whisper-finetune-master-0"
    # GPU 4's power brake: the pod of its process, the job's fourth worker.
    assert named["power brake"] == "speech/whisper-finetune-worker-3"
    # Off the bus, the GPU answers no process: the lost GPU's series names no pod, so its page
    # and the XID 79 page name the pod the exporter last saw on it (the ECC fault's), at its
    # last reading before the GPU fell off: the page from the exporter's series (PromQL),
    # the XID's from its log line.
    seen = datetime.fromtimestamp(START + FAILED_AT_S - INTERVAL_S, UTC)
    lost = f"{named['uncorrectable ECC']} (last seen on this GPU at {seen:%Y-%m-%d %H:%M:%S} UTC)"
    assert named["XID 79"] == named["GPU lost"] == lost
    # The silent node's series name the node only: its page names the pods of its eight GPUs
    # at its exporter's last reading, a few by name and the rest counted.
    (silent,) = demo.pages_for(next(f for f in FAULTS if f.what == "silent node"))
    assert set(silent.labels) == {L.cluster, L.node}
    assert silent.labels[L.node] == SILENT.name
    pods = sorted(f"{p.namespace}/{p.name}" for p in PODS[SILENT.name])
    last = datetime.fromtimestamp(START + SILENT_AT_S - INTERVAL_S, UTC)
    assert named["silent node"] == (
        f"{', '.join(pods[:5])} and 3 more (8 pods) (last seen on this node at "
        f"{last:%Y-%m-%d %H:%M:%S} UTC)"
    )
    # A job's page names its ranks' pods, which the notifier reads from their series' labels.
    assert named["gpt-nan"] == "gpt-nan-master-0, gpt-nan-worker-0"


def _page(demo: OtelAlarmsDemo, what: str) -> str:
    (page,) = demo.pages_for(next(f for f in FAULTS if f.what == what))
    return page.text


def _row(text: str, name: str) -> str:
    return next(v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())
                if k.strip() == name)  # fmt: skip


def test_the_serving_faults_name_the_replica_the_model_and_the_pending_pod(
    demo: OtelAlarmsDemo,
) -> None:
    # The idle vLLM replica: its GPU allocated (its process), near-zero power, no requests.
    idle = _page(demo, "idle replica")
    assert _row(idle, "Node") == SERVING.name
    assert _row(idle, "GPU") == "2"
    assert _row(idle, "Pods") == f"inference/{IDLE_REPLICA.name}"
    # The spike: the model's series name its model and Deployment; the notifier reads its
    # replicas, their node and GPUs from DCGM's series at the alarm's time.
    spike = _page(demo, "TTFT spike")
    assert _row(spike, "Model") == "meta-llama/Llama-3.1-8B-Instruct"
    assert _row(spike, "Deployment") == f"inference/{VLLM.deployment}"
    assert _row(spike, "Replicas") == "3"
    assert _row(spike, "Node") == SERVING.name
    assert _row(spike, "GPU") == ", ".join(f"{SERVING.name} GPU {g}" for g in range(3))
    assert _row(spike, "Pods") == ", ".join(
        f"inference/{pod.name}" for pod in sorted(VLLM.pods, key=lambda p: GPU_OF[p])
    )
    # The 8-GPU pod the scheduler cannot place.
    pending = _page(demo, "GPU pod pending")
    assert _row(pending, "Pods") == f"{PENDING_POD.namespace}/{PENDING_POD.name}"
    assert _row(pending, "GPUs requested") == "8"
    assert _row(pending, "Node") == "none: the pod is not scheduled"


def test_the_steady_gpus_and_nodes_page_nothing(demo: OtelAlarmsDemo) -> None:
    assert steady_pages(demo) == []
    steady_job = ALARM_JOBS[0]
    quiet = [
        t
        for alarm, transitions in demo.transitions.items()
        for t in transitions
        if t.labels.get(L.node) == STEADY.name
        # The replayed node's GPUs no pod holds: idle, with no allocated reading.
        or (t.labels.get(L.node) == REPLAYED.name and t.labels.get(L.gpu) in {"5", "6", "7"})
        # Its rolling hour of goodput is a planted page (cli/demo/jobs.py ``also_rolling``).
        or (t.labels.get(OTLP_JOB) == steady_job.name and alarm not in steady_job.due_pages(True))
        or t.labels.get(L.deployment) == KSERVE.deployment
        or (t.labels.get(L.node) == SERVING.name and t.labels.get(L.gpu) != "2")
    ]
    assert quiet == []
    lines = otel_alarms_summary(demo)
    assert not [line for line in lines if "NOT PAGED" in line]
    assert lines[-1].endswith(": 0 pages")


def test_the_readme_states_what_the_stage_prints(demo: OtelAlarmsDemo) -> None:
    readme = " ".join(README.read_text().split())
    after = {f.what: round((demo.pages_for(f)[0].at - START - f.at_s) / MINUTE) for f in FAULTS}
    for phrase in (
        f"replays the app's {len(demo.alarms)} PromQL alarms every minute",
        f"each of the {len(FAULTS)} planted faults pages once",
        f"the hung job {after['llama-hangs']} minutes after its last step",
        f"the slowdown after {after['bert-slows']} minutes",
        f"its fail-slow after {after['bert-slows fail-slow']} minutes",
        f"the hung job's goodput {after['llama-hangs goodput']} minutes after its last step",
        f"the steady job's goodput {after['resnet-steady goodput']} minutes after its "
        "checkpoint save began",
        f"the idle held GPU and the idle vLLM replica {after['idle replica']} minutes in",
        f"time to first token {after['TTFT spike']} minutes in",
        f"the 8-GPU pod pending {after['GPU pod pending']} minutes in",
        f"thermal throttling after {after['thermal throttling']} minutes",
        f"the power brake after {after['power brake']} minutes",
        f"the silent node {after['silent node']} minutes after its exporter stopped",
        f"the steady GPUs, nodes and job page {len(steady_pages(demo))} times",
    ):
        assert phrase in readme, phrase


def test_the_stage_writes_every_pages_message_beside_its_record(
    demo: OtelAlarmsDemo, folder: Path
) -> None:
    """out/otel-alarms.json records each page (alarm, labels, subject); out/notifications.txt
    holds each page's message as the notifier sent it, after the run's own messages."""
    assert demo.files == [folder / PAGES_FILE, folder / NOTIFICATIONS]
    record = json.loads((folder / PAGES_FILE).read_text())
    assert [p["subject"] for p in record] == [p.subject for p in demo.pages]
    text = (folder / NOTIFICATIONS).read_text()
    stage = f"=== The alarm stage (exporter_sink=otlp, {PAGES_FILE}): {len(FAULTS)} pages ==="
    assert stage in text
    for page in demo.pages:
        assert f"--- to the {page.topic} topic ---\n{page.text}" in text
    assert text.count("--- to the ") == len(demo.pages) == len(FAULTS)
