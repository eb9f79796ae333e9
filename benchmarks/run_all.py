"""``make bench``: every benchmark in one run, then one table of figure, goal and ratio.

Ratios are measured side by side in the same run (absolute times on a shared machine drift):
a ratio under 1 meets a "less than" goal; for API calls the goal is the floor, so 1.00 is best.
"""

import logging
import os
import tempfile
import time
from dataclasses import dataclass

from benchmarks import (
    alarms,
    analyze_cli,
    attribution,
    cost_estimate,
    exporter,
    fail_slow,
    failure_causes,
    failure_logs,
    fan_out,
    goodput_replay,
    otlp_bytes,
    page_faults,
    serving_drift,
    storage_analyzer,
    training_analyzer,
    training_emitter,
    webhook_faults,
)
from cli.cost.exporter import (
    OTLP_BYTES_PER_DATAPOINT,
    TRAINING_OTLP_BYTES_PER_DATAPOINT,
    estimate,
)
from lambdas.notifier.config import FUNCTION_TIMEOUT_S
from lambdas.shared.shards import STORAGE, TRAINING, TRAINING_SHARD_JOBS


@dataclass(frozen=True)
class Row:
    figure: str
    measured: float
    goal: float | None
    unit: str

    @property
    def ratio(self) -> str:
        return "" if not self.goal else f"{self.measured / self.goal:.2f}"


def synth_seconds() -> float:
    """Wall time of synthesizing the whole app (the demo's cluster), cdk-nag included."""
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    from aws_cdk import App

    from cdk.app import build
    from cdk.settings import Settings
    from cli.demo.storage import DEMO_CLUSTER

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as outdir:
        app = App(outdir=outdir)
        build(app, Settings(cluster_name=DEMO_CLUSTER))
        app.synth()
    return time.perf_counter() - started


def _goodput_rows() -> list[Row]:
    """The goodput replay's errors against its known truth, in points of the job's total."""
    replay = goodput_replay.main()
    return [
        Row("goodput replay: goodput vs the truth", 100 * abs(replay.goodput_measured
            - replay.goodput_truth), goodput_replay.GOAL_POINTS, "points"),
        Row("goodput replay: largest category's error", max(replay.errors.values()),
            goodput_replay.GOAL_POINTS, "points"),
    ]  # fmt: skip


def _otlp_rows() -> list[Row]:
    """Bytes per OTLP datapoint, billed against the cost model's figure, and on the wire."""
    o = otlp_bytes.main()
    node, rank = o["exporter"], o["emitter"]
    return [
        Row("OTLP: exporter bytes billed a datapoint vs the cost model",
            node["billed_bytes_per_datapoint"], OTLP_BYTES_PER_DATAPOINT, "bytes"),
        Row("OTLP: exporter bytes on the wire a datapoint", node["wire_bytes_per_datapoint"],
            None, "bytes"),
        Row("OTLP: emitter bytes billed a datapoint vs the cost model",
            rank["billed_bytes_per_datapoint"], TRAINING_OTLP_BYTES_PER_DATAPOINT, "bytes"),
        Row("OTLP: emitter JSON bytes on the wire a datapoint", rank["wire_bytes_per_datapoint"],
            None, "bytes"),
    ]  # fmt: skip


def _cost_estimate_rows() -> list[Row]:
    """``cost-estimate`` at 62,500 nodes x 8 GPUs in each mode, wall and CPU seconds."""
    fleet = f"{cost_estimate.NODES:,} nodes x {cost_estimate.GPUS_PER_NODE} GPUs"
    return [
        row
        for r in cost_estimate.main()
        for row in (
            Row(f"cost-estimate: {fleet}, {r.mode}", r.seconds, cost_estimate.GOAL_S, "s"),
            Row(f"cost-estimate: {fleet}, {r.mode}, CPU", r.cpu_seconds, cost_estimate.GOAL_S, "s"),
        )
    ]


def pager_rows() -> list[Row]:
    """The pager's fault-injection figures (benchmarks/page_faults.py)."""
    rows: list[Row] = []
    pager = page_faults.main()
    x = pager["xid_batch"]
    rows += [
        Row(f"pager: XID lines to the log group, OTLP endpoint {r.fault}", r.delivered, r.xids,
            "XIDs")
        for r in pager["otlp"]
    ]  # fmt: skip
    rows += [
        Row("pager: OTLP batches sent again after a 400 or 404",
            sum(r.resent_after_refusal or 0 for r in pager["otlp"]), None, "batches"),
        Row("pager: SNS pages in the first invocation, webhook hanging", pager["hang"].sns_first,
            pager["hang"].pages, "pages"),
        Row("pager: real page after a future-dated forgery", pager["forgery"]["real_pages"], 1,
            "pages"),
        Row("pager: webhook answering 200 after 6 s: times shown", pager["late"].shown, 2,
            "posts"),
        Row("pager: webhook answering 200 after 6 s: notifier-failing",
            pager["late"].notifier_failing, None, "events"),
    ]  # fmt: skip
    rows += [
        Row("pager: XID pages delivered, 1,000 documents 1% malformed", x["pages"], x["good"],
            "pages"),
        Row("pager: pages re-sent when every batch is delivered again",
            x["resent"] + x["duplicates"], None, "pages"),
        Row("pager: malformed documents refused and counted", x["refused_counted"],
            x["malformed"], "docs"),
        Row("pager: forged host-log confirmations that confirmed",
            pager["forged_confirmation"]["confirmed"], None, "pages"),
        Row("pager: pages of one XID across a window boundary",
            pager["window_boundary"]["pages"], 1, "pages"),
    ]  # fmt: skip
    return rows


def _fail_slow_rows() -> list[Row]:
    """The fail-slow replay's detection latency and culprit precision and recall."""
    fs = fail_slow.main()
    return [
        Row("fail-slow: detection after onset, p50", fs.percentile(0.5), None, "min"),
        Row("fail-slow: detection after onset, p95", fs.percentile(0.95),
            fail_slow.TARGET_P95_MINUTES, "min"),
        Row("fail-slow: culprit precision", 100 * fs.precision, 100 * fail_slow.TARGET_SHARE, "%"),
        Row("fail-slow: culprit recall", 100 * fs.recall, 100 * fail_slow.TARGET_SHARE, "%"),
        Row("fail-slow: false pages (healthy controls included)", fs.false_pages, None, "pages"),
        # Classic's page reads no SM clock and no rank's own data wait: printed, no target.
        Row("fail-slow: Classic page's culprit precision", 100 * fs.classic.precision, None, "%"),
        Row("fail-slow: Classic page's culprit recall", 100 * fs.classic.recall, None, "%"),
    ]  # fmt: skip


def _drift_rows() -> list[Row]:
    """Serving drift's false alarms per model-day and hours to detect a planted shift."""
    d = serving_drift.main()
    rows = [
        Row(f"serving drift: false alarms, {rate:,} requests an hour", 100 * share,
            100 * serving_drift.TARGET_FALSE_ALARMS, "% days")
        for rate, share in d.false_alarms.items()
    ]  # fmt: skip
    rows += [
        Row(f"serving drift: {x.case}, {x.rate:,} requests an hour, log-sd {x.sigma:g}: "
            "hours to detect, p95", x.percentile(0.95),
            serving_drift.TARGET_HOURS if x.rate >= 1_000 and x.sigma == serving_drift.SIGMA
            else None, "h")
        for x in d.detections
    ]  # fmt: skip
    return rows


def main() -> None:
    logging.disable(logging.WARNING)
    rows: list[Row] = []
    s = storage_analyzer.main()
    for plan, f in s.items():
        label = f"storage ({plan}, real client)"
        rows += [
            Row(f"{label}: calls vs the floor", f["calls"], f["floor_calls"], "calls"),
            Row(f"{label}: datapoints vs the floor", f["datapoints"], f["floor_datapoints"], "pts"),
            Row(f"{label}: CPU, 10,000 volumes x 14 days", f["cpu_s"], 60.0, "s"),
            Row(f"{label}: share of CPU parsing", 100 * f["parse_s"] / f["cpu_s"], None, "%"),
            Row(f"{label}: peak RSS", f["peak_mib"], float(STORAGE.memory_mb), "MiB"),
            Row(f"{label}: GetMetricData per run", f["usd"], None, "USD"),
        ]
    c = analyze_cli.main()
    volume_days = analyze_cli.VOLUMES * storage_analyzer.DAYS
    for session, f in c.items():
        rows.append(
            Row(
                f"analyze storage (command line, {session} session): CPU, "
                f"{analyze_cli.VOLUMES:,} volumes x 14 days, vs the function's sizing",
                f["cpu_s"],
                STORAGE.item.cpu_s_per_day * volume_days,
                "s",
            )
        )
    f = s["floor"]
    rows.append(
        Row(
            f"storage (floor): second pass, {f['second_pass_volumes']:,.0f} volumes, vs floor",
            f["second_pass_datapoints"],
            f["floor_second_pass_datapoints"],
            "pts",
        )
    )
    t = training_analyzer.main()
    for plan in ("today", "floor"):
        f = t[plan]
        label = f"training ({plan}, real client)"
        rows += [
            Row(f"{label}: calls vs the floor", f["calls"], f["floor_calls"], "calls"),
            Row(f"{label}: datapoints vs the floor", f["datapoints"], f["floor_datapoints"], "pts"),
            Row(f"{label}: CPU, 1,000 jobs x 14 days", f["cpu_s"], 20.0, "s"),
            Row(f"{label}: share of CPU parsing", 100 * f["parse_s"] / f["cpu_s"], None, "%"),
            Row(f"{label}: peak RSS", f["peak_mib"], float(TRAINING.memory_mb), "MiB"),
            Row(f"{label}: GetMetricData per run", f["usd"], None, "USD"),
        ]
    rows.append(
        Row(
            f"training: peak RSS of the default shard ({TRAINING_SHARD_JOBS:,} jobs) vs memory",
            t["shard"]["peak_mib"],
            float(TRAINING.memory_mb),
            "MiB",
        )
    )
    fan = fan_out.main(s["floor"], t["floor"])
    rows += [
        Row(
            "fan-out: handler's modes merge to the single run's file",
            float(fan["same"]),
            1.0,
            "bool",
        ),
        Row("fan-out: 100,000 volumes end to end, shards", fan["big"]["shards"], None, "shards"),
        Row(
            "fan-out: 100,000 volumes end to end, CPU (all invocations)",
            fan["big"]["cpu_s"],
            None,
            "s",
        ),
        Row(
            "fan-out: 100,000 volumes end to end, slowest shard CPU",
            fan["big"]["slowest_shard_cpu_s"],
            None,
            "s",
        ),
        Row(
            "fan-out: 100,000 volumes end to end, simulated wall",
            fan["big"]["simulated_wall_s"],
            None,
            "s",
        ),
        Row("fan-out: 100,000 volumes simulated, shards", fan["volumes"].shards, None, "shards"),
        Row("fan-out: 100,000 volumes simulated wall", fan["volumes"].wall_s, None, "s"),
        Row(
            "fan-out: 1,000 jobs in shards merge to the single run",
            fan["training"]["same"],
            1.0,
            "bool",
        ),
        Row("fan-out: 10,000 jobs simulated, shards", fan["jobs"].shards, None, "shards"),
        Row("fan-out: 10,000 jobs simulated wall", fan["jobs"].wall_s, None, "s"),
    ]
    e = exporter.main()
    rows += [
        Row("exporter: CPU per GPU per cycle", e["cpu_ms_per_gpu_per_cycle"], 1.0, "ms"),
        Row(
            "exporter: heap after 24 h vs after 1 h",
            e["heap_blocks_after_24h"],
            e["heap_blocks_after_1h"],
            "blocks",
        ),
    ]
    rows += _otlp_rows() + _fail_slow_rows() + _drift_rows()
    w = training_emitter.main()
    rows += [
        Row("emitter: overhead per step", w["per_step_overhead_us"], None, "us"),
        Row("emitter: share of a 10 ms step", 100 * w["share_of_10ms_step"], 1.0, "%"),
    ]
    a = alarms.main()
    rows += [
        Row("alarms: GPUs evaluated of a 10,000-GPU fleet", a["gpus_evaluated"], a["gpus"], "GPUs"),
        Row("alarms: Metrics Insights alarms vs the quota", a["insights_alarms"], 200, "alarms"),
        Row("alarms: most series one alarm returns vs 500", a["most_series"], 500, "series"),
        Row("alarms: evaluations PARTIAL_DATA", a["partial"], None, "evaluations"),
        Row("alarms: injected faults named on their GPU", a["faults_named"], a["faults"], "GPUs"),
        Row("alarms: backtest time, 10,000 GPUs x 75 min", a["seconds"], None, "s"),
        Row("alarms: peak memory of the run", a["peak_mib"], 512.0, "MiB"),
    ]
    f = training_emitter.faults()
    for fault, words in (
        ("bare", "bare loop, no emitter"),
        ("dns_hangs", "DNS hangs"),
        ("agent_refuses", "agent refuses"),
        ("agent_never_reads", "agent accepts, never reads"),
    ):
        limit = None if fault == "bare" else 1.0
        rows += [
            Row(f"emitter: worst step delay, {words}", f[f"{fault}_worst_ms"], limit, "ms"),
            Row(f"emitter: p99.9 step delay, {words}", f[f"{fault}_p999_ms"], limit, "ms"),
        ]
    g = attribution.main(nodes=1000)
    rows += [
        Row("attribution: GPU-hours of a week of 1,000 8-GPU nodes", g["gpu_hours"], None, "h"),
        Row("attribution: held-not-working GPU-hours found", g["not_working"], 168_000, "h"),
        Row("attribution: CPU for the week", g["cpu_seconds"], None, "s"),
        Row("attribution: peak Python memory", g["peak_mib"], 1024.0, "MiB"),
    ]
    fc = failure_causes.main()
    right = sum(r for r, _ in fc.accuracy.values())
    total = sum(t for _, t in fc.accuracy.values())
    rows += [
        Row(
            "failure causes: corpus samples classified as sourced", 100 * right / total, 100.0, "%"
        ),
        *(
            Row(f"failure causes: {cause} classified as sourced", r, t, "samples")
            for cause, (r, t) in fc.accuracy.items()
        ),
        Row("failure causes: lines/CPU-s, failure lines only", fc.lines_per_s_failures, None, "/s"),
        Row("failure causes: lines/CPU-s, lines naming no cause", fc.lines_per_s_quiet, None, "/s"),
    ]
    fl = failure_logs.main()
    for r in fl.reads:
        rows += [
            Row(f"failure logs, {r.label}: failed jobs a day", r.failed_per_day, None, "jobs"),
            Row(f"failure logs, {r.label}: read a job by name", r.read_bytes_per_job / 2**20,
                None, "MiB"),
            Row(f"failure logs, {r.label}: Logs Insights would scan a job",
                r.insights_bytes_per_job / failure_logs.GB, None, "GB"),
            Row(f"failure logs, {r.label}: Logs Insights a day", r.insights_usd_per_day, None,
                "USD"),
        ]  # fmt: skip
    rows += [
        Row(
            f"alarms at {s.fleet_gpus:,} GPUs: Metrics Insights ({s.job_alarms} for jobs) vs quota",
            s.insights_alarms,
            s.quota,
            "alarms",
        )
        for s in fl.alarms
    ]
    timed = fl.analysis
    rows += [
        Row(f"failure analysis: {timed.jobs:,} jobs x 24 h, CPU", timed.cpu_s, None, "s"),
        Row(f"failure analysis: of it, classifying {timed.failed:,} failed jobs' logs",
            timed.classify_cpu_s, None, "s"),
    ]  # fmt: skip
    hooks = webhook_faults.main()
    for h in hooks:
        rows += [
            Row(f"webhook, {h.fault}: pages delivered of {h.pages}", h.delivered, h.pages, "pages"),
            Row(f"webhook, {h.fault}: claims left held", h.claims_held, None, "claims"),
        ]
    rows += [
        Row("webhook faults: pages lost", sum(h.lost for h in hooks), None, "pages"),
        Row(
            "webhook: longest delivery (slow drip) vs the function's timeout",
            max(h.longest_delivery_s for h in hooks),
            float(FUNCTION_TIMEOUT_S),
            "s",
        ),
    ]
    rows += pager_rows()
    rows += [
        *_goodput_rows(),
        Row("cdk synth of the whole app", synth_seconds(), None, "s"),
        *_cost_estimate_rows(),
    ]
    cost = estimate(nodes=1, gpus_per_node=8)
    rows += [
        Row(
            "custom metrics per 8-GPU node, after vs before",
            cost.exporter_metrics,
            cost.before.metrics,
            "metrics",
        ),
        Row(
            "exporter: billed series per 8-GPU node, measured (simulated day)",
            e["billed_series_per_node"],
            None,
            "metrics",
        ),
        Row(
            "exporter $/month per 8-GPU node, after vs before",
            cost.per_node_usd,
            cost.before_per_node_usd,
            "USD",
        ),
        Row("exporter $/month per 8-GPU node vs the goal", cost.per_node_usd, 14.0, "USD"),
        Row(
            "exporter $/month per node vs Container Insights GPU part",
            cost.exporter_usd,
            cost.ci_usd,
            "USD",
        ),
    ]
    print()
    print(f"{'figure':<66} {'measured':>12} {'goal':>12} {'ratio':>7}")
    for row in rows:
        goal = "" if row.goal is None else f"{row.goal:,.2f}"
        print(f"{row.figure:<66} {row.measured:>12,.2f} {goal:>12} {row.ratio:>7}  {row.unit}")


if __name__ == "__main__":
    main()
