"""The demo end to end: real synth, real moto, files a user opens."""

import csv
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import pytest

from cli.demo.both_modes import COMPARED, alarm_kinds, compare
from cli.demo.command import DemoResult, run_demo
from cli.demo.exporter import NODE, REPLAY_PODS, replay_pod, replay_window
from cli.demo.failures import DEMO_READ, PLANTED
from cli.demo.jobs import ALARM_JOBS, job_pages
from cli.demo.report import chromium, page_height, png_size
from cli.demo.spare_gpus import DEMO_WEEK
from cli.demo.storage import DEMO_CLUSTER, END
from cli.demo.week import GPUS, HOURS, LAST_WEEK, _behaviour
from cli.main import main
from gpu_insights_agent.contract.metrics import DIM_GPU_INDEX, DIM_NODE, GpuMetric
from gpu_insights_agent.emf.document import parse_emf_line
from lambdas.notifier.notification import cut_subject
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.shared.findings import Kind
from lambdas.weekly_report.job_waste import week_of
from tests.functional.cli.one_figure import check_one_figure_per_fact
from tests.prometheus import binaries

#: The jobs that ran on the demo's Sunday only: the Monday 07:00 run's findings, over that day.
SUNDAY_ONLY = {
    ("job/gpt-regressing", "training_throughput_regression"),
    # Goodput under 90%: its largest badput saving checkpoints.
    ("job/llama-slow-checkpoint", "training_low_goodput"),
    ("job/llama-slow-checkpoint", "training_slow_checkpoint"),
    # Its cause read from Container Insights' logs.
    ("job/vit-flaky", "training_failure_cause"),
    ("job/vit-flaky", "training_job_failures"),
    # Goodput under 90%: its largest badput the steps its second run redid.
    ("job/vit-flaky", "training_low_goodput"),
}


#: The per-GPU alarm kinds the replay raises, in the order their GPUs are asserted.
ALARMED_GPU_KINDS: Final = (
    "gpu-low-power",
    "gpu-lost",
    "gpu-thermal-throttling",
    "gpu-power-brake",
    "gpu-ecc-uncorrected",
)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[DemoResult, Path]:
    """The default demo, run once for the tests below (about a minute)."""
    tmp_path = tmp_path_factory.mktemp("demo")
    return run_demo(out_dir=tmp_path / "out", cdk_out=tmp_path / "cdk.out"), tmp_path


def test_demo_exporter_metrics_arrive_and_tell_the_gpus_apart(
    demo: tuple[DemoResult, Path],
) -> None:
    result, tmp_path = demo
    replay = result.exporter
    assert replay is not None
    assert replay.cycles == 120
    busy, idle, thermal, _failing = (replay.power_utilization_by_gpu[str(i)] for i in range(4))
    assert 82 <= busy <= 95
    assert 9 <= idle <= 15
    assert thermal < busy  # throttled GPUs draw less
    # The braked GPU draws under half its limit for 48 of its 120 minutes; the three no pod
    # asked for report idle power.
    assert (
        max(replay.power_utilization_by_gpu[str(i)] for i in range(5, 8))
        < 16
        < replay.power_utilization_by_gpu["4"]
        < busy - 15
    )
    assert replay.thermal_throttled_by_gpu["2"] == pytest.approx(75.0)
    assert replay.unhealthy_gpus == ["3"]
    assert [(gpu, code) for gpu, code, _, _ in replay.xids] == [
        ("0", "13"),
        ("3", "48"),
        ("3", "79"),
    ]
    raised = {r.spec.key: r.alarms_raised for r in result.backtest if r.spec.kind.startswith("gpu")}
    assert raised == {
        "gpu-low-power": 1,  # the idle GPU holds memory but draws 12% of its limit
        # XID 48 (with its double-bit error) at 16:26, XID 79 as the GPU falls off the bus ten
        # minutes later: the alarm is OK again between them, so it goes into ALARM twice.
        "gpu-xid-fatal": 2,
        "gpu-xid": 1,
        "gpu-lost": 1,
        "gpu-ecc-uncorrected": 1,
        "gpu-thermal-throttling": 1,
        # GPU 4's hardware power brake, engaged for 48 minutes (its 30-minute window).
        "gpu-power-brake": 1,
        "gpu-silent": 0,  # the replayed node never goes silent
        # Eight GPUs are far from 90 breaching at once: no fleet count alarm.
        **{
            f"{kind}-at-cap": 0
            for kind in (
                "gpu-low-power",
                "gpu-lost",
                "gpu-ecc-uncorrected",
                "gpu-thermal-throttling",
                "gpu-power-brake",
                "gpu-silent",
            )
        },
    }
    # No silence check runs in the replay: its rule runs over the node's samples, and says so.
    assert (
        "gpu-silent: the silence check's rule, run every 5 minutes over the replay (no EC2 in "
        "it: the node counts as running to the end), found every GPU reporting to the end"
    ) in result.summary()
    assert "a history has no EC2 view" in (tmp_path / "out" / "alarm-backtest.txt").read_text()
    assert "gpu-low-power [warning]" in (tmp_path / "out" / "alarm-backtest.txt").read_text()
    # Each per-GPU alarm names the GPU it fired on (its contributor), not just the cluster.
    named = {r.spec.key: [g[-1] for g in r.contributors_alarmed] for r in result.backtest}
    # The GPUs no pod asked for (5-7) report idle power with no allocated reading: the
    # low-power alarm, for GPUs in use, leaves them out.
    assert [named[k] for k in ALARMED_GPU_KINDS] == [
        ["1"],
        ["3"],
        ["2"],
        ["4"],
        ["3"],
    ]
    assert "on ClusterName=example-gpu-cluster, NodeName=" in result.summary()
    storage = sorted(
        (result.storage_names.get(f["resource"], f["resource"]), f["kind"])
        for f in result.storage_findings
    )
    assert storage == [
        ("arn:aws:s3:::demo-checkpoints", "s3_request_metrics_disabled"),
        ("arn:aws:s3:::demo-training-data", "s3_high_error_rate"),
        ("arn:aws:s3:::demo-training-data", "s3_high_latency"),
        ("deep-queue", "ebs_high_queue_length"),
        ("idle-attached", "ebs_idle_volume"),
        ("overprovisioned-iops", "ebs_overprovisioned_iops"),
        ("overprovisioned-throughput", "ebs_overprovisioned_throughput"),
        ("saturated-dataset", "ebs_throughput_saturated"),
        ("unattached", "ebs_idle_volume"),
    ]  # the healthy volume, the three-day-old one (too new to call idle), demo-eval-data: nothing
    # The Sunday 23:00 run's findings are Saturday's (the whole UTC day before it, the day it
    # attributes); the jobs that ran on the Sunday only are the Monday 07:00 run's.
    training = sorted(
        (f["resource"], f["kind"])
        for f in result.training_findings
        if f["kind"].startswith("training_")
    )
    assert training == [
        ("job/bert-data-bound", "training_data_bound"),
        # 71 GiB of its H100s' 79.6 GiB (cli/demo/week.py MEMORY_GIB): out-of-memory risk.
        ("job/bert-data-bound", "training_gpu_memory_near_capacity"),
        # Goodput under 90%, its largest badput waiting for data.
        ("job/bert-data-bound", "training_low_goodput"),
        # The notebook (9 GiB) fits a 1g.10gb, the nightly evaluation (12 GiB) a 1g.20gb.
        ("job/jupyter-alice", "training_gpu_memory_oversized"),
        ("job/nightly-eval", "training_gpu_memory_oversized"),
    ]
    # Nothing on resnet-healthy (52 GiB: right-sized) in either run.
    assert {(f["resource"], f["kind"]) for f in result.monday_findings} >= SUNDAY_ONLY
    assert result.report["summary_sent"] is True
    html = (tmp_path / "out" / "report.html").read_text()
    assert f"GPU week {result.report['week']}: example-gpu-cluster" in html
    assert "gpu-insights-example-gpu-cluster-gpu-xid-fatal" in html  # an alarm raised that week
    assert len(list((tmp_path / "out" / "dashboards").glob("*.json"))) == 6  # with the cluster's
    shown = {
        f"{view.name.removeprefix('gpu-insights-example-gpu-cluster-')}: {w.title}": w
        for view in result.dashboard_views
        for w in view.widgets
    }
    node = "ip-10-0-1-17.ec2.internal"
    assert shown["gpu-fleet: Lowest power in use (% of limit), 10 GPUs"].lines[0].label == (
        f"{node} 1"  # the idle GPU
    )
    # Container Insights names the thermal GPU by its device
    assert shown["gpu-fleet: Hottest (C), 10 GPUs"].lines[0].label == f"{node} nvidia2"
    assert shown["gpu-fleet: GPUs lost"].lines[0].value == 1  # the failing GPU
    assert shown["gpu-fleet: GPUs reporting"].lines[0].value == 8  # every GPU of the p5
    assert shown["training: Data-wait share of the step (%), 10 jobs"].lines[0].label == (
        "bert-data-bound"
    )
    kinds = shown.pop("findings: Findings by kind (daily)")
    assert kinds.series <= len(Kind)  # a line a kind of finding the week had
    assert max(w.series for w in shown.values()) <= 16  # a node's GPUs at most
    # The analyzers' own metrics, read back from CloudWatch: the week's waste by namespace
    # (the report's figures: nlp's data-bound job steps, so its hours are not held without
    # work) and today's held-but-idle GPUs (of the demo's 32).
    waste = shown["training: Held without work this week (USD), 10 namespaces"].lines
    assert [(line.label, round(line.value, 2)) for line in waste][:2] == [
        ("research", 722.4),
        ("speech", 13.76),
    ]
    idle_today = shown["gpu-fleet: GPUs held but not working (today)"].lines[0].value
    assert 0 < idle_today < 11
    assert "GPUs lost: GPUs 1 [1 series]" in result.summary()
    bound = next(f for f in result.training_findings if f["kind"] == "training_data_bound")
    assert bound["related"] == [
        "s3_high_error_rate arn:aws:s3:::demo-training-data",
        "s3_high_latency arn:aws:s3:::demo-training-data",
    ]
    lines = (tmp_path / "out" / "exporter-emf.jsonl").read_text().splitlines()
    assert len(lines) == replay.documents
    assert all(parse_emf_line(line)["ClusterName"] == "example-gpu-cluster" for line in lines)


#: The GPU node dashboards: every widget draws on the demo's world in either mode.
GPU_DASHBOARDS: Final = ("gpu-fleet", "gpu-node")


def _power_brake_and_undrawn(
    result: DemoResult,
) -> tuple[dict[str, list[tuple[str, float]]], list[str]]:
    """The GPU dashboards' power-brake widgets as drawn, and their widgets that drew nothing."""
    prefix = f"gpu-insights-{DEMO_CLUSTER}-"
    views = [v for v in result.dashboard_views if v.name.removeprefix(prefix) in GPU_DASHBOARDS]
    assert len(views) == len(GPU_DASHBOARDS)
    widgets = [(v.name.removeprefix(prefix), w) for v in views for w in v.widgets]
    braked = {
        f"{name}: {w.title}": [(line.label, line.value) for line in w.lines]
        for name, w in widgets
        if "power-braked" in w.title or "Power brake" in w.title
    }
    return braked, [f"{name}: {w.title}" for name, w in widgets if not w.series]


def test_every_gpu_dashboard_widget_draws_on_the_demos_world(
    demo: tuple[DemoResult, Path],
) -> None:
    """The fleet and node dashboards draw every widget on the Classic demo's data: the replayed
    node's GPU 4, power-braked for 48 one-minute samples, in both power-brake widgets; the
    funnel's paid and allocated GPUs from Container Insights' per-node counts."""
    result, _ = demo
    braked, undrawn = _power_brake_and_undrawn(result)
    assert undrawn == []
    assert braked == {
        "gpu-fleet: Most power-braked (braked samples), 10 GPUs": [(f"{NODE} 4", 48.0)],
        "gpu-node: Power brake (samples)": [("4", 48.0)],
    }


def test_the_demo_reports_training_section_leads_with_fleet_goodput(
    demo: tuple[DemoResult, Path],
) -> None:
    """The week's goodput from the training analyzer's daily goodput files: fleet, by size,
    the jobs; the data-bound job's 60% (docs/goodput.md)."""
    _, tmp_path = demo
    html = (tmp_path / "out" / "report.html").read_text()
    assert "Fleet goodput: 78.3% of 735.0 GPU-hours" in html
    assert html.index('id="goodput"') < html.index("Training throughput by job")
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    jobs = {j["job"]: j for j in report["goodput"]["jobs"]}
    assert round(jobs["bert-data-bound"]["goodput"], 2) == 0.60
    assert round(jobs["resnet-healthy"]["goodput"], 2) == 0.95


def test_the_demo_reports_each_failed_run_at_what_its_pods_held(
    demo: tuple[DemoResult, Path],
) -> None:
    """Every failed run's GPU-hours are what the attribution says its job's pods held since
    the job's previous failure: the figure of the funnel, the goodput and the job tables."""
    result, tmp_path = demo
    document = json.loads((tmp_path / "out" / "report.json").read_text())
    # No analysis error: the planted XID job, whose emitter reported no pod, is read from the
    # pods the GPU-hour attribution placed (lambdas/training_analyzer/failure_placement.py),
    # and its failed run priced at the 9.6 GPU-hours they held (five GPUs, one a pod).
    assert document["findings_by_kind"].get("analysis_error", 0) == 0
    (whisper,) = [
        f
        for f in result.monday_findings
        if f["kind"] == "training_failure_cause" and f["resource"] == "job/whisper-finetune"
    ]
    assert whisper["evidence"]["cause"] == "gpu_xid"
    assert whisper["evidence"]["pods_from"].startswith("GPU-hour attribution of ")
    assert [r["gpu_hours"] for r in whisper["evidence"]["failures"]] == [9.6]
    # Its failures finding and its cause say the 9.6 its pods held that day, beside the 0
    # GPU-hours its GPUs x stepping hours make (it never stepped).
    (count,) = [
        f
        for f in result.monday_findings
        if f["kind"] == "training_job_failures" and f["resource"] == "job/whisper-finetune"
    ]
    assert (count["evidence"]["gpu_hours"], count["evidence"]["held_gpu_hours"]) == (0, 9.6)
    assert whisper["evidence"]["held_gpu_hours"] == 9.6
    # The report's failed runs: the five before and whisper-finetune's, each at what its pods
    # held: mixtral's 50 minutes and sdxl's 25 on two GPUs, tokenize's 75, vit-flaky's two
    # runs (15:00 to its restart at 19:00, and 19:00 to 22:00), whisper's 9.6.
    failures = document["failures"]
    runs = {(r["job"], r["failed_hour"][11:]): r["gpu_hours"] for r in failures["runs"]}
    assert runs == {
        ("mixtral-nccl-timeout", "15:00"): 1.67,
        ("sdxl-cuda-oom", "15:00"): 0.83,
        ("tokenize-oom-killed", "16:00"): 2.5,
        ("whisper-finetune", "16:00"): 9.6,
        ("vit-flaky", "18:00"): 8.0,
        ("vit-flaky", "22:00"): 6.0,
    }
    assert (failures["failures"], failures["gpu_hours"], failures["usd"]) == (6, 28.6, 196.77)


def test_the_demo_reports_the_node_with_the_planted_xids_as_a_lemon(
    demo: tuple[DemoResult, Path],
) -> None:
    """The replayed node, with the exporter's planted XIDs 13, 48 and 79 and a failed run on
    the 16 GPU-hours its GPUs were seen, is the lemon, listed after the goodput tables with
    what to do and the auto repair condition its XIDs set (docs/goodput.md)."""
    _, tmp_path = demo
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    (lemon,) = report["lemons"]["lemons"]
    node = "ip-10-0-1-17.ec2.internal"
    assert (lemon["node"], lemon["xids"], lemon["failures"]) == (node, 3, 1)
    assert lemon["gpu_hours"] == 16.0
    assert "AcceleratedHardwareReady=False" in lemon["action"]
    # Every node a failed run ran on is scored (its GPUs in the days' tables): the spare-GPU
    # jobs' failures count on the team nodes (vit-flaky's two, sdxl's and tokenize's on the
    # vision node: 4 of the fleet's 10 events on a third of its GPU-hours, no lemon).
    assert report["lemons"]["refused"] == []
    assert report["lemons"]["nodes_scored"] == 4
    html = (tmp_path / "out" / "report.html").read_text()
    assert html.index('id="goodput"') < html.index('id="lemon-nodes"')
    assert f"kubectl cordon {node}" in html.replace("<wbr>", "")


def test_the_demo_weeks_gpu_memory_is_judged_and_reported(
    demo: tuple[DemoResult, Path],
) -> None:
    result, tmp_path = demo
    memory = {
        f["resource"]: f["evidence"] for f in result.training_findings if "memory" in f["kind"]
    }
    assert memory["job/jupyter-alice"]["profile"] == "1g.10gb"
    assert memory["job/nightly-eval"]["profile"] == "1g.20gb"
    assert memory["job/bert-data-bound"]["gpu_model"] == "H100 80GB"
    # No emitter runs in the notebook: its node is where the GPU-hour attribution placed it.
    assert memory["job/jupyter-alice"]["gpu_model"] == "H100 80GB"
    report = (tmp_path / "out" / "report.html").read_text()
    # The weekly report's memory table has the notebook's row with its profile.
    assert "<td>research</td><td>jupyter-alice</td>" in report
    assert "<td>oversized</td><td>1g.10gb</td>" in report
    # One figure per fact: each run prices the notebook's MIG saving on the GPU-hours its
    # GPU-hour attribution says it held (the whole UTC day before the run), so Sunday
    # 23:00's run and Monday 07:00's agree, and each agrees with its own held-GPU finding.
    for findings in (result.training_findings, result.monday_findings):
        mig = next(f for f in findings if f["kind"] == "training_gpu_memory_oversized"
                   and f["resource"] == "job/jupyter-alice")  # fmt: skip
        held = next(f for f in findings if f["kind"] == "gpu_held_not_working"
                    and f["resource"] == "namespace/research/job/jupyter-alice")  # fmt: skip
        assert mig["evidence"]["gpu_hours"] == held["evidence"]["held_gpu_hours"] == 24.0
        assert mig["estimated_monthly_waste_usd"] == pytest.approx(4304.91, abs=0.01)
    assert '<td>1g.10gb</td><td class="num">$4,305</td>' in report


def test_demo_sends_one_message_per_incident(demo: tuple[DemoResult, Path]) -> None:
    result, tmp_path = demo
    # One message per incident: three XIDs, every GPU contributor the backtest put in ALARM
    # (the ECC count's included), the storm.
    notified = result.notifications
    assert notified is not None
    assert (notified.storm_published, notified.storm_retry_published) == (1, 0)
    subjects = sorted(subject for _, subject, _ in notified.messages)
    # SNS takes a subject of "less than 100 characters": a long one is cut after a whole word.
    assert subjects == sorted(
        cut_subject(s)
        for s in [
            "[CRITICAL] XID 48 on ip-10-0-1-17.ec2.internal GPU 3",
            "[CRITICAL] XID 79 on ip-10-0-1-17.ec2.internal GPU 3",
            "[CRITICAL] GPU lost on ip-10-0-1-17.ec2.internal GPU 3",
            "[CRITICAL] Uncorrectable ECC errors on ip-10-0-1-17.ec2.internal GPU 3",
            "[WARNING] XID 13 on ip-10-0-1-17.ec2.internal GPU 0",
            "[WARNING] GPU in use but not working on ip-10-0-1-17.ec2.internal GPU 1",
            "[WARNING] Sustained thermal throttling on ip-10-0-1-17.ec2.internal GPU 2",
            "[WARNING] Sustained power-brake slowdown on ip-10-0-1-17.ec2.internal GPU 4",
            "[WARNING] XID 13 on ip-10-0-1-17.ec2.internal GPU PCI 0000:53:00",
            # The planted jobs, each with the nodes its ranks run on (cli/demo/jobs.py).
            f"[CRITICAL] Training job hung: job llama-hangs on {_nodes(1)}",
            f"[CRITICAL] Training loss is NaN or infinite: job gpt-nan on {_nodes(2)}",
            f"[WARNING] Training loss jumped: job t5-loss-spike on {_nodes(3)}",
            f"[WARNING] Training throughput collapsed: job bert-slows on {_nodes(4)}",
            # Its fail-slow, 12 minutes before the collapse; the hung job's hour of goodput;
            # and the week's data-bound job, 40% of its time waiting for data.
            f"[WARNING] Training job slowed (fail-slow): job bert-slows on {_nodes(4)}",
            # Killed at minute 100, its ranks are gone by its goodput page: no node named.
            "[WARNING] Training job goodput low: job llama-hangs",
            "[WARNING] Training job goodput low: job bert-data-bound on ip-10-0-2-22.ec2.internal",
        ]
    )
    hung = next(text for _, s, text in notified.messages if "job llama-hangs" in s)
    assert "Pods:          llama-hangs-master-0, llama-hangs-worker-0" in hung, hung
    assert "GPU:           GPU-" in hung
    assert "Ranks:         2 ranks: 2 stalled (rank 0, 1)" in hung
    assert "?var-job=llama-hangs" in hung
    # Each exporter XID is dated by its document's _aws.Timestamp, when the GPU reported it,
    # not by its log event (the batch reached CloudWatch Logs after the last of them).
    lines = (tmp_path / "out" / "exporter-emf.jsonl").read_text().splitlines()
    xids = [d for d in map(json.loads, lines) if "XidCode" in d]
    assert len(xids) == 3
    for document in xids:
        title = f"XID {document['XidCode']} on {document['NodeName']} GPU {document['GpuIndex']}"
        text = next(text for _, s, text in notified.messages if s.endswith(title))
        written = datetime.fromtimestamp(document["_aws"]["Timestamp"] / 1000, UTC)
        assert f"Seen:          once, at {written:%Y-%m-%d %H:%M:%S} UTC" in text, text
    # XID 13 an hour before 48, and 79 ten minutes after 48 (the GPU falls off the bus).
    assert len({d["_aws"]["Timestamp"] for d in xids}) == 3
    # The double-bit error and its XID 48 are one event: the ECC count rose in the minute the
    # GPU reported the XID.
    (xid48,) = [d for d in xids if d["XidCode"] == "48"]
    ecc = [d for d in map(json.loads, lines) if d.get("gpu_ecc_errors_uncorrected")]
    assert [d["_aws"]["Timestamp"] for d in ecc] == [xid48["_aws"]["Timestamp"]]
    # An XID's message names the pods whose processes the exporter saw on the GPU (the
    # replayed PyTorchJob's), by namespace and name: GPU 3 is worker-2's.
    text = next(text for _, s, text in notified.messages if "XID 48 on" in s)
    assert f"Pods:          speech/{REPLAY_PODS[3].name}" in text, text
    assert "(pod UID)" not in text
    storm = next(text for _, s, text in notified.messages if "PCI 0000:53:00" in s)
    # The kernel-log storm is dated in the demo's week: the end of the replayed hours.
    assert f"500 times at {datetime.fromtimestamp(replay_window()[1], UTC):%Y-%m-%d %H:%M}" in (
        storm
    ), storm
    low_power = next(text for _, s, text in notified.messages if "not working" in s)
    assert "Threshold:     30" in low_power
    # As a contributor event words it: the most recent breaching datapoint, under 30.
    (observed,) = [line for line in low_power.splitlines() if line.startswith("Observed:")]
    assert float(observed.split()[1]) < 30, observed
    assert "datapoints were less than the threshold" in observed, observed


def test_the_demo_week_leads_with_the_teams_that_held_gpus_without_work(
    demo: tuple[DemoResult, Path],
) -> None:
    result, tmp_path = demo
    html = (tmp_path / "out" / "report.html").read_text()
    # The week: seven days in every chart; the notebook that holds a GPU overnight leads the
    # GPU-hours held without work, with dollars; the data-bound team's GPUs draw 22% of their
    # limit but its job steps in every hour, so they are held and working (its data-bound
    # finding prices the waiting); the healthy team has none; and the analyzers' daily runs
    # over the week erred nowhere.
    document = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [day["gpu_hours"] > 0 for day in document["days"]] == [True] * 7
    assert None not in document["throughput_by_job"]["resnet-healthy"]
    assert len(document["throughput_by_job"]["resnet-healthy"]) == 7
    waste = document["waste"]
    assert waste["days"] == 7
    waiting = {j["job"]: j["waiting_usd"] for j in document["most_wasteful_jobs"]}
    bert_waiting = waiting["bert-data-bound"]
    # nlp's spare GPUs' jobs: llama-slow-checkpoint stalls on its saves while stepping.
    nlp_waiting = round(bert_waiting + waiting["llama-slow-checkpoint"], 2)
    assert [
        (
            r["namespace"],
            r["not_working_gpu_hours"],
            r["stepping_gpu_hours"],
            r["held_not_working_usd"],
            r["waiting_while_stepping_usd"],
            r["waste_usd"],
        )
        for r in waste["namespaces"]
    ] == [
        ("research", 105.0, 0.0, 722.4, 0.0, 722.4),
        # the exporter's node: its GPU held at 12% for two hours
        ("speech", 2.0, 0.0, 13.76, 0.0, 13.76),
        # 100% efficient (each job steps in every hour it holds), and bert waits for data 40%
        # of each step: its waste is that waiting, not $0. Its 380.17 stepping GPU-hours are
        # bert's 336 and its spare GPUs' jobs' (20 + 20 + 1.67 + 2.5).
        ("nlp", 0.0, 380.17, 0.0, nlp_waiting, nlp_waiting),
        # vit-flaky's pods held their GPUs in the hour between its runs without a step.
        ("vision", 0.0, 352.83, 0.0, 0.0, 0.0),
    ]
    assert 900 < bert_waiting < 950
    assert waste["stepping_under_threshold_gpu_hours"] == 336.0  # nlp's, at 22% of the limit
    assert [(j["job"], j["held_not_working_usd"]) for j in waste["jobs"]] == [
        ("jupyter-alice", 722.4),
        ("whisper-finetune", 13.76),
    ]
    # Every GPU-hour of the week: the three p5.48xlarge's 24 GPUs x 168 hours, and the replayed
    # node's 8 x 2 hours; the week's failing GPU lost for 58 of them, the replayed node's after
    # its XID 79 for one. The GPUs no pod asked for are the not-held class: 3,070 GPU-hours.
    assert sum(waste["classes"].values()) == 24 * 168 + 8 * 2
    assert waste["classes"]["not_held"] == 3070.0
    assert waste["classes"]["lost_or_faulted"] == 58 + 1
    speech = next(r for r in waste["namespaces"] if r["namespace"] == "speech")
    assert 0 < speech["faulted_gpu_hours"] < 1  # the failing GPU's hour, while it was held
    # One source of truth: the headline's GPU-hours by class are the waste table's, and add up.
    assert {k: document[f"{k}_gpu_hours"] for k in waste["classes"]} == waste["classes"]
    assert document["gpu_hours"] == pytest.approx(sum(waste["classes"].values()))
    assert "Idle GPU-hours" not in html
    held = {
        f["resource"]: f for f in result.training_findings if f["kind"] == "gpu_held_not_working"
    }
    # The last day's: the notebook's alone; the data-bound job stepped in every hour it held.
    assert sorted(held) == ["namespace/research/job/jupyter-alice"]
    assert "6 failed run(s)" in html
    browser = chromium()
    if browser is not None:  # the screenshot is the whole page, not its first 2,400 px
        width, height = png_size(tmp_path / "out" / "report.png")
        assert height == page_height(browser, tmp_path / "out" / "report.html", width) > 2400
    # What to do first, then the headline cards, then the tables.
    assert html.index('id="actions"') < html.index('id="headline"') < html.index('id="waste"')
    order = ["<td>research</td>", "<td>speech</td>", "<td>nlp</td>", "<td>vision</td>"]
    assert [html.index(cell) for cell in order] == sorted(html.index(cell) for cell in order)
    # The showback table opens in a spreadsheet: a header, then a row per namespace.
    lines = (tmp_path / "out" / "report.csv").read_text().splitlines()
    assert lines[0].startswith("cluster,week,namespace,")
    rows = list(csv.reader(lines))  # text cells quoted, numbers bare (spreadsheet.py)
    assert [row[2] for row in rows[1:5]] == ["research", "speech", "nlp", "vision"]
    assert lines[1].startswith(f'"{DEMO_CLUSTER}",')
    # Its waste in two named parts and their sum, as the report's namespace table has them.
    header = rows[0]
    nlp = dict(zip(header, rows[3], strict=True))
    parts = ("held_not_working_usd", "waiting_while_stepping_usd", "waste_usd")
    assert [float(nlp[k]) for k in parts] == [0.0, nlp_waiting, nlp_waiting]


def test_the_demo_report_changes_on_a_real_last_week_and_ties_jobs_across_tables(
    demo: tuple[DemoResult, Path],
) -> None:
    result, tmp_path = demo
    document = json.loads((tmp_path / "out" / "report.json").read_text())
    waste = document["waste"]
    # Last week's report came from its own run of the pipeline (cli/demo/last_week.py: nlp
    # started on the fourth day, the notebook was culled overnight until the sixth, no GPU
    # failed), in its own moto context: this week's CloudWatch returns none of its points,
    # and only the objects the report handler wrote crossed over.
    assert result.last_week_datapoints > 0
    assert result.last_week_points_seen == 0
    # PutMetricData takes timestamps "as much as two weeks before the current date"
    # (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricData.html):
    # last week's first datapoint (half past its first hour) is that close to the demo's "now".
    assert 13 * 86_400 < END - (LAST_WEEK.start + 1800) <= 14 * 86_400
    assert sorted(key.rsplit("/", 1)[1] for key in result.last_week_objects) == [
        "failures.csv",
        "funnel.csv",
        "goodput.csv",
        "gpu-memory.csv",
        "report.csv",
        "report.html",
        "report.json",
        "summary-sent",
    ]
    change = {r["namespace"]: r["not_working_change_gpu_hours"] for r in waste["namespaces"]}
    # nlp: last week's job ran no emitter, so its 4 days x 2 GPUs at 22% were held without
    # work; this week it reports its steps. research: 15 idle hours a night, 5 nights more.
    # speech (the replayed node) ran this week only: no figure to change from.
    assert change == {"nlp": -192.0, "research": 75.0, "speech": None, "vision": 0.0}
    assert [(j["job"], j["not_working_change_gpu_hours"]) for j in waste["jobs"]] == [
        ("jupyter-alice", 75.0),
        ("whisper-finetune", None),
    ]
    assert document["change"]["held_not_working_gpu_hours"] == (105.0 + 2.0) - (192.0 + 30.0)
    assert document["change"]["lost_or_faulted_gpu_hours"] > 0  # a GPU failed this week only
    html = (tmp_path / "out" / "report.html").read_text()
    assert '<td class="num">+75.0</td>' in html  # the tables' change column
    # Last week ran no storage analysis: this week's storage figure is new, not "up".
    assert document["change"]["storage_waste_usd"] is None
    assert "Storage waste a month<b>$156</b><small>new</small>" in html
    # The teams' jobs run emitter.training in the week's pods, so their GPU-hours are the
    # job's exactly; the notebook and the CronJob run no emitter and stay inferred: the
    # CronJob's from its pods' controller (PodName nightly-eval-<minute>, a Job a night).
    jobs = {j["job"]: j for j in waste["all_jobs"]}
    # Every job the week ran is one of them: the teams' own, those on their spare GPUs and
    # the replayed node's.
    assert sorted(jobs) == [
        "bert-data-bound",
        "gpt-regressing",
        "jupyter-alice",
        "llama-slow-checkpoint",
        "mixtral-nccl-timeout",
        "nightly-eval",
        "resnet-healthy",
        "sdxl-cuda-oom",
        "tokenize-oom-killed",
        "vit-flaky",
        "whisper-finetune",
    ]
    assert [name for name, j in sorted(jobs.items()) if j.get("inferred")] == [
        "jupyter-alice",
        "nightly-eval",
        "whisper-finetune",
    ]
    assert jobs["resnet-healthy"]["held_gpu_hours"] == 336.0  # an Indexed Job's two pods
    assert jobs["resnet-healthy"]["stepping_gpu_hours"] == 336.0  # it steps whenever it holds
    assert (
        jobs["nightly-eval"]["held_gpu_hours"],
        jobs["nightly-eval"]["held_not_working_usd"],
    ) == (7, 0)


def test_the_demo_reports_job_tables_agree_with_each_other_and_the_findings(
    demo: tuple[DemoResult, Path],
) -> None:
    """One GPU-hour, one class, one price: the job tables are the same rows, their held hours
    the attribution's, their waiting the findings' share of the week's stepping hours; the
    actions are those figures and add up, and no job's waste is more than its GPUs cost."""
    result, tmp_path = demo
    document = json.loads((tmp_path / "out" / "report.json").read_text())
    waste = document["waste"]
    costs = {j["job"]: j for j in document["costliest_jobs"]}
    wasted = {j["job"]: j for j in document["most_wasteful_jobs"]}
    for job in costs.keys() & wasted.keys():
        assert costs[job] == wasted[job]
    attributed = {j["job"]: j for j in waste["all_jobs"]}
    for job, row in {**costs, **wasted}.items():
        if row["in_attribution"]:
            for field in ("held_gpu_hours", "stepping_gpu_hours", "not_working_gpu_hours"):
                assert row[field] == attributed[job][field], (job, field)
            assert row["held_not_working_usd"] == attributed[job]["held_not_working_usd"]
            assert row["waste_usd"] <= row["held_usd"]
    # bert-data-bound: held 336 GPU-hours, stepped in all of them, none held without work;
    # the data loading its goodput measured is its waste (about $924, its data-bound finding's
    # share of that stepping time to 0.2%, where the report before priced the same GPU-hours
    # at $2,312 held without work and $44 more).
    bert = costs["bert-data-bound"]
    assert (bert["held_gpu_hours"], bert["stepping_gpu_hours"]) == (336.0, 336.0)
    assert bert["held_not_working_usd"] == 0.0
    bound = next(f for f in result.training_findings if f["kind"] == "training_data_bound")
    share = bound["evidence"]["data_wait_share"]
    assert bert["waiting_usd"] == pytest.approx(share * 336 * 6.88, rel=2e-3)
    assert 900 < bert["waiting_usd"] < 0.5 * bert["held_usd"]
    # The finding's own dollars say the window they cover (the demo's one-day lookback: the
    # whole UTC day before the analyzer's run at the demo's end, the GPU-hour attribution's day)
    # and that its GPU-hours are the hours the job stepped.
    end = END - END % 86_400

    def utc(epoch: float) -> str:
        return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M")

    assert bound["summary"].endswith(
        "$132 of the 48 GPU-hours it stepped (2 GPUs x 24 hours) in its 1-day lookback "
        f"({utc(end - 86_400)} to {utc(end)} UTC) went to waiting."
    )
    assert costs["resnet-healthy"]["waste_usd"] == 0.0
    # The actions are the tables' figures, each once, the most dollars first.
    actions = {a["title"]: a for a in document["actions"]}
    idle = waste["classes"]["not_held"]
    assert list(actions)[:3] == [
        # The GPU-hours no pod held are worth the most: scale down or consolidate.
        f"idle GPU capacity: {idle:,.1f} GPU-hours not held by any pod",
        "bert-data-bound: waits for data",
        "research / jupyter-alice: 105.0 GPU-hours held without work",
    ]
    assert actions["bert-data-bound: waits for data"]["usd"] == bert["waiting_usd"]
    assert actions["bert-data-bound: waits for data"]["finding"] == (
        "training_data_bound job/bert-data-bound"
    )
    notebook = actions["research / jupyter-alice: 105.0 GPU-hours held without work"]
    assert notebook["usd"] == wasted["jupyter-alice"]["waste_usd"] == 722.4
    assert notebook["finding"] == "gpu_held_not_working namespace/research/job/jupyter-alice"
    capacity = document["actions"][0]
    assert capacity["usd"] == waste["cost_usd"]["not_held"] > 1800
    assert capacity["evidence"].startswith(f"{idle:,.1f} GPU-hours of the week no pod held, on ")
    # The totals add without double counting: the week's priced waste is the jobs' (held
    # without work, which is the class's cost, plus waiting while stepping) and a week of each
    # priced storage finding.
    jobs_waste = sum(j["waste_usd"] for j in wasted.values())
    held_not_working = sum(j["held_not_working_usd"] or 0.0 for j in wasted.values())
    assert held_not_working == pytest.approx(waste["cost_usd"]["held_not_working"])
    storage = sum(
        week_of(f["estimated_monthly_waste_usd"])
        for f in result.storage_findings
        if f.get("estimated_monthly_waste_usd")
    )
    assert document["priced_waste_usd"] == pytest.approx(
        waste["cost_usd"]["not_held"] + jobs_waste + storage, abs=0.05
    )
    html = (tmp_path / "out" / "report.html").read_text()
    assert "<b>$924 this week</b>: <b>bert-data-bound: waits for data</b>" in html
    # Each table with the sentence that relates it, but the headline's two and the failures'
    # per-job and per-node tables, which share their section's one.
    assert html.count("<table>") == html.count('<p class="relates">') - 1
    assert "GPU-hours held (week)" in html
    assert "of them stepping" in html
    assert "Waiting while stepping (week)" in html
    rows = (tmp_path / "out" / "report.csv").read_text().splitlines()
    assert rows[0].split(",")[8] == "stepping_gpu_hours"
    # The throughput chart is dated like the others.
    chart = html[html.index("Training throughput by job") :]
    assert document["days"][0]["day"][5:] in chart[: chart.index("</svg>")]


def test_the_demo_reports_throughput_by_job_for_the_days_each_ran(
    demo: tuple[DemoResult, Path],
) -> None:
    _, tmp_path = demo
    document = json.loads((tmp_path / "out" / "report.json").read_text())
    # Each of the week's jobs ran on each day: its throughput charts seven days. The jobs
    # planted to fail in the replayed hours (cli/demo/failures.py) chart that day alone;
    # whisper-finetune, which steps through no emitter, charts none.
    throughput = dict(document["throughput_by_job"])
    planted = {job: throughput.pop(job) for job in ("sdxl-cuda-oom", "mixtral-nccl-timeout",
                                                    "tokenize-oom-killed")}  # fmt: skip
    assert {job: len(days) for job, days in throughput.items()} == {
        "bert-data-bound": 7,
        "gpt-regressing": 7,
        "llama-slow-checkpoint": 7,
        "resnet-healthy": 7,
        "vit-flaky": 7,
    }
    assert all(None not in days for days in throughput.values())
    assert [sum(d is not None for d in days) for days in planted.values()] == [1, 1, 1]


def test_the_demo_reports_sentences_hold_for_its_week(demo: tuple[DemoResult, Path]) -> None:
    _, tmp_path = demo
    document = json.loads((tmp_path / "out" / "report.json").read_text())
    html = (tmp_path / "out" / "report.html").read_text()
    costs = {j["job"]: j for j in document["costliest_jobs"]}
    wasted = {j["job"]: j for j in document["most_wasteful_jobs"]}
    num = '<td class="num">{}</td>'.format
    # The sentences about how the tables relate hold for this week: the notebook is in "Jobs
    # that wasted most" and not in "Training jobs", resnet the other way round; Friday's XID 79
    # on ip-10-0-2-23 went into no alarm's history, and no sentence says it was paged.
    assert "jupyter-alice" in wasted
    assert "jupyter-alice" not in costs
    assert "resnet-healthy" in costs
    assert "resnet-healthy" not in wasted
    assert "each was paged" not in html
    assert "the pages behind" not in html
    # The namespace table's rows add up: speech's 9.6 held hours (five GPUs of the replayed
    # node, the braked one working) are 7.0 working, 2.0 not working and 0.6 faulted (the
    # week's other 58.4 lost hours were held by no pod).
    assert (
        "<td>speech</td>"
        + "".join(map(num, ("9.6", "7.0", "2.0", "0.6", "$14", "$0", "$14", "73%")))
        in html
    )
    assert "the not-working and faulted hours add up" not in html
    # llama's pods held GPUs the exporter saw, stepping in every hour: its slow saves are
    # waiting while stepping, no figure at the findings' pace.
    llama = f"${wasted['llama-slow-checkpoint']['waste_usd']:,.0f}"
    assert "<td>llama-slow-checkpoint</td>" + "".join(map(num, ("$0", llama, "n/a", llama))) in (
        html
    )


def test_the_monday_run_shows_the_replayed_nodes_gpu_held_without_work(
    demo: tuple[DemoResult, Path],
) -> None:
    # The analyzer's Monday-morning run attributes the week's Sunday, with the exporter's
    # replayed node in it: speech's whisper-finetune held its GPU at 12% of the power limit.
    result, tmp_path = demo
    written = [
        json.loads(line)
        for line in (tmp_path / "out" / "training-findings.jsonl").read_text().splitlines()
    ]
    held = {f["resource"]: f for f in written if f["kind"] == "gpu_held_not_working"}
    whisper = held["namespace/speech/job/whisper-finetune"]
    assert whisper["estimated_monthly_waste_usd"] > 0
    # The earlier runs' findings stay, each line a finding as before; the data-bound job,
    # which stepped in every hour it held its GPUs, has none.
    assert "namespace/research/job/jupyter-alice" in held
    assert not any("bert-data-bound" in resource for resource in held)
    assert all({"kind", "resource", "severity"} <= f.keys() for f in written)
    summary = result.summary()
    assert "gpu_held_not_working" in summary.split("Monday", 1)[1]
    assert "speech/job/whisper-finetune" in summary


def test_demo_pages_each_planted_job_within_its_window_and_nothing_else(
    demo: tuple[DemoResult, Path],
) -> None:
    """The Done-when of the job alarms: the backtest over the demo's hours pages each planted
    hang, NaN loss, loss jump and throughput collapse within its window, and nothing else."""
    result, _ = demo
    pages = job_pages(result.backtest, replay_window()[0])
    planted = {job.name: job for job in ALARM_JOBS if job.pages}
    # Besides them, the week's data-bound job (cli/demo/training.py: 0.8 s of each 2 s step
    # waiting for data) pages its hour's goodput, once.
    assert pages.pop("bert-data-bound").keys() == {"job-goodput-low"}
    assert set(pages) == set(planted)  # resnet-steady's save and evaluation page nobody
    for name, kinds in pages.items():
        due = planted[name].due_pages()
        assert set(kinds) == set(due), name
        for kind, minute in kinds.items():
            assert due[kind][0] <= minute <= due[kind][1], (name, kind, minute)
    jobs = [r for r in result.backtest if r.spec.kind.startswith("job-")]
    assert len(jobs) == 48 + 6  # and the six kinds' fleet counts, which page none of them
    assert sum(r.alarms_raised for r in jobs) == 7
    assert "llama-hangs     job-hung at minute 56" in result.summary()


def _nodes(job_index: int) -> str:
    """The two ranks' nodes of the demo's job alarm job ``job_index`` (cli/demo/jobs.py)."""
    return ", ".join(f"ip-10-0-4-{10 * job_index + rank}.ec2.internal" for rank in range(2))


def test_the_demo_explains_each_planted_failure(demo: tuple[DemoResult, Path]) -> None:
    """Every failure planted in the demo's week is classified with its cause and cited lines,
    read back from the week's own log groups beside everything else the demo wrote."""
    result, _ = demo
    assert [(f["resource"], f["evidence"]["cause"]) for f in result.failures] == [
        (f"job/{p.job}", p.cause) for p in PLANTED
    ]
    assert all(f["evidence"]["lines"] for f in result.failures)
    summary = result.summary()
    for p in PLANTED:
        assert any(line.split()[:2] == [p.job, p.cause] for line in summary.splitlines())
    # Each read by the analyzer's Monday run, none by the demo on its behalf.
    assert not any(f.get(DEMO_READ) for f in result.failures)
    # The Monday run, which covers the replayed hours, counts each as a failed run.
    failed = {f["resource"] for f in result.monday_findings if f["kind"] == "training_job_failures"}
    assert {f"job/{p.job}" for p in PLANTED} <= failed


@pytest.mark.promql_engine
def test_the_otel_run_joins_every_pod_exactly_and_equals_the_classic_run(
    demo: tuple[DemoResult, Path], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """`gpu-insights demo --mode otel`: the same weeks as the add-on sends them in OTel mode,
    read by the GPU analyzer with PromQL from a real engine; its findings, waste table and
    report files are the Classic run's, byte for byte."""
    binaries()  # skipped, saying how to get it, without Prometheus
    classic, _ = demo
    folder = tmp_path_factory.mktemp("otel")
    result = run_demo(
        out_dir=folder / "out", cdk_out=folder / "cdk.out", mode=ContainerInsightsMode.OTEL
    )
    assert result.otel_joins is not None
    pods, hours, misplaced = result.otel_joins
    assert misplaced == 0
    # Every hour a pod holds a GPU, by the week's plan and the replayed node's EMF (its lost
    # GPU's pod holds it until it is lost): each read back, on its node and GPU.
    planned = {
        (s.pod.name, s.hour)
        for hour in range(HOURS)
        for node, gpu in GPUS
        for s in [_behaviour(node, gpu, hour, DEMO_WEEK)]
        if s.pod is not None and s.power is not None
    }
    assert result.exporter is not None
    assert result.exporter.emf_path is not None
    replayed = {
        (pod.name, d["_aws"]["Timestamp"] // 3_600_000)
        for line in result.exporter.emf_path.read_text().splitlines()
        for d in [json.loads(line)]
        if d.get(DIM_NODE) == NODE and str(GpuMetric.POWER_DRAW) in d
        for pod in [replay_pod(int(d[DIM_GPU_INDEX]))]
        if pod is not None
    }
    assert (pods, hours) == (
        len({pod for pod, _ in planned | replayed}),
        len(planned) + len(replayed),
    )
    compared = compare(classic.out_dir, result.out_dir)
    assert [name for name, _ in compared] == list(COMPARED)
    assert all(equal for _, equal in compared), compared
    # The exporter's and the emitter's series went over OTLP: the report's alarm history is
    # the PromQL alarms' (one per kind, no shard), the same thirteen kinds as Classic's.
    assert result.exporter.otlp is not None
    assert result.exporter.otlp.requests
    kinds = alarm_kinds(result.out_dir)
    assert kinds == alarm_kinds(classic.out_dir)
    assert len(kinds) == 13  # the power brake's among them
    assert sorted({spec.key for spec, _ in result.promql_raised}) == kinds
    report = json.loads((result.out_dir / "report.json").read_text())
    assert not any("-shard-" in a["alarm"] for a in report["alarms"])
    # out/alarm-backtest.txt shows the PromQL alarms too, each ALARM with its page, as
    # `backtest --history` prints them: before, only the control plane's metric alarms.
    assert result.otel_backtest is not None
    raised = {a.spec.key for a in result.otel_backtest.alarms if a.pages}
    assert sorted(raised) == kinds
    backtest_text = (result.out_dir / "alarm-backtest.txt").read_text()
    for alarm in result.otel_backtest.alarms:
        assert f"\n{alarm.spec.key} [{alarm.spec.severity}] " in backtest_text
    assert f"      page: [CRITICAL] GPU lost on {NODE} GPU " in backtest_text
    assert result.training_findings == classic.training_findings
    assert result.training_findings  # the week has findings to compare
    assert result.addon_configuration["otelContainerInsights"]["enabled"] is True
    assert result.addon_configuration["containerInsights"]["enabled"] is False
    assert "every pod joined its node and GPU exactly" in result.summary()
    _assert_otel_dashboards(result, classic)


#: The dashboards whose bodies the demo writes as the Alarms stack builds them (the storage and
#: findings dashboards name the demo's buckets and its GPU alarms' ARNs, which synth names
#: otherwise).
SAME_AS_DEPLOYED = ("gpu-fleet", "gpu-node", "training")


def _deployed_bodies(cdk_out: Path) -> dict[str, Any]:
    """The Alarms template's dashboard bodies, their Fn::Join resolved in the demo's Region."""
    (path,) = cdk_out.glob("*-Alarms.template.json")
    resources = json.loads(path.read_text())["Resources"]

    def part(value: Any) -> str:
        if isinstance(value, str):
            return value
        if value == {"Ref": "AWS::Region"}:
            return "us-east-1"
        name = resources[value["Fn::GetAtt"][0]]["Properties"]["AlarmName"]
        return f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{name}"

    bodies = {}
    for resource in resources.values():
        if resource["Type"] == "AWS::CloudWatch::Dashboard":
            props = resource["Properties"]
            body = props["DashboardBody"]
            text = "".join(map(part, body["Fn::Join"][1])) if isinstance(body, dict) else body
            bodies[props["DashboardName"]] = json.loads(text)
    return bodies


def _assert_otel_dashboards(result: DemoResult, classic: DemoResult) -> None:
    """The OTel run writes the bodies its Alarms stack deploys (PromQL in chart widgets) and
    runs their PromQL widgets on its Prometheus: on the replayed node, the same figures as
    Classic's node_gpu_* widgets where both average, the GPU named by DCGM's index."""
    deployed = _deployed_bodies(result.cdk_out)
    prefix = f"gpu-insights-{DEMO_CLUSTER}-"
    for name in SAME_AS_DEPLOYED:
        written = json.loads((result.out_dir / "dashboards" / f"{prefix}{name}.json").read_text())
        assert written == deployed[prefix + name], name
    charts = {
        name: sum(w["type"] == "chart" for w in deployed[prefix + name]["widgets"])
        for name in SAME_AS_DEPLOYED
    }
    # With the exporter's and the emitter's OTLP sink their series are PromQL charts too; the
    # GPU-hour funnel's paid and allocated GPUs are two more (Kube State Metrics' capacity,
    # DCGM's pod-labelled series: dashboards/funnel.py).
    assert charts == {"gpu-fleet": 13, "gpu-node": 9, "training": 13}

    def shown(run: DemoResult) -> dict[str, list[tuple[str, float]]]:
        return {
            f"{view.name.removeprefix(prefix)}: {w.title}": [(x.label, x.value) for x in w.lines]
            for view in run.dashboard_views
            for w in view.widgets
        }

    otel, before = shown(result), shown(classic)
    utilization = otel["gpu-node: GPU utilization (%)"]
    labels = [label for label, _ in utilization]
    assert (labels[:3], sorted(labels)) == (["3", "2", "4"], [str(gpu) for gpu in range(8)])
    classic_utilization = before["gpu-node: GPU utilization (%)"]
    assert [label for label, _ in utilization] == [
        label.removeprefix("nvidia") for label, _ in classic_utilization
    ]
    assert [v for _, v in utilization] == pytest.approx(
        [v for _, v in classic_utilization], abs=1e-9
    )
    assert dict(utilization)["1"] == pytest.approx(1.708, abs=5e-4)  # the idle GPU
    # The thermal GPU leads, by DCGM's index where Classic names its device.
    hottest = otel["gpu-fleet: Hottest (C), 10 GPUs"]
    assert (hottest[0][0], len(hottest)) == (f"{NODE} 2", 8)
    assert before["gpu-fleet: Hottest (C), 10 GPUs"][0][0] == f"{NODE} nvidia2"
    # The idle GPU's 2 GiB, sent by DCGM in MiB and drawn in bytes.
    memory = dict(otel["gpu-node: Memory used (bytes)"])
    assert memory["1"] == dict(before["gpu-node: Memory used (bytes)"])["nvidia1"] == 2 * 2**30
    assert len(otel["gpu-node: Temperature (C)"]) == 8
    # The jobs' widgets read the emitters' OTLP series: the data-bound job leads, at its 40%.
    waits = otel["training: Data-wait share of the step (%), 10 jobs"]
    assert waits[0][0] == "bert-data-bound"
    assert waits[0][1] == pytest.approx(40.0, abs=0.1)
    assert [label for label, _ in otel["training: Step time (s)"]] == ["bert-data-bound"]
    # The cluster dashboard draws every widget: the control plane's AWS/EKS series and Kube
    # State Metrics' morning (a GPU pod pending, a GPU node not Ready then cordoned).
    (cluster,) = [v for v in result.dashboard_views if v.name == f"{prefix}cluster"]
    assert len(cluster.widgets) == 9
    assert [w.title for w in cluster.widgets if not w.series] == []
    # So do the GPU fleet and node dashboards: the power-braked GPU in both its widgets.
    braked, undrawn = _power_brake_and_undrawn(result)
    assert undrawn == []
    assert [[label for label, _ in lines] for lines in braked.values()] == [[f"{NODE} 4"], ["4"]]
    summary = result.summary()
    assert "GPU utilization (%): 3 95.88, 2 95.87, 4 95.83 [8 series]" in summary
    assert "out/dashboards holds the OTel mode's bodies" in summary


def test_the_otel_demo_without_prometheus_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no prometheus, no promtool
    status = main(
        ["demo", "--mode", "otel", "--out", str(tmp_path / "o"), "--cdk-out", str(tmp_path / "c")]
    )
    err = capsys.readouterr().err
    assert status == 4  # as a --history replay without it: a tool to install
    assert err.count("\n") == 1
    assert "apt-get install prometheus" in err


def test_one_figure_per_fact_in_every_table_finding_action_and_csv(
    demo: tuple[DemoResult, Path],
) -> None:
    """bert-data-bound's data-bound waste is one figure: each daily finding a whole UTC day
    (48 GPU-hours, $131.88, $4,011 a month at that pace); the week's the data loading its
    goodput measured over the 336 GPU-hours its pods held (134.37 GPU-hours, $924.46) in
    goodput.csv, the funnel, its job row, its action and the showback CSV (before: 131.17,
    134.37 and 134.18); whisper-finetune, whose steps ran outside the emitter's loop on five
    working GPUs, has no goodput (before: 0% of 1.6 GPU-hours on "1 GPU", held with no steps);
    the capacity no pod asked for names the headline's GPU-hours no pod held; a run at 07:00
    no longer prices the 17 hours since the last midnight as its "1-day lookback"."""
    result, _ = demo
    report = check_one_figure_per_fact(result.out_dir)
    bert = [
        f["evidence"]
        for f in result.training_findings + result.monday_findings
        if f["kind"] == "training_data_bound"
    ]
    # Saturday's (the Sunday 23:00 run's) and Sunday's (the Monday 07:00 run's): each a day of
    # 48 stepping GPU-hours; the week's $923.16 is Sunday's $131.88 a day for seven days.
    assert [e["gpu_hours"] for e in bert] == [48, 48]
    assert round(bert[-1]["waste_in_lookback_usd"] * 7, 2) == 923.16
    # The funnel's productive stage is each job's goodput over what it held (60% of the 336
    # GPU-hours the attribution says it held, as the goodput files now take them), its data
    # loading the same share (40%): docs/goodput.md.
    (row,) = [w for w in report["funnel"]["workloads"] if w["workload"] == "bert-data-bound"]
    assert row["productive_source"] == "job goodput"
    assert row["badput"]["data_loading"] == {"gpu_hours": 134.3689, "usd": 924.46}
    assert row["productive"]["gpu_hours"] == 201.5533
    goodput = {r["job"]: r for r in report["goodput"]["jobs"]}
    assert round(goodput["bert-data-bound"]["data_loading_gpu_hours"], 2) == 134.37
    assert "whisper-finetune" not in goodput
    (whisper,) = [w for w in report["funnel"]["workloads"] if w["workload"] == "whisper-finetune"]
    assert whisper["badput"] == {"no_step_or_token_signal": {"gpu_hours": 7.0, "usd": 48.16}}
    assert not [
        f
        for f in result.training_findings + result.monday_findings
        if f["kind"] == "training_low_goodput" and f["resource"] == "job/whisper-finetune"
    ]
    fleet = {stage: v["gpu_hours"] for stage, v in report["funnel"]["fleet"].items()}
    # What EC2 bills (node_gpu_limit, the instance type's GPUs): the week's three p5.48xlarge's
    # eight GPUs all week, and the replayed one's eight for its two hours.
    assert fleet == {"paid": 4048.0, "allocated": 919.6, "active": 812.0, "productive": 575.7179}
    drops = report["funnel"]["drops"]
    # The GPUs no pod asked for: paid less allocated, all on the p5.48xlarge nodes.
    assert drops["not_allocated"]["by_group"] == {
        "p5.48xlarge": {"gpu_hours": 3128.4, "usd": 21523.39}
    }
