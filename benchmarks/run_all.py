"""``make bench``: every benchmark in one run, then one table of figure, goal and ratio.

Ratios are measured side by side in the same run (absolute times on a shared machine drift):
a ratio under 1 meets a "less than" goal; for API calls the goal is the floor, so 1.00 is best.
"""

import logging
import os
import tempfile
import time
from dataclasses import dataclass

from agent.cost import estimate
from benchmarks import exporter, storage_analyzer, training_analyzer, training_emitter


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
    """Wall time of synthesizing the whole example app, cdk-nag included."""
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    from aws_cdk import App

    from cdk.app import build
    from cdk.settings import Settings

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as outdir:
        app = App(outdir=outdir)
        build(app, Settings())
        app.synth()
    return time.perf_counter() - started


def main() -> None:
    logging.disable(logging.WARNING)
    rows: list[Row] = []
    s = storage_analyzer.main()
    rows += [
        Row("storage: GetMetricData calls vs the floor", s["calls"], s["floor_calls"], "calls"),
        Row(
            "storage: calls of one call per metric vs ours",
            s["one_per_metric_calls"],
            s["calls"],
            "calls",
        ),
        Row("storage: CPU, 10,000 volumes x 14 days", s["cpu_s"], 10.0, "s"),
        Row("storage: peak memory", s["peak_mib"], 512.0, "MiB"),
    ]
    t = training_analyzer.main()
    rows += [
        Row("training: GetMetricData calls vs the floor", t["calls"], t["floor_calls"], "calls"),
        Row("training: CPU, 1,000 jobs x 14 days", t["cpu_s"], None, "s"),
        Row("training: peak memory", t["peak_mib"], 512.0, "MiB"),
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
    w = training_emitter.main()
    rows += [
        Row("emitter: overhead per step", w["per_step_overhead_us"], None, "us"),
        Row("emitter: share of a 10 ms step", 100 * w["share_of_10ms_step"], 1.0, "%"),
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
    rows.append(Row("cdk synth of the whole app", synth_seconds(), None, "s"))
    cost = estimate(nodes=1, gpus_per_node=8)
    rows += [
        Row("custom metrics per 8-GPU node", cost.exporter_metrics, None, "metrics"),
        Row(
            "exporter $/month per node vs Container Insights GPU part",
            cost.exporter_usd,
            cost.ci_usd,
            "USD",
        ),
    ]
    print()
    print(f"{'figure':<58} {'measured':>12} {'goal':>12} {'ratio':>7}")
    for row in rows:
        goal = "" if row.goal is None else f"{row.goal:,.2f}"
        print(f"{row.figure:<58} {row.measured:>12,.2f} {goal:>12} {row.ratio:>7}  {row.unit}")


if __name__ == "__main__":
    main()
