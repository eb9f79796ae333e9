"""The training job alarms: a job that hangs, whose loss is not finite or jumps, or whose
throughput collapses, paged within minutes, per job.

Each is a multi time series alarm: a Metrics Insights query that GROUPs BY ClusterName,
JobName returns one series per job, each a contributor with its own state named by the job
("Create an alarm based on a Multi Time Series Metrics Insights query",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/multi-time-series-alarm.html).
A series the query no longer returns takes its contributor to OK, so none of them fires on
absence: the emitter (agent/gpu_insights_agent/emitter/training.py) keeps a heartbeat that
publishes every flush while the job runs, and computes what Metrics Insights cannot (its
functions are AVG, COUNT, MAX, MIN and SUM: no median, no deviation), so each alarm compares
a value. A job that ends publishes its end and its series stops: its contributor goes OK.

The emitter puts each job in one of ``JOB_ALARM_SHARDS`` shards (a hash of its name): each
kind has one alarm per shard, so 2,000 concurrent jobs are 250 a query, half the 500 series
one query returns in full (cdk/alarms/sizing.py).
"""

from dataclasses import dataclass, replace
from functools import partial

from cdk.alarms.model import AlarmSpec, Comparison, InsightsQuery, MissingData, Severity
from cdk.alarms.sizing import MAX_WINDOW_MINUTES
from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_JOB,
    DIM_SHARD,
    JOB_ALARM_DIMENSIONS,
    JOB_ALARM_SHARDS,
    NAMESPACE_TRAINING,
    RECENT_WINDOWS,
    STEP_DUE_MULTIPLE,
    TrainingMetric,
)
from gpu_insights_agent.contract.resource_names import shard_alarm_name
from lambdas.shared.fail_slow import FAIL_SLOW_KIND, GOODPUT_LOW_KIND

#: What a job alarm's contributor is: these name the job in every notification.
JOB_CONTRIBUTOR = (DIM_CLUSTER, DIM_JOB)
#: The job alarm kinds (each one alarm per shard).
JOB_HUNG = "job-hung"
JOB_LOSS_NOT_FINITE = "job-loss-not-finite"
JOB_LOSS_SPIKE = "job-loss-spike"
JOB_THROUGHPUT_COLLAPSED = "job-throughput-collapsed"
#: The job's step time rose over its own recent baseline: a fail-slow, whose page names the
#: most likely culprit (lambdas/shared/fail_slow.py).
JOB_STEP_TIME_RISE = FAIL_SLOW_KIND
#: The job's goodput over the last hour under the setting (docs/goodput.md).
JOB_GOODPUT_LOW = GOODPUT_LOW_KIND
JOB_ALARM_KINDS = (
    JOB_HUNG,
    JOB_LOSS_NOT_FINITE,
    JOB_LOSS_SPIKE,
    JOB_THROUGHPUT_COLLAPSED,
    JOB_STEP_TIME_RISE,
    JOB_GOODPUT_LOW,
)
#: The emitter flushes every minute by default: the one-minute alarms read each flush.
MINUTE = 60
THROUGHPUT_PERIOD_S = 300
#: The least hung_minutes: a rank publishes once a minute, at any second of it, so a shorter
#: wait would page a job whose ranks merely flushed late.
MIN_HUNG_MINUTES = 5
#: A slowdown is under the median of the rank's recent windows for half of them (minutes at
#: the default one-minute flush); a longer window would never see it all through.
MAX_THROUGHPUT_WINDOW_MINUTES = RECENT_WINDOWS // 2
#: The goodput alarm's window: the rolling hour (the dashboard charts 15 minutes too).
GOODPUT_PERIOD_S = 3600
NAMES_THE_JOB = "Each contributor (ClusterName, JobName) names the job."
#: Why the two alarms on the throughput ratio do not breach on missing data.
NO_STEP_NO_RATIO = "a job that completes no step has no ratio: job-hung pages for it"


class JobAlarmSettingsError(ValueError):
    """A job alarm threshold or window it cannot use; the message names it."""


@dataclass(frozen=True, kw_only=True)
class JobAlarmSettings:
    #: The floor of the hang wait: a job is hung this long after its next step was due
    #: (``STEP_DUE_MULTIPLE`` of its own recent median step time after the last one).
    hung_minutes: int = 10
    #: A window's mean loss this many robust deviations above the job's recent median.
    loss_spike_deviations: float = 10.0
    #: Throughput under this share of the job's recent median ...
    throughput_fraction: float = 0.5
    #: ... in every period of this window.
    throughput_window_minutes: int = 15
    #: Fail-slow: the job's step time this many percent over its own recent median ...
    step_time_rise_percent: float = 10.0
    #: ... in every minute of this window.
    step_time_rise_minutes: int = 3
    #: The job's goodput over the last hour under this percent (docs/goodput.md).
    goodput_percent: float = 70.0

    @property
    def step_time_rise_ratio(self) -> float:
        """The throughput ratio under which the step time has risen ``step_time_rise_percent``:
        at the same samples a step, throughput is the step time's inverse."""
        return 1 / (1 + self.step_time_rise_percent / 100)

    def __post_init__(self) -> None:
        if not MIN_HUNG_MINUTES <= self.hung_minutes <= MAX_WINDOW_MINUTES:
            raise JobAlarmSettingsError(
                f"job_hung_minutes={self.hung_minutes} must be {MIN_HUNG_MINUTES} to "
                f"{MAX_WINDOW_MINUTES} (ranks flush once a minute; an alarm reads 3 hours)"
            )
        if not 3 <= self.loss_spike_deviations <= 1000:
            raise JobAlarmSettingsError(
                f"job_loss_spike_deviations={self.loss_spike_deviations} must be 3 to 1000 "
                "(under 3, ordinary noise pages)"
            )
        if not 0 < self.throughput_fraction < 1:
            raise JobAlarmSettingsError(
                f"job_throughput_fraction={self.throughput_fraction} must be above 0 and below 1"
            )
        minutes, period = self.throughput_window_minutes, THROUGHPUT_PERIOD_S // 60
        if minutes < period or minutes % period or minutes > MAX_THROUGHPUT_WINDOW_MINUTES:
            raise JobAlarmSettingsError(
                f"job_throughput_window_minutes={minutes} must be a multiple of the "
                f"{period}-minute period up to {MAX_THROUGHPUT_WINDOW_MINUTES} (the job's "
                f"median adapts to a new speed after half its {RECENT_WINDOWS} recent windows)"
            )
        if not 5 <= self.step_time_rise_percent <= 100:
            raise JobAlarmSettingsError(
                f"job_step_time_rise_percent={self.step_time_rise_percent:g} must be 5 to 100 "
                "(under 5, a step's ordinary jitter pages; over 100, throughput collapsed pages)"
            )
        if not 2 <= self.step_time_rise_minutes <= MAX_THROUGHPUT_WINDOW_MINUTES:
            raise JobAlarmSettingsError(
                f"job_step_time_rise_minutes={self.step_time_rise_minutes} must be 2 to "
                f"{MAX_THROUGHPUT_WINDOW_MINUTES} (one minute is one rank's flush; the job's "
                f"median adapts to a new speed after half its {RECENT_WINDOWS} recent windows)"
            )
        if not 1 <= self.goodput_percent <= 99:
            raise JobAlarmSettingsError(
                f"job_goodput_percent={self.goodput_percent:g} must be 1 to 99 (a share of the "
                "hour the job's GPUs spent on productive steps)"
            )


def _per_job(
    cluster: str, metric: TrainingMetric, function: str, order: str, shard: str
) -> InsightsQuery:
    """One series per job of one shard, whatever its ranks: ORDER BY keeps the worst."""
    return InsightsQuery(
        namespace=NAMESPACE_TRAINING,
        metric=str(metric),
        schema=JOB_ALARM_DIMENSIONS,
        where=((DIM_CLUSTER, cluster), (DIM_SHARD, shard)),
        function=function,
        group_by=JOB_CONTRIBUTOR,
        order=order,
    )


def job_kind_specs(cluster: str, settings: JobAlarmSettings, shard: str) -> list[AlarmSpec]:
    """Each job alarm kind on one shard's Metrics Insights query: its title, description,
    severity, threshold and window, which OTel mode's PromQL alarms keep with their own query
    (cdk/alarms/jobs_promql.py)."""
    hung_s = settings.hung_minutes * 60
    periods = settings.throughput_window_minutes * 60 // THROUGHPUT_PERIOD_S
    fraction = settings.throughput_fraction
    only_while_running = (
        "each rank publishes every flush while the job runs; a job that ended stops its "
        "series, and its contributor goes OK"
    )
    # Every job alarm: one minute, one datapoint, a job without data is not breaching.
    row = partial(
        AlarmSpec,
        period_s=MINUTE,
        evaluation_periods=1,
        datapoints_to_alarm=1,
        missing_data=MissingData.NOT_BREACHING,
        shard=shard,
    )
    return [
        row(
            key=JOB_HUNG,
            title="Training job hung",
            description=(
                f"Every rank of the job is over {settings.hung_minutes} minutes past its next "
                f"step (due {STEP_DUE_MULTIPLE}x its own recent median step time after the "
                "last step), with no checkpoint save or evaluation in progress and the job not "
                "ended: it holds its GPUs and does no work. Usually a collective (NCCL) waiting "
                "on a rank that died or hangs: read the ranks' last log lines (kubectl logs), "
                "look for a lost node or an XID on one of its GPUs, then restart the job from "
                f"its last checkpoint. {NAMES_THE_JOB}"
            ),
            severity=Severity.CRITICAL,
            # MIN over the ranks: a rank saving a checkpoint (0) keeps the job from paging.
            metric=_per_job(cluster, TrainingMetric.STEP_OVERDUE, "MIN", "DESC", shard),
            threshold=hung_s,
            comparison=Comparison.GREATER_OR_EQUAL,
            missing_data_reason=only_while_running,
        ),
        row(
            key=JOB_LOSS_NOT_FINITE,
            title="Training loss is NaN or infinite",
            description=(
                "A rank recorded a loss that is NaN or infinite: the job trains on garbage from "
                "here. Stop it and restart from the last checkpoint with a lower learning rate, "
                "gradient clipping or a loss scale (mixed precision); look for a bad batch in "
                f"the data. {NAMES_THE_JOB}"
            ),
            severity=Severity.CRITICAL,
            metric=_per_job(cluster, TrainingMetric.LOSS_NOT_FINITE, "SUM", "DESC", shard),
            threshold=1,
            comparison=Comparison.GREATER_OR_EQUAL,
            missing_data_reason=only_while_running,
        ),
        row(
            key=JOB_LOSS_SPIKE,
            title="Training loss jumped",
            description=(
                f"A minute's mean loss was {settings.loss_spike_deviations:g} robust deviations "
                "(1.4826 x the median absolute deviation) above the job's median of its recent "
                "windows: a divergence on its way to NaN, a bad batch, or a learning-rate "
                "schedule gone wrong. Compare with the learning rate and gradient norm on the "
                f"job's dashboard; roll back to the last good checkpoint. {NAMES_THE_JOB}"
            ),
            severity=Severity.WARNING,
            metric=_per_job(cluster, TrainingMetric.LOSS_DEVIATION, "MAX", "DESC", shard),
            threshold=settings.loss_spike_deviations,
            comparison=Comparison.GREATER_OR_EQUAL,
            missing_data_reason="a job that records no loss has no deviation, and no spike",
        ),
        row(
            key=JOB_THROUGHPUT_COLLAPSED,
            title="Training throughput collapsed",
            description=(
                f"For {settings.throughput_window_minutes} minutes even the job's fastest rank "
                f"trained under {fraction:.0%} of its own recent median samples per second "
                "(checkpoint saves and evaluation left out): a throttled or failing GPU, a slow "
                "node or link (EFA), or storage that stopped keeping up. Compare its data-wait "
                "share and its GPUs' power on the dashboards; a straggler node slows every rank "
                f"of a collective. {NAMES_THE_JOB}"
            ),
            severity=Severity.WARNING,
            metric=_per_job(cluster, TrainingMetric.THROUGHPUT_RATIO, "MAX", "ASC", shard),
            period_s=THROUGHPUT_PERIOD_S,
            evaluation_periods=periods,
            datapoints_to_alarm=periods,
            threshold=fraction,
            comparison=Comparison.LESS,
            missing_data_reason=NO_STEP_NO_RATIO,
        ),
        row(
            key=JOB_STEP_TIME_RISE,
            title="Training job slowed (fail-slow)",
            description=(
                f"For {settings.step_time_rise_minutes} minutes the job's step time was "
                f"{settings.step_time_rise_percent:g}% or more over its own recent median "
                f"(even its fastest rank under {settings.step_time_rise_ratio:.3f} of its usual "
                "samples per second): one slow GPU, link or node slows every rank of a "
                "collective. The page names the most likely culprit, its rank, pod, node and "
                "GPU, with the evidence (a throttled GPU, rising ECC, PCIe or NVLink errors, one "
                "rank's data wait, a node's CPU), or says that the whole job slowed. Cordon "
                "the culprit's node and restart the job from its last checkpoint without it. "
                f"{NAMES_THE_JOB}"
            ),
            severity=Severity.WARNING,
            metric=_per_job(cluster, TrainingMetric.THROUGHPUT_RATIO, "MAX", "ASC", shard),
            evaluation_periods=settings.step_time_rise_minutes,
            datapoints_to_alarm=settings.step_time_rise_minutes,
            threshold=round(settings.step_time_rise_ratio, 4),
            comparison=Comparison.LESS,
            missing_data_reason=NO_STEP_NO_RATIO,
        ),
        row(
            key=JOB_GOODPUT_LOW,
            title="Training job goodput low",
            description=(
                f"Over the last hour the job's GPUs spent under {settings.goodput_percent:g}% "
                "of their time on productive steps (the rank's steps' time less their data "
                "wait, checkpoint saves and evaluation, over the wall time: docs/goodput.md). "
                "The page says which badput grew: data wait (storage or loaders not keeping "
                "up), checkpoint saves (save less often or asynchronously), or no steps (hung "
                f"or stalled ranks). {NAMES_THE_JOB}"
            ),
            severity=Severity.WARNING,
            metric=_per_job(cluster, TrainingMetric.GOODPUT, "AVG", "ASC", shard),
            period_s=GOODPUT_PERIOD_S,
            threshold=settings.goodput_percent / 100,
            comparison=Comparison.LESS,
            missing_data_reason=(
                "a job publishes its goodput from its first step to its end; a job without "
                "any in the hour is not breaching (job-hung pages for a hang)"
            ),
        ),
    ]


def job_alarms(cluster: str, settings: JobAlarmSettings) -> list[AlarmSpec]:
    """Every job alarm: each kind once per job alarm shard (``-shard-NN`` in the key)."""
    alarms = []
    for index in range(JOB_ALARM_SHARDS):
        for spec in job_kind_specs(cluster, settings, str(index)):
            alarms.append(
                replace(
                    spec,
                    kind=spec.key,
                    key=shard_alarm_name(spec.key, index),
                    description=(
                        f"{spec.description} Covers the jobs of job alarm shard {index} of "
                        f"{JOB_ALARM_SHARDS} (Shard dimension)."
                    ),
                )
            )
    return alarms
