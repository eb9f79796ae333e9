"""Each training finding at its edges, on plain hourly data, and the cases real jobs produce:
no data, one step, restarts, gaps, some ranks only. Every ``analyze_job`` here also runs on
the data as the datapoint-floor plan fetches it (the window sums as one point) and must agree.
"""

from dataclasses import replace

import pytest

from lambdas.shared.findings import Finding, Kind, Severity
from lambdas.training_analyzer.analysis import (
    GpuUsage,
    JobData,
    JobSeries,
    RankStats,
    TrainingThresholds,
    job_cost,
)
from lambdas.training_analyzer.analysis import analyze_job as analyze_hourly
from lambdas.training_analyzer.aws import WINDOW_SUMS

H = 3600.0


def as_fetched(data: JobData) -> JobData:
    """The window sums as CloudWatch returns them at one period over the window."""
    series = replace(data.series)
    for name in WINDOW_SUMS:
        hourly: dict[float, float] = getattr(data.series, name)
        setattr(series, name, {0.0: sum(hourly.values())} if hourly else {})
    return replace(data, series=series)


def analyze_job(data: JobData, t: TrainingThresholds | None = None) -> list[Finding]:
    t = t or TrainingThresholds()
    findings = analyze_hourly(data, t)
    assert analyze_hourly(as_fetched(data), t) == findings
    return findings


def series(
    hours: int = 10,
    step: float = 1.0,
    wait: float = 0.1,
    sps: float = 1000.0,
    **extra: dict[float, float],
) -> JobSeries:
    s = JobSeries(
        job="llm",
        steps={h * H: 3600.0 / step for h in range(hours)},
        step_time={h * H: step for h in range(hours)},
        data_wait={h * H: wait for h in range(hours)},
        samples_per_second={h * H: sps for h in range(hours)},
    )
    for name, values in extra.items():
        setattr(s, name, values)
    return s


def ranks(times: list[float], steps: float = 100) -> list[RankStats]:
    return [RankStats(str(i), steps, t, f"node-{i // 8}") for i, t in enumerate(times)]


def kinds(data: JobData) -> list[Kind]:
    return [f.kind for f in analyze_job(data)]


def test_healthy_job_has_no_findings() -> None:
    assert kinds(JobData(series=series(), ranks=ranks([1.0] * 8), gpu=GpuUsage(85, 90))) == []


def test_data_bound_edge_is_twenty_percent_of_step_time() -> None:
    assert kinds(JobData(series=series(wait=0.20))) == []
    (finding,) = analyze_job(
        JobData(
            series=series(wait=0.21),
            ranks=ranks([1.0] * 4),
            related_storage=("s3_high_latency arn:aws:s3:::data",),
        )
    )
    assert finding.kind is Kind.TRAINING_DATA_BOUND
    assert finding.evidence["data_wait_share"] == 0.21
    assert finding.related == ("s3_high_latency arn:aws:s3:::data",)
    # 10 hours x 4 GPUs x $6.88 x 21% waiting, at 730/336 of that pace for a month.
    assert finding.evidence["waste_in_lookback_usd"] == pytest.approx(40 * 6.88 * 0.21, rel=1e-3)
    assert finding.estimated_monthly_waste_usd == pytest.approx(40 * 6.88 * 0.21 * 730 / 336)
    # Its dollars say the window they cover (the default 14-day lookback), not "this week",
    # and that its GPU-hours are stepping hours times GPUs.
    assert finding.summary.endswith(
        ": $58 of the 40 GPU-hours it stepped (4 GPUs x 10 hours) in its 14-day lookback "
        "went to waiting."
    )
    two_days = analyze_job(replace(JobData(series=series(wait=0.21)), lookback_hours=48.0))
    assert "in its 2-day lookback" in two_days[0].summary


def test_a_data_bound_job_in_a_window_that_is_not_the_calendar_day_names_its_hours() -> None:
    """A run at 07:00 with a 1-day lookback reads 07:00 to 07:00; the GPU-hour attribution of
    the same run holds yesterday 00:00-24:00. A job that held 2 GPUs all of yesterday and
    stepped its last 17 hours of the window says so, with the window, so its 34 GPU-hours are
    not read against the attribution's 48."""
    end = 1_796_022_000.0  # 2026-11-30 07:00 UTC
    data = JobData(
        series=series(wait=0.4, hours=17), ranks=ranks([1.0] * 2), lookback_hours=24.0,
        window_end=end,
    )  # fmt: skip
    (finding,) = analyze_job(data)
    assert finding.summary.endswith(
        "of the 34 GPU-hours it stepped (2 GPUs x 17 hours) in its 1-day lookback "
        "(2026-11-29 07:00 to 2026-11-30 07:00 UTC) went to waiting."
    )


def test_underutilized_by_power_or_by_sm_activity() -> None:
    assert kinds(JobData(series=series(), gpu=GpuUsage(60.0, 80.0))) == []
    assert kinds(JobData(series=series(), gpu=GpuUsage(59.9, 95.0))) == [
        Kind.TRAINING_GPU_UNDERUTILIZED
    ]
    (finding,) = analyze_job(JobData(series=series(), gpu=GpuUsage(90.0, 79.0)))
    assert finding.kind is Kind.TRAINING_GPU_UNDERUTILIZED
    assert finding.evidence["sm_active_percent"] == 79.0


def test_a_data_bound_jobs_idle_gpus_are_its_data_bound_finding_only() -> None:
    # Its GPUs draw 22% of their limit because each step waits for data: one finding, which
    # names the cause, prices the waiting GPU time once (not again as underutilized).
    waiting = JobData(series=series(wait=0.4), gpu=GpuUsage(22.0, 8.0))
    assert kinds(waiting) == [Kind.TRAINING_DATA_BOUND]
    # Under the data-bound threshold the same GPUs are underutilized for some other reason.
    assert kinds(replace(waiting, series=series(wait=0.2))) == [Kind.TRAINING_GPU_UNDERUTILIZED]


def test_slow_checkpoint_absolute_and_as_a_share_of_the_interval() -> None:
    def job(save_s: float, saves_per_hour: float) -> JobData:
        return JobData(
            series=series(
                checkpoint_save={h * H: save_s for h in range(10)},
                checkpoint_saves={h * H: saves_per_hour for h in range(10)},
            )
        )

    assert kinds(job(300.0, 1)) == []  # at the 300 s edge, and 8% of the hour
    assert kinds(job(301.0, 1)) == [Kind.TRAINING_SLOW_CHECKPOINT]  # just over 300 s
    assert kinds(job(60.0, 6)) == []  # a minute every 10 minutes: 10%, the edge
    (finding,) = analyze_job(job(61.0, 6))  # just over 10% of the interval
    assert finding.evidence["share_of_interval"] == pytest.approx(0.102, abs=1e-3)
    assert finding.evidence["interval_seconds"] == 600.0


def test_regression_against_the_first_hours_and_against_earlier_runs() -> None:
    falling = series(hours=10)
    falling.samples_per_second = {h * H: (1000.0 if h < 5 else 840.0) for h in range(10)}
    (finding,) = analyze_job(JobData(series=falling))
    assert finding.kind is Kind.TRAINING_THROUGHPUT_REGRESSION
    assert finding.evidence["drop"] == pytest.approx(0.16)
    falling.samples_per_second = {h * H: (1000.0 if h < 5 else 850.0) for h in range(10)}
    assert kinds(JobData(series=falling)) == []  # exactly 15%: not more than the threshold
    steady = series(hours=3, sps=700.0)  # too short for its own baseline, but not for history
    (against_history,) = analyze_job(JobData(series=steady, baseline_samples_per_second=1000.0))
    assert against_history.evidence["baseline"] == "earlier runs of the job"


def test_failures_and_mean_time_between_them() -> None:
    (finding,) = analyze_job(JobData(series=series(hours=10, failures={3 * H: 1.0, 8 * H: 1.0})))
    assert finding.kind is Kind.TRAINING_JOB_FAILURES
    assert finding.evidence["failures"] == 2.0
    assert finding.evidence["mean_hours_between_failures"] == 5.0
    assert finding.severity is Severity.WARNING
    assert "one failure every 5.0 active hours" in finding.summary
    # Where its goodput measured the hours it ran (75 minutes, once failed), that is the rate.
    once = series(hours=2, failures={H: 1.0})
    (measured,) = analyze_job(JobData(series=once, running_hours=1.25))
    assert measured.evidence["mean_hours_between_failures"] == 1.25
    assert "one failure every 1.2 hours it ran" in measured.summary


def test_straggler_needs_peers_and_a_clear_margin() -> None:
    assert kinds(JobData(series=series(), ranks=ranks([1.0, 1.0, 1.0, 1.19]))) == []
    (finding,) = analyze_job(JobData(series=series(), ranks=ranks([1.0, 1.0, 1.0, 1.3])))
    assert finding.kind is Kind.TRAINING_STRAGGLER
    assert (finding.evidence["rank"], finding.evidence["node"]) == ("3", "node-0")
    assert kinds(JobData(series=series(), ranks=ranks([1.0, 2.0]))) == []  # two ranks: no peers
    few_steps = ranks([1.0, 1.0, 1.0, 5.0], steps=5)
    assert kinds(JobData(series=series(), ranks=few_steps)) == []


@pytest.mark.parametrize(
    "data",
    [
        JobData(series=JobSeries(job="empty")),
        JobData(series=JobSeries(job="one-step", steps={0.0: 1.0}, step_time={0.0: 0.5})),
        JobData(
            series=JobSeries(
                job="zero",
                steps={0.0: 0.0},
                step_time={0.0: 0.0},
                data_wait={0.0: 0.0},
                samples_per_second={0.0: 0.0},
            )
        ),
        JobData(series=series(hours=10), ranks=[RankStats("0", 0, 0.0)]),
        JobData(series=series(hours=2), gpu=GpuUsage(None, None)),
    ],
    ids=["no-data", "single-step", "zeros", "rank-without-steps", "gpu-without-values"],
)
def test_degenerate_jobs_give_no_finding_and_no_exception(data: JobData) -> None:
    assert analyze_job(data) == []


def test_gaps_and_restarts_count_only_active_hours() -> None:
    restarted = series(hours=10)
    for hour in (3, 4, 5):  # a restart: three hours without steps
        restarted.steps[hour * H] = 0.0
    restarted.steps[40 * H] = 3600.0  # a clock gap: a day later, it runs again
    cost = job_cost(JobData(series=restarted, ranks=ranks([1.0] * 8)))
    assert (cost.active_hours, cost.gpus, cost.gpu_hours) == (8, 8, 64)
