"""What reading failed jobs' logs costs a day, the job alarms against their quota, and the
failure analysis's time at 10,000 jobs.

Log reads: the analyzer reads a failed job's pods' streams and its nodes' host and dataplane
streams by name (GetLogEvents: no per-byte charge) over ``failure_window`` of the hour whose
``job_failed`` count rose, at most ``MAX_EVENTS`` events. A Logs Insights query instead scans
every byte of the three log groups in the window, at ``prices.LOGS_INSIGHTS`` a GB. Log volumes
are stated, not measured (``*_BYTES_PER_HOUR``): a chatty training container and a GPU node's
kernel, syslog and kubelet/containerd journals.

Analysis time: the training analyzer's pure functions on generated plain data, no AWS: each
job's hourly series through ``analyze_job``, each failed job's log (a day's quiet lines, then a
failure from the corpus) through the classifier, and every failure's signature grouped.
"""

import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from cdk.alarms.catalog import alarm_sizing
from cdk.alarms.sizing import AlarmSizing
from cdk.settings import Settings
from cli.cost.prices import LOGS_INSIGHTS
from cli.demo.failures import planted
from cli.demo.storage import DEMO_CLUSTER
from lambdas.training_analyzer.analysis import (
    JobData,
    JobSeries,
    RankStats,
    analyze_job,
)
from lambdas.training_analyzer.failure_causes import (
    Occurrence,
    classify_text,
    group_signatures,
)
from lambdas.training_analyzer.failure_logs import MAX_EVENTS, failure_window
from tests.unit.reference_data import failure_log_corpus

#: Stated log volumes, bytes an hour: a training container's stdout and stderr (progress
#: lines, warnings), a node's host log group (dmesg, messages, secure) and its dataplane
#: group (kubelet, containerd).
APP_BYTES_PER_POD_HOUR: Final = 5 * 2**20
HOST_BYTES_PER_NODE_HOUR: Final = 1 * 2**20
DATAPLANE_BYTES_PER_NODE_HOUR: Final = 2 * 2**20
#: Bytes of one event as Fluent Bit ships it (the JSON record with its kubernetes object).
EVENT_BYTES: Final = 400
GB: Final = 10**9

#: The 2,000-GPU fleet: 250 nodes of 8 GPUs, one pod per node; jobs of 2 nodes; a stated
#: share of them failing a day. (Meta's Llama 3 paper counts 466 interruptions in 54 days on
#: 16,384 GPUs, about one a day at 2,000 GPUs; a multi-team fleet fails more often of its
#: own code and memory: 20% of its jobs a day is stated here.)
FLEET_NODES: Final = 250
FLEET_GPUS_PER_NODE: Final = 8
FLEET_NODES_PER_JOB: Final = 2
FLEET_FAILED_SHARE: Final = 0.20

#: The analysis-time run.
JOBS: Final = 10_000
HOURS: Final = 24
RANKS: Final = 4
FAILED_SHARE: Final = 0.10
QUIET_LINES: Final = 200


@dataclass(frozen=True)
class LogReads:
    """One size of cluster: its failed jobs a day and what reading their logs costs."""

    label: str
    failed_per_day: float
    pods_per_job: int
    nodes_per_job: int
    cluster_nodes: int
    cluster_pods: int
    window_s: float

    @property
    def read_bytes_per_job(self) -> float:
        """What GetLogEvents returns for one failed job: its streams over the window, at
        most ``MAX_EVENTS`` events."""
        hours = self.window_s / 3600
        streams = hours * (
            self.pods_per_job * APP_BYTES_PER_POD_HOUR
            + self.nodes_per_job * (HOST_BYTES_PER_NODE_HOUR + DATAPLANE_BYTES_PER_NODE_HOUR)
        )
        return min(streams, MAX_EVENTS * EVENT_BYTES)

    @property
    def insights_bytes_per_job(self) -> float:
        """What a Logs Insights query over the three groups scans for one failed job: every
        pod's and node's bytes in the window."""
        hours = self.window_s / 3600
        return hours * (
            self.cluster_pods * APP_BYTES_PER_POD_HOUR
            + self.cluster_nodes * (HOST_BYTES_PER_NODE_HOUR + DATAPLANE_BYTES_PER_NODE_HOUR)
        )

    @property
    def insights_usd_per_day(self) -> float:
        return self.failed_per_day * self.insights_bytes_per_job / GB * LOGS_INSIGHTS.usd


def _window_s() -> float:
    start, end = failure_window(0.0, 3600.0)  # the hour whose job_failed rose
    return end - start


def log_reads() -> list[LogReads]:
    jobs = planted()
    demo_nodes = {n for job in jobs for n in job.nodes}
    demo_pods = sum(len(job.pods) for job in jobs)
    fleet_jobs = FLEET_NODES // FLEET_NODES_PER_JOB
    return [
        LogReads(
            f"demo ({len(jobs)} failed jobs a day)",
            len(jobs),
            round(demo_pods / len(jobs)),
            round(len(demo_nodes) / len(jobs)) or 1,
            len(demo_nodes),
            demo_pods,
            _window_s(),
        ),
        LogReads(
            f"{FLEET_NODES * FLEET_GPUS_PER_NODE:,}-GPU fleet",
            fleet_jobs * FLEET_FAILED_SHARE,
            FLEET_NODES_PER_JOB,
            FLEET_NODES_PER_JOB,
            FLEET_NODES,
            FLEET_NODES,
            _window_s(),
        ),
    ]


def alarms() -> list[AlarmSizing]:
    """The deployed alarms' Metrics Insights count at the demo's size and at 2,000 GPUs."""
    settings = Settings(cluster_name=DEMO_CLUSTER)
    return [
        alarm_sizing(settings.alarm_settings(), gpus)
        for gpus in (settings.fleet_gpus, FLEET_NODES * FLEET_GPUS_PER_NODE)
    ]


def _series(j: int, start: float) -> JobData:
    hours = [start + h * 3600 for h in range(HOURS)]
    step = 1.0 + (j % 7) / 10
    wait = 0.05 + (j % 5) / 10
    series = JobSeries(
        job=f"job-{j:05d}",
        steps=dict.fromkeys(hours, 3600 / step),
        step_time=dict.fromkeys(hours, step),
        data_wait=dict.fromkeys(hours, wait),
        samples_per_second={h: 64 / step * (0.7 if j % 11 == 0 and i > 12 else 1.0)
                            for i, h in enumerate(hours)},
        checkpoint_save={hours[6]: 30.0 + j % 400},
        checkpoint_saves={hours[6]: 1.0},
        failures={hours[-1]: 1.0} if j % round(1 / FAILED_SHARE) == 0 else {},
    )  # fmt: skip
    ranks = [
        RankStats(str(r), 3600 / step * HOURS, step * (1.5 if j % 13 == 0 and r == 3 else 1.0))
        for r in range(RANKS)
    ]
    return JobData(series, ranks, baseline_samples_per_second=64 / step, lookback_hours=HOURS)


def _failure_logs() -> list[str]:
    corpus = failure_log_corpus()
    quiet = [line for s in corpus if s.cause == "unknown" for line in s.lines if line]
    failures = [s for s in corpus if s.cause != "unknown"]
    head = "\n".join(quiet[i % len(quiet)] for i in range(QUIET_LINES))
    return [head + "\n" + s.text for s in failures]


@dataclass(frozen=True)
class AnalysisTime:
    jobs: int
    failed: int
    findings: int
    signatures: int
    cpu_s: float
    classify_cpu_s: float


def analysis_time() -> AnalysisTime:
    start = 1_764_000_000.0
    data = [_series(j, start) for j in range(JOBS)]
    logs = _failure_logs()
    began = time.process_time()
    findings = sum(len(analyze_job(d)) for d in data)
    failed = [d.series.job for d in data if d.series.failures]
    classify_began = time.process_time()
    occurrences = []
    for i, job in enumerate(failed):
        diagnosis = classify_text(logs[i % len(logs)])
        occurrences.append(
            Occurrence(
                diagnosis.signature,
                diagnosis.cause.value,
                job,
                f"node-{i % FLEET_NODES:03d}",
                datetime.fromtimestamp(start + i, UTC),
            )
        )
    groups = group_signatures(occurrences)
    ended = time.process_time()
    return AnalysisTime(
        JOBS, len(failed), findings, len(groups), ended - began, ended - classify_began
    )


@dataclass(frozen=True)
class Result:
    reads: list[LogReads]
    alarms: list[AlarmSizing]
    analysis: AnalysisTime


def main() -> Result:
    return Result(log_reads(), alarms(), analysis_time())


if __name__ == "__main__":
    result = main()
    for r in result.reads:
        print(
            f"{r.label}: {r.failed_per_day:g} failed jobs/day, read "
            f"{r.read_bytes_per_job / 2**20:,.1f} MiB a job by name (GetLogEvents, no scan "
            "charge); Logs Insights would scan "
            f"{r.insights_bytes_per_job / GB:,.3f} GB a job, ${r.insights_usd_per_day:,.4f}/day "
            f"at {LOGS_INSIGHTS.label()}"
        )
    for sizing in result.alarms:
        print(sizing.line())
    a = result.analysis
    print(
        f"{a.jobs:,} jobs x {HOURS} h ({a.failed:,} failed): {a.findings:,} findings, "
        f"{a.signatures} signatures, {a.cpu_s:.1f} s CPU ({a.classify_cpu_s:.1f} s classifying)"
    )
