"""Writes ``otel-node.jsonl``, the history file the ``--history`` tests replay: drawn from the
demo's OTel series (cli/demo/otel_alarms.py), labels as the add-on sets them, in the format
docs/history.md documents (one query_range response a metric, one a line, as the export query
writes them; the exporter's XID log lines beside them).

What it holds, from 12:30 UTC on 2026-11-30 for two hours at the exporter's one-minute cycle:
the demo's replayed node's eight GPUs (0 busy with its XID 13 at 36 min; 1 held by a pod that
does no work; 2 thermally throttled from 13:00; 3 failing: an uncorrectable ECC error and XID
48 at 86 min, off the bus with XID 79 at 96 min; 4 power-braked from 42 to 90 min; 5-7 held
by no pod, idle), Kube State Metrics' GPU
capacity of the node, and two of the demo's alarm jobs' emitters (``resnet-steady``;
``llama-hangs``, hung from 45 min). Before it, the eight hours to 12:00 of two of the demo's
week's training jobs, two ranks each, as their emitters send them (cli/demo/training.py:
``bert-data-bound`` waits 0.8 s of each 2 s step for data; ``llama-slow-checkpoint`` saves for
420 s every 30 minutes). The demo's windows move with the clock; the file's are fixed (shifted
by whole hours to ``START`` and ``TRAINING_END``), so no test depends on the day it runs.

Run ``python -m tests.data.history.make`` to write it again.
"""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from cli.backtest.promql_history import HistorySeries, to_response
from cli.demo import otel_alarms, training
from cli.demo.exporter import REPLAYED
from cli.demo.jobs import emitter_samples
from cli.demo.otlp import otlp_samples
from cli.demo.promql import Sample
from cli.demo.storage import END as TRAINING_DEMO_END
from gpu_insights_agent.contract.metrics import OTLP_JOB
from lambdas.shared.dcgm import CLOUDWATCH as L

CLUSTER: Final = training.CLUSTER
START: Final = datetime(2026, 11, 30, 12, 30, tzinfo=UTC).timestamp()
TRAINING_END: Final = datetime(2026, 11, 30, 12, tzinfo=UTC).timestamp()
JOBS: Final = ("resnet-steady", "llama-hangs")
TRAINING_JOBS: Final = ("bert-data-bound", "llama-slow-checkpoint")
PATH: Final = Path(__file__).with_name("otel-node.jsonl")


def _kept(sample: Sample, jobs: tuple[str, ...]) -> bool:
    _, labels, _, _ = sample
    if OTLP_JOB in labels:
        return labels[OTLP_JOB] in jobs
    return labels.get(L.node) == REPLAYED.name


def main() -> None:
    shift = START - otel_alarms.START
    hours = otel_alarms.run_exporters(CLUSTER)
    node = [
        *otlp_samples(hours.requests),
        *otel_alarms.capacity_samples(CLUSTER),
        *emitter_samples(CLUSTER, otel_alarms.START, every=True),
    ]
    training_start = TRAINING_DEMO_END - training.HOURS * 3600
    jobs = training.otlp_samples((training_start, TRAINING_DEMO_END))
    series: dict[tuple[str, tuple[tuple[str, str], ...]], list[tuple[float, float]]] = {}
    # One series a metric and label set, each sample shifted by its window's whole hours.
    for samples, kept, by in (
        (node, JOBS, shift),
        (jobs, TRAINING_JOBS, TRAINING_END - TRAINING_DEMO_END),
    ):
        for sample in samples:
            if _kept(sample, kept):
                metric, labels, at, value = sample
                key = (metric, tuple(sorted(labels.items())))
                series.setdefault(key, []).append((round(at + by, 3), value))
    by_metric: dict[str, list[HistorySeries]] = {}
    for (metric, pairs), points in sorted(series.items()):
        by_metric.setdefault(metric, []).append(
            HistorySeries(metric, dict(pairs), tuple(sorted(points)))
        )
    lines = [json.dumps(to_response(s), separators=(",", ":")) for s in by_metric.values()]
    for document in hours.xid_lines:
        if document["NodeName"] == REPLAYED.name:
            # Every time the line holds moves with it: its stamp, the event's, the pods' seen.
            document["_aws"]["Timestamp"] += int(shift * 1000)
            event = datetime.fromisoformat(document["EventTime"]) + timedelta(seconds=shift)
            document["EventTime"] = event.isoformat()
            if "PodsLastSeenMs" in document:
                document["PodsLastSeenMs"] += int(shift * 1000)
            lines.append(json.dumps(document, separators=(",", ":")))
    PATH.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
