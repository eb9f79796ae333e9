"""A day of the inference servers' own series, read with PromQL (OTel Container Insights mode):
one query per signal for the whole cluster, each server's row of the signal
(agent contract/serving.py) joined with ``or``, grouped by replica, built by the serving
builders the alarms use (lambdas/shared/serving_queries.py). Ten queries a day (the last three
range queries over its hours), whatever the number of models; a signal's query may return at
most ``MAX_SERIES`` replicas (lambdas/shared/promql.py raises past it rather than read part of
the cluster).

A replica's series name its workload as the GPU-hour attribution names its pods
(gpu_hours/otel.py ``pod_controller``: a KServe InferenceService's or a RayService's pod labels,
a Deployment's owner attribute, else the controller its pod's name shows), so a row's GPU-hours
are its workload's there. Whether the add-on's collection of the servers' metrics carries pod
labels is not in the add-on chart read (the vLLM collection is newer than it,
container-insights-eks-otel-vllm.html): where it does not, a KServe pod counts as its
``<isvc>-predictor`` Deployment on both sides alike.

Counters are read as ``rate`` over the whole day times the day (PromQL's ``increase``, which the
builders do not write); gauges as the day's mean (KV cache) or most (waiting) per replica; time
to first token as the day's p99 per model of a workload, across its replicas. The KV cache and
the queue are read hour by hour too, each hour's mean and most per replica, for the autoscaling
rule (serving/autoscaling.py).
"""

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Final

from gpu_insights_agent.contract.serving import (
    HistogramForm,
    ServingMetric,
    Signal,
    servers_with,
)
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.exporter_promql import HOUR, hourly, read_hours
from lambdas.shared.promql import PromQLClient, Series, quote_label
from lambdas.shared.serving_queries import gauge, per_second, quantile, selector
from lambdas.training_analyzer.gpu_hours.otel import pod_controller
from lambdas.training_analyzer.gpu_hours.workloads import SERVING_POD_LABELS, infer_job
from lambdas.training_analyzer.serving.analysis import ServingReads
from lambdas.training_analyzer.serving.keys import ModelKey, ReplicaKey

DAY_S: Final = 86_400
#: The labels that name the model, in the table's order of servers.
MODEL_LABELS: Final = tuple(dict.fromkeys(m.model_label for m in servers_with(Signal.REQUESTS)))


def workload_keys(metric: ServingMetric, labels: DcgmLabels = CLOUDWATCH) -> tuple[str, ...]:
    """What names a model of a workload: namespace, owner, serving pod labels, model."""
    return (
        labels.cluster,
        labels.namespace,
        labels.deployment,
        *(labels.pod_label(k) for k in SERVING_POD_LABELS),
        metric.model_label,
    )


def replica_keys(metric: ServingMetric, labels: DcgmLabels = CLOUDWATCH) -> tuple[str, ...]:
    return (*workload_keys(metric, labels), labels.pod)


def _either(parts: Sequence[str]) -> str:
    return " or ".join(f"({p})" for p in parts)


class ServingQueries:
    """The day's queries, each every server's rows of one signal."""

    def __init__(
        self,
        cluster: str,
        *,
        form: HistogramForm = HistogramForm.NATIVE,
        labels: DcgmLabels = CLOUDWATCH,
        day_s: int = DAY_S,
    ) -> None:
        self.cluster, self.form, self.labels, self.day_s = cluster, form, labels, day_s

    def rate(self, signal: Signal) -> str:
        return _either(
            [
                per_second(m, self.cluster, replica_keys(m, self.labels), labels=self.labels,
                           range_s=self.day_s)
                for m in servers_with(signal)
            ]
        )  # fmt: skip

    def gauge(self, signal: Signal, over_time: str, range_s: int | None = None) -> str:
        """Each replica's gauge ``over_time`` the day, or over ``range_s`` (an hour)."""
        return _either(
            [
                gauge(m, self.cluster, replica_keys(m, self.labels), over_time,
                      labels=self.labels, range_s=range_s or self.day_s)
                for m in servers_with(signal)
            ]
        )  # fmt: skip

    def ttft_p99(self) -> str:
        return _either(
            [
                quantile(m, 0.99, self.cluster, workload_keys(m, self.labels), form=self.form,
                         labels=self.labels, range_s=self.day_s)
                for m in servers_with(Signal.TTFT)
            ]
        )  # fmt: skip

    def replicas_hourly(self) -> str:
        """Each replica's requests samples in an hour: which replicas served in which hour."""
        parts = []
        for m in servers_with(Signal.REQUESTS):
            by = ", ".join(quote_label(n) for n in replica_keys(m, self.labels))
            for name in m.names:
                sel = selector(name, self.cluster, m, self.labels)
                parts.append(f"count by ({by}) (count_over_time({sel}[1h]))")
        return _either(parts)


def model_key(found: Mapping[str, str], labels: DcgmLabels = CLOUDWATCH) -> ModelKey | None:
    """The model of a workload a series names, or None where it names no model, or no
    workload (a p99 read across replicas with neither an owner nor serving labels)."""
    model = next((found[k] for k in MODEL_LABELS if found.get(k)), "")
    if not model:
        return None
    serving = pod_controller(found, labels)
    if serving is not None:
        kind, workload = serving
    elif found.get(labels.pod):
        ref = infer_job(found[labels.pod])
        kind, workload = ref.kind, ref.job
    else:
        return None
    return ModelKey(found.get(labels.namespace, ""), workload, kind, model)


def _per_replica(
    series: Sequence[Series], labels: DcgmLabels, scale: float = 1.0
) -> dict[ReplicaKey, float]:
    found: dict[ReplicaKey, float] = {}
    for s in series:
        key = model_key(s.labels, labels)
        if key is None or not s.points:
            continue
        found[ReplicaKey(key, s.labels.get(labels.pod, ""))] = s.points[-1][1] * scale
    return found


def read_serving(
    promql: PromQLClient,
    cluster: str,
    *,
    start: float,
    end: float,
    form: HistogramForm = HistogramForm.NATIVE,
    labels: DcgmLabels = CLOUDWATCH,
) -> ServingReads:
    """The day [start, end) of every model the cluster's servers served."""
    day_s = round(end - start)
    q = ServingQueries(cluster, form=form, labels=labels, day_s=day_s)

    def at_end(query: str) -> list[Series]:
        return promql.query(query, end)

    reads = ServingReads(
        requests=_per_replica(at_end(q.rate(Signal.REQUESTS)), labels, day_s),
        prompt_tokens=_per_replica(at_end(q.rate(Signal.PROMPT_TOKENS)), labels, day_s),
        generation_tokens=_per_replica(at_end(q.rate(Signal.GENERATION_TOKENS)), labels, day_s),
        preemptions=_per_replica(at_end(q.rate(Signal.PREEMPTIONS)), labels, day_s),
        kv_cache=_per_replica(at_end(q.gauge(Signal.KV_CACHE, "avg_over_time")), labels),
        waiting=_per_replica(at_end(q.gauge(Signal.WAITING, "max_over_time")), labels),
    )
    for s in at_end(q.ttft_p99()):
        key = model_key(s.labels, labels)
        if key is not None and s.points and not math.isnan(s.points[-1][1]):
            reads.ttft_p99_s[key] = s.points[-1][1]
    serving: dict[ModelKey, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for s in read_hours(promql, q.replicas_hourly(), start, end):
        key = model_key(s.labels, labels)
        if key is not None:
            for hour in hourly(s):
                serving[key][hour].add(s.labels.get(labels.pod, ""))
    reads.replicas = {k: max(len(p) for p in hours.values()) for k, hours in serving.items()}
    reads.hourly_replicas = {k: dict(hours) for k, hours in serving.items()}
    # Each hour's KV-cache mean and most requests waiting per replica: the day read hour by
    # hour for the autoscaling rule (analysis/autoscaling.py).
    reads.hourly_kv_cache = _per_replica_hourly(
        read_hours(promql, q.gauge(Signal.KV_CACHE, "avg_over_time", HOUR), start, end), labels
    )
    reads.hourly_waiting = _per_replica_hourly(
        read_hours(promql, q.gauge(Signal.WAITING, "max_over_time", HOUR), start, end), labels
    )
    return reads


def _per_replica_hourly(
    series: Sequence[Series], labels: DcgmLabels
) -> dict[ReplicaKey, dict[int, float]]:
    found: dict[ReplicaKey, dict[int, float]] = {}
    for s in series:
        key = model_key(s.labels, labels)
        if key is not None:
            readings = {h: v for h, v in hourly(s).items() if not math.isnan(v)}
            found.setdefault(ReplicaKey(key, s.labels.get(labels.pod, "")), {}).update(readings)
    return found
