"""Inference serving alarms in Classic Container Insights mode: Metrics Insights alarms on the
servers' counters and gauges that the agent keeps (cdk/node_config/serving_prometheus.py), one
contributor per replica of a model, paged through the notifier like the GPU alarms.

What Classic can alarm on, and what not:

- Requests waiting over ``serving_waiting_requests`` for ``serving_waiting_minutes``: each
  server's queue gauge, one alarm per server (a Metrics Insights query reads one metric name).
- KV cache full with preemptions: a multi time series alarm is one query, and a query reads one
  metric, so a replica's KV cache and its preemptions cannot be joined per replica as OTel mode
  does. vLLM preempts only for want of KV cache: "there are times when KV cache space is
  insufficient to handle all batched requests. In such cases, vLLM can preempt requests to
  free up KV cache space" (vllm-project/vllm docs/configuration/optimization.md,
  "Preemption"). So a replica's preemptions in five minutes are the alarm, and they say its
  cache was full.
- No error-percentage alarm: a percentage is errors over requests, two queries, and "Any
  expression used in a PutMetricAlarm operation must return a single time series"
  (MetricDataQuery, the CloudWatch API Reference,
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricDataQuery.html),
  while a Metrics Insights alarm's contributors come from its one GROUP BY query: no per-model
  ratio.
- No latency percentile: "The Prometheus metrics with the unsupported histogram metric type are
  dropped by the CloudWatch agent" (ContainerInsights-Prometheus-metrics-conversion.html), and
  time to first token, inter-token and end-to-end latency are histograms in every server.
"""

from dataclasses import replace
from typing import Final

from cdk.alarms.model import AlarmSpec, Comparison, InsightsQuery, MissingData, Severity
from cdk.alarms.serving_promql import ServingAlarmSettings
from cdk.node_config.serving_prometheus import SERVING_NAMESPACE, dimensions, kept_metrics
from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_FULL_POD_NAME,
    DIM_NAMESPACE,
    DIM_POD_NAME,
)
from gpu_insights_agent.contract.serving import Server, ServingMetric, Signal

#: The agent scrapes once a minute (serving_prometheus.SCRAPE_INTERVAL): a queue is read a
#: minute at a time, as OTel mode's (serving_promql.QUEUE_RANGE_S).
QUEUE_PERIOD_S: Final = 60
#: Preemptions are counted over five minutes, the window OTel mode's rate reads.
PREEMPTION_PERIOD_S: Final = 300

NAMES_THE_REPLICA: Final = (
    f"Each contributor ({DIM_CLUSTER}, {DIM_NAMESPACE}, {DIM_POD_NAME}: the Deployment or other "
    f"controller, {DIM_FULL_POD_NAME}: the pod, and the server's model label) names the model "
    "and the replica."
)


def classic_kind(signal_kind: str, server: Server, older: int = 0) -> str:
    """One alarm per server and scraped name: ``serving-requests-waiting-vllm``, and for a
    renamed metric's older name ``...-vllm-old1`` (a query reads one name)."""
    return f"{signal_kind}-{server}" + (f"-old{older}" if older else "")


def _per_replica(cluster: str, metric: ServingMetric, name: str, function: str) -> InsightsQuery:
    """One series per replica of a model (every dimension but the row's matcher labels, which
    the query sums over or filters on), the worst first."""
    dims = tuple(dimensions(metric))
    matchers = tuple(metric.matchers)
    group = tuple(d for d in dims if d not in {k for k, _ in matchers})
    return InsightsQuery(
        namespace=SERVING_NAMESPACE,
        metric=name,
        schema=dims,
        where=((DIM_CLUSTER, cluster), *matchers),
        function=function,
        group_by=group,
        order="DESC",
    )


def _names(signal: Signal) -> list[tuple[ServingMetric, int, str]]:
    """Every kept row of the signal with each of its names: (row, 0 newest / n-th older, name)."""
    return [
        (m, older, name)
        for m in kept_metrics()
        if m.signal is signal
        for older, name in enumerate(m.names)
    ]


def waiting_alarms(cluster: str, settings: ServingAlarmSettings) -> list[AlarmSpec]:
    """Per server with a queue gauge: a replica with more than N waiting in every minute of M.
    The gauge counts requests, so "more than N" is "at least N + 1" (a fleet count alarm
    counts ``>=`` only: model.BreachCount)."""
    alarms = []
    for metric, older, name in _names(Signal.WAITING):
        key = classic_kind("serving-requests-waiting", metric.server, older)
        minutes = settings.waiting_minutes
        alarms.append(
            AlarmSpec(
                key=key,
                kind=key,
                title=f"Requests waiting on a {metric.server} replica",
                description=(
                    f"A replica had more than {settings.waiting_requests} requests waiting "
                    f"({name}) in every minute of {minutes}: it runs as many as it "
                    "can and the rest queue. The value is the fewest waiting in the minute. "
                    "Add replicas (or GPUs) to the deployment, or check its batch limits. "
                    f"{NAMES_THE_REPLICA}"
                ),
                severity=Severity.WARNING,
                metric=_per_replica(cluster, metric, name, "MIN"),
                period_s=QUEUE_PERIOD_S,
                evaluation_periods=minutes,
                datapoints_to_alarm=minutes,
                threshold=settings.waiting_requests + 1,
                comparison=Comparison.GREATER_OR_EQUAL,
                missing_data=MissingData.NOT_BREACHING,
                missing_data_reason=(
                    "a replica that sends no sample is no queue to page; a server down is "
                    "its pod's and the GPU alarms' to tell"
                ),
            )
        )
    return alarms


def preemption_alarms(cluster: str) -> list[AlarmSpec]:
    """Per server that counts preemptions: a replica that preempted requests in five minutes,
    its KV cache full (module docstring). Each of the row's names (a renamed counter) is its
    own alarm: a query reads one name."""
    alarms = []
    for metric, older, name in _names(Signal.PREEMPTIONS):
        key = classic_kind("serving-kv-cache-full", metric.server, older)
        alarms.append(
            AlarmSpec(
                key=key,
                kind=key,
                title="KV cache full, requests preempted",
                description=(
                    f"A replica preempted requests in the last {PREEMPTION_PERIOD_S // 60} "
                    f"minutes ({name}): its KV cache had no room for the batch, so requests "
                    "are evicted and recomputed, and latency rises. Give the server more "
                    "GPU memory for its cache, fewer concurrent sequences, or more "
                    "replicas. The value is the preemptions in the period. "
                    f"{NAMES_THE_REPLICA}"
                ),
                severity=Severity.WARNING,
                metric=_per_replica(cluster, metric, name, "SUM"),
                period_s=PREEMPTION_PERIOD_S,
                evaluation_periods=1,
                datapoints_to_alarm=1,
                threshold=1,
                comparison=Comparison.GREATER_OR_EQUAL,
                missing_data=MissingData.NOT_BREACHING,
                missing_data_reason=(
                    "the agent sends a counter's change each scrape; no datapoint is no preemption"
                ),
            )
        )
    return alarms


def classic_serving_alarms(cluster: str, settings: ServingAlarmSettings) -> list[AlarmSpec]:
    """Classic mode's serving alarms (each with ``kind`` set), before their fleet counts."""
    alarms = [*waiting_alarms(cluster, settings), *preemption_alarms(cluster)]
    return [replace(a, kind=a.alarm_kind) for a in alarms]


#: Every kind the Classic serving alarms can have, for the composite's exclusions and docs.
CLASSIC_SERVING_ALARM_KINDS: Final = tuple(
    dict.fromkeys(a.alarm_kind for a in classic_serving_alarms("any", ServingAlarmSettings()))
)
