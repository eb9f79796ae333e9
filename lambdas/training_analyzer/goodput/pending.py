"""Goodput's ``waiting_for_gpus``: the GPU-time a job's pods spent pending, each pod's GPUs times
the seconds it was Pending, hour by hour, in either Container Insights mode. Read-only; clients
are injected; the join is pure.

- OTel: Kube State Metrics' ``kube_pod_status_phase{phase="Pending"}`` (1 while the pod's phase
  is Pending, 0 after: kubernetes/kube-state-metrics docs/metrics/workload/pod-metrics.md) and
  ``kube_pod_container_resource_requests{resource="nvidia_com_gpu"}`` summed over the pod's
  containers (its GPUs), as the add-on sends them, the pod and namespace on the resource
  (lambdas/shared/kube_state.py: the series the pending-GPU-pod alarm and the cluster dashboard
  read), with PromQL over each hour: the Pending samples that were 1 (``sum_over_time``) over
  the samples a full hour holds (the most common ``count_over_time`` of the pods' series, as the
  funnel's capacity reads Kube State Metrics' scrape: gpu_hours/aws.py ``samples_per_hour``).
- Classic: Container Insights' ``pod_status_pending`` per pod, dimensions ClusterName,
  FullPodName, Namespace, PodName (aws/amazon-cloudwatch-agent-test
  test/metric_value_benchmark, ``expectedDimsToMetrics``: "ClusterName-FullPodName-Namespace-
  PodName" lists ``pod_status_pending``; a pod's FullPodName is its own name), hourly ``Sum``
  over the samples a full hour holds (the most common hourly ``SampleCount``: gpu_hours/aws.py
  ``samples_per_hour``). Classic publishes no pod GPU request beside
  it (the cluster dashboard's pending widget says so), so a pod's GPUs are the ranks the
  training emitter reported on it (one rank a GPU, as goodput counts them).

A pod joins its job by its name, as the emitter reported it (``TrainingRun.pods``): a pod that
never ran the emitter (deleted while pending) is no job's.
"""

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpu_insights_agent.contract.metrics import (
    CI_POD_PENDING_METRIC,
    CI_POD_SCHEMA,
    DIM_CLUSTER,
    DIM_FULL_POD_NAME,
    NAMESPACE_CONTAINER_INSIGHTS,
)
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.exporter_promql import hourly, read_hours
from lambdas.shared.kube_state import (
    KSM_GPU_RESOURCE,
    KSM_PHASE_PENDING,
    KSM_POD_PHASE,
    KSM_POD_REQUESTS,
    KSM_RESOURCE,
    ksm_selector,
)
from lambdas.shared.metric_fetcher import MetricQuery, fetch, listed_dimensions
from lambdas.shared.promql import PromQLClient, quote_label
from lambdas.training_analyzer.gpu_hours.aws import HOUR, samples_per_hour


@dataclass(frozen=True)
class PodPending:
    """One pod's hour: the GPU-seconds it waited (its GPUs times its seconds Pending)."""

    pod: str
    hour: float
    gpu_seconds: float


def job_pending(
    pending: Iterable[PodPending], pods: Mapping[str, str]
) -> dict[str, dict[float, float]]:
    """Each job's pending GPU-seconds by hour, its pods joined by name (``pods``: pod -> job)."""
    jobs: dict[str, dict[float, float]] = defaultdict(lambda: defaultdict(float))
    for p in pending:
        job = pods.get(p.pod)
        if job is not None and p.gpu_seconds > 0:
            jobs[job][p.hour] += p.gpu_seconds
    return {job: dict(hours) for job, hours in jobs.items()}


class PendingQueries:
    """The PromQL over Kube State Metrics' pending GPU pods of one cluster: each pending GPU
    pod's Pending samples times its GPUs in the hour (only pods pending in it answer), and the
    samples a pod's series holds in a full hour (the cluster's most: one series)."""

    def __init__(self, cluster: str, labels: DcgmLabels = CLOUDWATCH) -> None:
        self.cluster, self.labels = cluster, labels
        self._phase = ksm_selector(KSM_POD_PHASE, cluster, labels, phase=KSM_PHASE_PENDING)

    def keys(self) -> tuple[str, str]:
        return (self.labels.namespace, self.labels.pod)

    def gpu_samples(self) -> str:
        by = ", ".join(quote_label(k) for k in self.keys())
        asked = ksm_selector(
            KSM_POD_REQUESTS, self.cluster, self.labels, **{KSM_RESOURCE: KSM_GPU_RESOURCE}
        )
        pending = f"sum by ({by}) (sum_over_time({self._phase}[1h])) > 0"
        gpus = f"sum by ({by}) (max_over_time({asked}[1h])) > 0"
        return f"({pending}) * on ({by}) ({gpus})"

    def full_samples(self) -> str:
        return f"max(count_over_time({self._phase}[1h]))"


def otel_pending(
    promql: PromQLClient,
    cluster: str,
    *,
    start: float,
    end: float,
    labels: DcgmLabels = CLOUDWATCH,
) -> list[PodPending]:
    """Every GPU pod's pending GPU-seconds in each hour of [start, end) (OTel mode): its
    Pending samples times its GPUs over the samples a full hour holds, times the hour."""
    queries = PendingQueries(cluster, labels)
    full = {
        hour: value
        for series in read_hours(promql, queries.full_samples(), start, end)
        for hour, value in hourly(series).items()
    }
    read = []
    for series in read_hours(promql, queries.gpu_samples(), start, end):
        pod = series.labels.get(labels.pod, "")
        for hour, value in hourly(series).items():
            if pod and value > 0 and full.get(hour, 0.0) > 0:
                read.append(PodPending(pod, float(hour), HOUR * value / full[hour]))
    return read


def classic_pending(
    cloudwatch: Any,
    cluster: str,
    pod_gpus: Mapping[str, float],
    *,
    start: float,
    end: float,
) -> list[PodPending]:
    """The Pending seconds of each pod of ``pod_gpus`` (pod -> its GPUs: its ranks) in each hour
    of [start, end) (Classic), from ``pod_status_pending`` in full GetMetricData batches."""
    queries = []
    for dims in listed_dimensions(
        cloudwatch, NAMESPACE_CONTAINER_INSIGHTS, CI_POD_PENDING_METRIC, {DIM_CLUSTER: cluster}
    ):
        pod = dims.get(DIM_FULL_POD_NAME, "")
        if set(dims) != set(CI_POD_SCHEMA) or pod not in pod_gpus:
            continue
        for name, stat in (("pending", "Sum"), ("samples", "SampleCount")):
            queries.append(
                MetricQuery(
                    (pod, name),
                    NAMESPACE_CONTAINER_INSIGHTS,
                    CI_POD_PENDING_METRIC,
                    tuple(sorted(dims.items())),
                    stat,
                    HOUR,
                )
            )
    read: dict[str, dict[tuple[str, int], float]] = defaultdict(dict)
    for batch in fetch(cloudwatch, queries, start=start, end=end):
        for series in batch:
            pod, name = series.query.key
            for t, v in zip(series.timestamps, series.values, strict=True):
                hour = int(t.timestamp()) // HOUR * HOUR
                read[name][(pod, hour)] = read[name].get((pod, hour), 0.0) + v
    full = samples_per_hour(read["samples"].values())
    return [
        PodPending(pod, float(hour), min(1.0, value / full) * HOUR * pod_gpus[pod])
        for (pod, hour), value in sorted(read["pending"].items())
        if value > 0
    ]
