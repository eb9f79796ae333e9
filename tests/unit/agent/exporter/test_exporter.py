import json
import logging
import threading
import time
from collections import Counter
from typing import Any

import pytest

from gpu_insights_agent.contract.metrics import ALARM_METRICS, alarm_shard
from gpu_insights_agent.emf.document import EmfDocument, encode, parse_emf_line
from gpu_insights_agent.emf.sinks import BufferedSender
from gpu_insights_agent.exporter.device_source import XidEvent
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig, NvmlUnavailableError
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from tests.unit.agent.emf.emf_contract import valid_emf
from tests.unit.agent.exporter.nvml_trace import EPOCH, Clock, trace_lines
from tests.unit.agent.exporter.started import started_exporter


class ListSink:
    def __init__(self) -> None:
        self.documents: list[EmfDocument] = []
        self.received_at: list[float] = []

    def send(self, documents: Any) -> None:
        for document in documents:
            # Every document must survive the trip through EMF text, and be EMF by the spec.
            line = encode(document)
            valid_emf(line)
            self.documents.append(parse_emf_line(line))
            self.received_at.append(time.monotonic())


def _exporter(clock: Clock, **config: Any) -> tuple[Exporter, ListSink]:
    sink = ListSink()
    return started_exporter(clock, sink, **config), sink


def _by_gpu(documents: list[EmfDocument]) -> dict[str, EmfDocument]:
    return {d["GpuIndex"]: d for d in documents if "gpu_healthy" in d}


def test_each_metric_from_the_trace() -> None:
    clock = Clock(0)
    exporter, _ = _exporter(clock)
    first = _by_gpu(exporter.collect_once())
    clock.now = 10
    documents = exporter.collect_once()
    second = _by_gpu(documents)
    gpu0 = second["0"]
    # GPU 0's power brake engages: the zero held back from the first cycle (same alarm period)
    # goes out first, alone and with its own timestamp, per GPU only.
    (held,) = [d for d in documents if "gpu_healthy" not in d]
    assert (held["GpuIndex"], held["gpu_throttled_power"]) == ("0", 0.0)
    assert held["_aws"]["Timestamp"] == int(EPOCH * 1000)
    assert held["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [
        ["ClusterName", "NodeName", "GpuIndex", "Shard"]
    ]
    assert gpu0["gpu_power_draw_watts"] == 630.0
    assert gpu0["gpu_power_limit_watts"] == 700.0
    assert gpu0["gpu_power_utilization"] == pytest.approx(90.0)
    assert gpu0["gpu_utilization"] == 97.0
    assert gpu0["gpu_memory_used_bytes"] == 60 * 2**30
    assert gpu0["gpu_temperature_celsius"] == 71.0
    assert gpu0["gpu_throttled_power"] == 1.0
    # Fault gauges that are zero all hour so far are held back (exporter.fault_gate).
    assert "gpu_throttled_thermal" not in gpu0
    assert gpu0["gpu_ecc_errors_uncorrected"] == 3.0  # 5 since the driver loaded, 2 already seen
    assert "gpu_row_remap_pending" not in gpu0
    assert gpu0["gpu_sm_active"] == 85.0
    assert gpu0["gpu_sm_occupancy"] == 42.0
    assert gpu0["gpu_tensor_active"] == 66.0
    assert gpu0["gpu_healthy"] == 1.0
    assert gpu0["gpu_allocated_power_utilization"] == pytest.approx(90.0)
    assert first["0"]["gpu_power_utilization"] == pytest.approx(50.0)
    assert "gpu_ecc_errors_uncorrected" not in first["0"]
    # GPM needs two samples: the first cycle has no SM metrics, and says nothing false.
    assert "gpu_sm_active" not in first["0"]
    assert first["2"]["gpu_throttled_thermal"] == 1.0
    assert "gpu_throttled_power" not in first["0"]
    # GPU 1 holds 512 MiB and runs no process: idle by design, so no allocated power value.
    assert "gpu_allocated_power_utilization" not in first["1"]
    assert first["1"]["gpu_power_utilization"] == pytest.approx(20.0)


def test_dimensions_and_properties_follow_the_contract() -> None:
    exporter, _ = _exporter(Clock(0))
    gpus = _by_gpu(exporter.collect_once())
    document = gpus["0"]
    directives = document["_aws"]["CloudWatchMetrics"] + gpus["2"]["_aws"]["CloudWatchMetrics"]
    assert {d["Namespace"] for d in directives} == {"GpuInsights"}
    sets = {m["Name"]: d["Dimensions"] for d in directives for m in d["Metrics"]}
    # Read per GPU and per cluster (report, fleet dashboard); the alarm metric with its shard.
    assert sets["gpu_power_utilization"] == [
        ["ClusterName", "NodeName", "GpuIndex"],
        ["ClusterName"],
    ]
    assert sets["gpu_healthy"] == [
        ["ClusterName", "NodeName", "GpuIndex", "Shard"],
        ["ClusterName"],
    ]
    # A fault gauge (GPU 2 is throttled for heat): per GPU only.
    assert sets["gpu_throttled_thermal"] == [["ClusterName", "NodeName", "GpuIndex", "Shard"]]
    assert (document["ClusterName"], document["NodeName"]) == ("train", "node-a")
    assert document["GpuUuid"] == "GPU-h100-0"
    assert document["_aws"]["Timestamp"] == int(EPOCH * 1000)
    units = {
        m["Name"]: m["Unit"] for d in document["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]
    }
    assert units["gpu_power_utilization"] == "Percent"
    # Container Insights' readings and the constants ride as properties, not metrics; GPU 0's
    # fault gauges are zero (held back) and GPM has no SM activity yet at the first sample.
    assert set(units) == {
        "gpu_power_utilization",
        "gpu_allocated_power_utilization",
        "gpu_healthy",
    }
    # The SM clock (the fail-slow culprit's) is a property: no custom metric in Classic.
    assert document["gpu_sm_clock_mhz"] == 1980.0
    assert document["gpu_memory_used_bytes"] == 60 * 2**30
    assert document["gpu_power_limit_watts"] == 700.0


def test_gpu_without_gpm_leaves_sm_metrics_out_and_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    clock = Clock(0)
    exporter, _ = _exporter(clock)
    for now in (0, 10, 20):
        clock.now = now
        gpu1 = _by_gpu(exporter.collect_once())["1"]
        assert not {"gpu_sm_active", "gpu_sm_occupancy", "gpu_tensor_active"} & set(gpu1)
        assert "gpu_ecc_errors_uncorrected" not in gpu1  # A10G here has ECC off
    messages = [r.getMessage() for r in caplog.records if "GPU 1" in r.getMessage()]
    assert sum("no GPM support" in m for m in messages) == 1
    assert sum("does not support ECC counters" in m for m in messages) == 1


def test_lost_gpu_is_reported_and_the_others_go_on() -> None:
    clock = Clock(0)
    exporter, sink = _exporter(clock)
    exporter.collect_once()
    clock.now = 30
    documents = exporter.collect_once()
    gpus = _by_gpu(documents)
    assert gpus["2"]["gpu_healthy"] == 0.0
    assert "gpu_power_draw_watts" not in gpus["2"]
    assert gpus["0"]["gpu_healthy"] == 1.0
    assert gpus["1"]["gpu_healthy"] == 1.0
    lost = [d for d in sink.documents if d.get("XidSource") == "lost"]
    assert len(lost) == 1
    assert (lost[0]["GpuIndex"], lost[0]["XidCode"], lost[0]["gpu_xid_fatal_errors"]) == (
        "2",
        "79",
        1.0,
    )
    clock.now = 40
    exporter.collect_once()
    assert len([d for d in sink.documents if d.get("XidSource") == "lost"]) == 1


def test_xid_events_carry_code_meaning_and_severity() -> None:
    clock = Clock(16)
    exporter, sink = _exporter(clock)
    assert exporter.watcher is not None
    assert exporter.watcher.drain() == 2
    xids = {d["XidCode"]: d for d in sink.documents}
    assert xids["13"]["XidSeverity"] == "info"
    assert xids["13"]["gpu_xid_fatal_errors"] == 0.0
    assert xids["48"]["XidSeverity"] == "fatal"
    assert xids["48"]["gpu_xid_fatal_errors"] == 1.0
    assert xids["48"]["XidDescription"].startswith("Double-bit ECC error")
    assert xids["48"]["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [
        ["ClusterName", "NodeName", "GpuIndex", "XidCode"],
        ["ClusterName", "XidCode"],
        ["ClusterName"],
    ]


def test_xid_is_emitted_within_a_second_of_the_event() -> None:
    """Real time: the watcher thread blocks on the event set while nothing polls."""
    started = time.monotonic()
    sink = ListSink()
    lines = [*trace_lines()[:3], '{"kind": "xid", "t": 0.3, "index": 0, "code": 79}']
    exporter = Exporter(
        NvmlSource(FakeNvml(lines, clock=lambda: time.monotonic() - started)),
        BufferedSender(sink),
        ExporterConfig(cluster_name="train", node_name="node-a", interval_s=3600),
    )
    exporter.start()
    stop = threading.Event()
    runner = threading.Thread(target=exporter.run, args=(stop,))
    runner.start()
    try:
        deadline = time.monotonic() + 5
        while not any("XidCode" in d for d in sink.documents) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop.set()
        runner.join()
        exporter.shutdown()
    received = [t for d, t in zip(sink.documents, sink.received_at, strict=True) if "XidCode" in d]
    assert received, "no XID arrived"
    latency = received[0] - (started + 0.3)
    assert latency < 1.0


def test_pod_attribution_from_the_host_proc(tmp_path: Any) -> None:
    uid = "1f2e3d4c-5b6a-4789-8abc-def012345678"
    (tmp_path / "4242").mkdir()
    (tmp_path / "4242" / "cgroup").write_text(
        f"0::/kubepods.slice/kubepods-pod{uid.replace('-', '_')}.slice/cri-containerd-abc.scope\n"
    )
    exporter, _ = _exporter(Clock(0), proc_root=tmp_path, pod_dimension=True)
    gpu0 = _by_gpu(exporter.collect_once())["0"]
    assert gpu0["PodUids"] == [uid]
    assert gpu0["PodUid"] == uid
    assert all(
        ["ClusterName", "PodUid"] in d["Dimensions"] for d in gpu0["_aws"]["CloudWatchMetrics"]
    )


def test_pods_are_named_by_namespace_and_name_from_the_kubelets_pod_log_directories(
    tmp_path: Any,
) -> None:
    """The kubelet names each pod's log directory <namespace>_<name>_<uid> under
    /var/log/pods (kubernetes/kubernetes pkg/kubelet/kuberuntime/helpers.go,
    BuildPodLogsDirectory). Before: pages named pods by UID only."""
    uid = "1f2e3d4c-5b6a-4789-8abc-def012345678"
    proc, pods = tmp_path / "proc", tmp_path / "pods"
    (proc / "4242").mkdir(parents=True)
    (proc / "4242" / "cgroup").write_text(
        f"0::/kubepods.slice/kubepods-pod{uid.replace('-', '_')}.slice/cri-containerd-abc.scope\n"
    )
    pods.mkdir()
    (pods / f"nlp_bert-data-bound-worker-0_{uid}").mkdir()
    (pods / "kube-system_aws-node-x7k2p_0a0a0a0a-0000-4000-8000-000000000000").mkdir()
    exporter, _ = _exporter(Clock(0), proc_root=proc, pod_log_root=pods)
    gpu0 = _by_gpu(exporter.collect_once())["0"]
    assert gpu0["PodUids"] == [uid]
    assert gpu0["Pods"] == ["nlp/bert-data-bound-worker-0"]
    assert "Pods" not in str(gpu0["_aws"])  # a property, never a dimension
    xid = exporter.xid_document(XidEvent(gpu_index=0, code=79, time=0.0), [uid])
    assert xid["Pods"] == ["nlp/bert-data-bound-worker-0"]
    # NVML's busId of GPU 0 (the trace's), which the kernel prints as PCI:0000:53:00.
    assert xid["PciBusId"] == "00000000:53:00.0"


TRAINER_ID = "3f4c0e5a9b1d2c7e8f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6"


def _trainer_on_gpu_0(tmp_path: Any) -> dict[str, Any]:
    """PID 4242 (GPU 0 in the trace) in container ``trainer`` of nlp/bert-worker-0, a pod with
    a ``data-loader`` container too: the exporter's attribution roots on a tmp_path node."""
    uid = "1f2e3d4c-5b6a-4789-8abc-def012345678"
    proc, pods, containers = tmp_path / "proc", tmp_path / "pods", tmp_path / "containers"
    (proc / "4242").mkdir(parents=True)
    (proc / "4242" / "cgroup").write_text(
        f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
        f"{uid.replace('-', '_')}.slice/cri-containerd-{TRAINER_ID}.scope\n"
    )
    for container in ("data-loader", "trainer"):
        (pods / f"nlp_bert-worker-0_{uid}" / container).mkdir(parents=True)
    containers.mkdir()
    (containers / f"bert-worker-0_nlp_trainer-{TRAINER_ID}.log").symlink_to(
        f"/var/log/pods/nlp_bert-worker-0_{uid}/trainer/0.log"
    )
    return {"proc_root": proc, "pod_log_root": pods, "container_log_root": containers}


def test_the_container_holding_a_gpu_is_named_for_the_otlp_sink_only(tmp_path: Any) -> None:
    """The container ID from the process's cgroup, its name from the kubelet's log symlink.
    Before: no container at all. EMF has no container field, so an EMF exporter sends none."""
    roots = _trainer_on_gpu_0(tmp_path)
    exporter, sink = _exporter(Clock(0), name_containers=True, **roots)
    documents = exporter.collect_once()
    assert _by_gpu(documents)["0"]["Container"] == "trainer"
    assert "Container" not in _by_gpu(documents)["1"]  # the trace's GPU 1: no pod of ours
    assert "Container" not in str(_by_gpu(documents)["0"]["_aws"])  # never a dimension
    xid = exporter.xid_document(
        XidEvent(gpu_index=0, code=13, time=0.0),
        ["1f2e3d4c-5b6a-4789-8abc-def012345678"],
        container="trainer",
    )
    assert xid["Container"] == "trainer"
    exporter.on_xid(XidEvent(gpu_index=0, code=13, time=EPOCH + 1))  # GPU 0 answers: read now
    assert (sink.documents[-1]["XidCode"], sink.documents[-1]["Container"]) == ("13", "trainer")
    emf, _ = _exporter(Clock(0), **roots)
    assert "Container" not in _by_gpu(emf.collect_once())["0"]


WHISPER_UID = "5a6b7c8d-1e2f-4a3b-9c4d-5e6f7a8b9c0d"


def _whisper_on_gpu_2(tmp_path: Any) -> Clock:
    """The host's /proc and the kubelet's pod log directories of a node whose GPU 2 (lost at
    t=20 in the trace) runs speech/whisper-finetune-worker-2 as PID 5151; a clock at 0."""
    proc, pods = tmp_path / "proc", tmp_path / "pods"
    (proc / "5151").mkdir(parents=True)
    (proc / "5151" / "cgroup").write_text(
        f"0::/kubepods.slice/kubepods-pod{WHISPER_UID.replace('-', '_')}.slice/cri-x.scope\n"
    )
    (pods / f"speech_whisper-finetune-worker-2_{WHISPER_UID}").mkdir(parents=True)
    return Clock(0)


def _gpu_2_samples(pids_at: dict[int, list[int]]) -> list[str]:
    """Trace lines: the processes NVML reports on GPU 2 from each time on."""
    return [
        json.dumps({"kind": "sample", "t": t, "index": 2, "pids": pids})
        for t, pids in pids_at.items()
    ]


def test_a_lost_gpus_xid_names_the_pods_last_seen_on_it(tmp_path: Any) -> None:
    """XID 79: the GPU has fallen off the bus and NVML can no longer say what runs on it, so
    its XID names the pods of the last cycle that could read them, and when that was. Before:
    no pods at all, and the page said nothing of who was on the GPU."""
    clock = _whisper_on_gpu_2(tmp_path)
    sink = ListSink()
    exporter = started_exporter(
        clock,
        sink,
        extra=_gpu_2_samples({0: [5151]}),
        proc_root=tmp_path / "proc",
        pod_log_root=tmp_path / "pods",
    )
    exporter.collect_once()
    clock.now = 10
    assert _by_gpu(exporter.collect_once())["2"]["PodUids"] == [WHISPER_UID]
    clock.now = 20  # the cycle that finds GPU 2 lost (the trace loses it at t=20)
    exporter.collect_once()
    (lost,) = [d for d in sink.documents if d.get("XidSource") == "lost"]
    assert lost["PodUids"] == [WHISPER_UID]
    assert lost["Pods"] == ["speech/whisper-finetune-worker-2"]
    assert lost["PodsLastSeenMs"] == int((EPOCH + 10) * 1000)  # the cycle at t=10
    # The driver's own XID 79 comes a little later: the same pods, as last seen.
    clock.now = 25
    exporter.on_xid(XidEvent(gpu_index=2, code=79, time=EPOCH + 25))
    assert sink.documents[-1]["Pods"] == ["speech/whisper-finetune-worker-2"]
    assert sink.documents[-1]["PodsLastSeenMs"] == int((EPOCH + 10) * 1000)
    # Three cycles (30 s) after they were seen, the pods may have gone: none is named.
    clock.now = 41
    exporter.on_xid(XidEvent(gpu_index=2, code=79, time=EPOCH + 41))
    assert "PodUids" not in sink.documents[-1]
    assert "PodsLastSeenMs" not in sink.documents[-1]


def test_an_xid_on_a_gpu_that_answers_names_its_pods_now_not_as_last_seen(tmp_path: Any) -> None:
    clock = _whisper_on_gpu_2(tmp_path)
    sink = ListSink()
    exporter = started_exporter(
        clock, sink, extra=_gpu_2_samples({0: [5151]}), proc_root=tmp_path / "proc"
    )
    exporter.collect_once()
    clock.now = 5
    exporter.on_xid(XidEvent(gpu_index=2, code=48, time=EPOCH + 5))
    assert sink.documents[-1]["PodUids"] == [WHISPER_UID]
    assert "PodsLastSeenMs" not in sink.documents[-1]


def test_a_gpu_read_with_no_pods_forgets_the_pods_it_had(tmp_path: Any) -> None:
    """The job ended at t=10 (NVML lists no process on GPU 2); the GPU falls off the bus at
    t=20: its XID names nobody, not the job that had already left it."""
    clock = _whisper_on_gpu_2(tmp_path)
    sink = ListSink()
    exporter = started_exporter(
        clock, sink, extra=_gpu_2_samples({0: [5151], 10: []}), proc_root=tmp_path / "proc"
    )
    for t in (0, 10, 20):
        clock.now = t
        exporter.collect_once()
    (lost,) = [d for d in sink.documents if d.get("XidSource") == "lost"]
    assert "PodUids" not in lost
    assert "PodsLastSeenMs" not in lost


def test_a_cycle_that_cannot_read_the_processes_keeps_the_pods_it_had(tmp_path: Any) -> None:
    """From t=10 every NVML call on GPU 2 fails with NVML_ERROR_UNKNOWN (999) until it falls
    off the bus at t=20: the failed process list is no list of none, so the XID still names
    the pods read at t=0."""
    clock = _whisper_on_gpu_2(tmp_path)
    sink = ListSink()
    failing = json.dumps({"kind": "fault", "t": 10, "index": 2, "code": 999})
    exporter = started_exporter(
        clock, sink, extra=[*_gpu_2_samples({0: [5151]}), failing], proc_root=tmp_path / "proc"
    )
    for t in (0, 10, 20):
        clock.now = t
        exporter.collect_once()
    (lost,) = [d for d in sink.documents if d.get("XidSource") == "lost"]
    assert lost["PodUids"] == [WHISPER_UID]
    assert lost["PodsLastSeenMs"] == int(EPOCH * 1000)


def test_no_driver_is_one_clear_error() -> None:
    import pynvml

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:  # pragma: no cover - only on a GPU machine
        pynvml.nvmlShutdown()
        pytest.skip("this machine has an NVIDIA driver")
    exporter = Exporter(
        NvmlSource(pynvml),
        BufferedSender(ListSink()),
        ExporterConfig(cluster_name="c", node_name="n"),
    )
    with pytest.raises(NvmlUnavailableError, match="NVML is not available on this node"):
        exporter.start()


def test_shutdown_flushes_what_a_failing_sink_left_behind() -> None:
    class Down:
        def __init__(self) -> None:
            self.down = True
            self.delivered: list[EmfDocument] = []

        def send(self, documents: Any) -> None:
            if self.down:
                from gpu_insights_agent.emf.sinks import SinkError

                raise SinkError("down")
            self.delivered.extend(documents)

    sink = Down()
    clock = Clock(0)
    exporter = Exporter(
        NvmlSource(FakeNvml(trace_lines(), clock=clock)),
        BufferedSender(sink),
        ExporterConfig(cluster_name="train", node_name="node-a"),
    )
    exporter.start()
    exporter.collect_once()
    assert len(exporter.sender) == 3
    sink.down = False
    assert exporter.shutdown() is True
    assert len(sink.delivered) == 3


def test_alarm_metrics_carry_the_gpus_alarm_shard_in_their_own_directive() -> None:
    """The multi time series alarms query ``WHERE Shard = 'k'``: only the alarm metrics'
    per-GPU series carry it (no extra series); the rest keep the contract's sets."""
    exporter, _ = _exporter(Clock(0), alarm_shards=25)
    document = _by_gpu(exporter.collect_once())["1"]
    by_shard = {"Shard" in d["Dimensions"][0]: d for d in document["_aws"]["CloudWatchMetrics"]}
    plain, alarm = by_shard[False], by_shard[True]
    assert plain["Dimensions"] == [["ClusterName", "NodeName", "GpuIndex"], ["ClusterName"]]
    assert alarm["Dimensions"] == [
        ["ClusterName", "NodeName", "GpuIndex", "Shard"],
        ["ClusterName"],
    ]
    assert {m["Name"] for m in alarm["Metrics"]} <= {str(m) for m in ALARM_METRICS}
    assert "gpu_healthy" in {m["Name"] for m in alarm["Metrics"]}
    assert "gpu_power_utilization" in {m["Name"] for m in plain["Metrics"]}
    assert document["Shard"] == alarm_shard("node-a", 1, 25)
    valid_emf(encode(document))


def test_alarm_shards_are_stable_and_fill_evenly_at_10000_gpus() -> None:
    """1,250 eight-GPU nodes in 25 shards: every shard well under the 500 series one alarm
    query returns in full."""
    # With ceil(10,000 / 500) = 20 shards the fullest holds 562 GPUs: PARTIAL_DATA.
    counts = Counter(alarm_shard(f"ip-10-0-{n // 250}-{n % 250}", g, 25) for n in range(1250)
                     for g in range(8))  # fmt: skip
    assert sorted(counts) == sorted(str(i) for i in range(25))
    assert max(counts.values()) == 440
    assert alarm_shard("node-a", 3, 25) == alarm_shard("node-a", 3, 25)
