"""The OTel run's exporter and emitter series: the Classic run's statistic sets sent again as
the agent's OTLP encoders send each cycle and flush, so that PromQL's hour holds what
CloudWatch's statistic set holds (count, sum, minimum), labelled as CloudWatch's PromQL names
OTLP attributes."""

from collections import defaultdict

import pytest

from cli.demo import training
from cli.demo import week as demo_week
from cli.demo.otlp import cycle_documents, statistic_set_samples
from cli.demo.promql import Sample
from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_NODE,
    OTLP_CLUSTER,
    OTLP_GPU,
    OTLP_JOB,
    OTLP_NODE,
    OTLP_POD,
    OTLP_RANK,
    OTLP_XID_CODE,
    GpuMetric,
    TrainingMetric,
)

CLUSTER = "demo"
RESOURCE = "@resource."


def _hourly(samples: list[Sample], *keys: str) -> dict[tuple[str, ...], list[float]]:
    """Each (metric, hour start, labels at ``keys``)'s values."""
    found: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for name, labels, at, value in samples:
        key = (name, str(int(at // 3600 * 3600)), *(labels.get(k, "") for k in keys))
        found[key].append(value)
    return found


def test_an_hour_of_the_exporter_is_its_statistic_sets_samples_one_a_cycle() -> None:
    hour = demo_week.LOST_AT_HOUR  # the failing GPU's XID 79, then only gpu_healthy 0
    data = demo_week.exporter_data(CLUSTER, demo_week.THIS_WEEK, [hour])
    samples = list(statistic_set_samples(data, start=demo_week.THIS_WEEK.start))
    per_gpu = {
        (d["MetricName"], *(x["Value"] for x in d["Dimensions"] if x["Name"] == DIM_GPU_INDEX))
        for d in data
        if any(x["Name"] == DIM_GPU_INDEX for x in d["Dimensions"])
    }
    node = f"{RESOURCE}{OTLP_NODE}"
    found = _hourly(samples, node, OTLP_GPU)
    start = str(int(demo_week.THIS_WEEK.start + hour * 3600))
    vision = "ip-10-0-2-21.ec2.internal"
    # The working GPU: 60 samples of 88% of its limit, held by its pod.
    assert found[(str(GpuMetric.POWER_UTILIZATION), start, vision, "0")] == [88.0] * 60
    assert found[(str(GpuMetric.ALLOCATED_POWER_UTILIZATION), start, vision, "0")] == [88.0] * 60
    # The lost GPU: gpu_healthy 0 each cycle, nothing else but its XID counter's 0 and 1.
    failing, gpu = demo_week.FAILING
    assert found[(str(GpuMetric.HEALTHY), start, failing, str(gpu))] == [0.0] * 60
    assert found[(str(GpuMetric.XID_ERRORS), start, failing, str(gpu))] == [0.0, 1.0]
    assert not found.get((str(GpuMetric.POWER_UTILIZATION), start, failing, str(gpu)))
    assert {labels[OTLP_XID_CODE] for n, labels, _, _ in samples if OTLP_XID_CODE in labels} == {
        "79"
    }
    # Every per-GPU statistic set is sent, the cluster-wide copies and the Shard are not.
    assert {(n, labels[OTLP_GPU]) for n, labels, _, _ in samples} == per_gpu
    assert all(labels[f"{RESOURCE}{OTLP_CLUSTER}"] == CLUSTER for _, labels, _, _ in samples)
    assert not any("Shard" in labels for _, labels, _, _ in samples)
    # Mid-hour, never on its edge: every sample within its statistic set's hour.
    assert {int(at // 3600 * 3600) for _, _, at, _ in samples} == {int(start)}


def test_the_exporters_day_over_otlp_counts_the_classic_days_samples() -> None:
    """PromQL's count of the GPUs' samples in a day is the statistic sets' SampleCount: the
    report's sampled GPU-hours and the attribution's share of an hour read it."""
    plan = demo_week.LAST_WEEK
    data = demo_week.exporter_data(CLUSTER, plan, range(24))
    samples = list(statistic_set_samples(data, start=plan.start))
    power = str(GpuMetric.POWER_UTILIZATION)
    cluster_wide = sum(
        d["StatisticValues"]["SampleCount"]
        for d in data
        if d["MetricName"] == power and [x["Name"] for x in d["Dimensions"]] == [DIM_CLUSTER]
    )
    # The three p5.48xlarge nodes' 24 GPUs, each a sample a minute.
    assert sum(1 for name, _, _, _ in samples if name == power) == cluster_wide == 24 * 24 * 60


def test_a_statistic_set_of_several_values_is_refused() -> None:
    (datum,) = [
        d
        for d in demo_week.exporter_data(CLUSTER, demo_week.THIS_WEEK, [0])
        if d["MetricName"] == str(GpuMetric.HEALTHY)
        and {x["Name"] for x in d["Dimensions"]} >= {DIM_NODE, DIM_GPU_INDEX}
        and d["Dimensions"][1]["Value"] == "ip-10-0-2-21.ec2.internal"
        and d["Dimensions"][2]["Value"] == "0"
    ]
    datum["StatisticValues"]["Maximum"] = 2.0
    with pytest.raises(ValueError, match="gpu_healthy: a statistic set of several values"):
        cycle_documents([datum])


def test_a_teams_hour_of_steps_over_otlp_is_its_statistic_set_by_rank() -> None:
    """The emitter's flushes of an hour of steps, each rank's own series (its pod and node),
    sum to the hour's statistic set, which EMF stores for the job as a whole."""
    job = training.JOBS[1]  # bert-data-bound
    window = (demo_week.START, demo_week.START + 86_400)
    (hour_start, *_) = training._stepping(job, window)
    stats = {
        d["MetricName"]: d["StatisticValues"]
        for d in training.stepping_hours(job, (hour_start, hour_start + 3600))
    }
    samples = [s for s in training.otlp_samples(window) if s[1][OTLP_JOB] == job.name]
    found = _hourly(samples, OTLP_RANK, f"{RESOURCE}{OTLP_POD}")
    steps = str(TrainingMetric.STEPS)
    by_rank = {
        (rank, pod): values
        for (name, at, rank, pod), values in found.items()
        if name == steps and at == str(int(hour_start))
    }
    assert sorted(by_rank) == [
        ("0", "bert-data-bound-master-0"),
        ("1", "bert-data-bound-worker-0"),
    ]
    assert sum(len(v) for v in by_rank.values()) == stats[steps]["SampleCount"] == 24
    assert sum(sum(v) for v in by_rank.values()) == pytest.approx(stats[steps]["Sum"])
    wait = [
        v
        for (name, at, _, _), values in found.items()
        if name == str(TrainingMetric.DATA_WAIT) and at == str(int(hour_start))
        for v in values
    ]
    assert wait == [0.8] * 24
