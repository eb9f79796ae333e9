"""The demo's inference serving: each replica's vLLM series and its GPU's DCGM series, as
samples (cli/demo/promql.py ``Sample``) for the local Prometheus, in the two stretches the demo
runs: the alarm stage's two hours (one sample a minute, a traffic spike and an idle replica
planted: cli/demo/otel_alarms.py) and the week (one sample an hour, what a daily analysis reads,
and one a minute over the days the serving dashboards show, as the add-on scrapes a server:
``SCRAPED_FROM_DAY``; the idle replica all week, the vLLM Deployment saturated one day).

Names are the serving table's newest (gpu_insights_agent/contract/serving.py); histograms in
the CLASSIC form (``<name>_bucket`` with ``le``, ``_sum``, ``_count``) a Prometheus holds that
scraped the server, as the local Prometheus 2.42 the demo and tests run does
(``HistogramForm.CLASSIC``); CloudWatch's store would hold the NATIVE form. Counters are
cumulative from the window's start and only rise. Labels are CloudWatch's in OTel mode: the
server's ``model_name`` (and V1's ``engine``) on the datapoint, the pod's resource attributes
under ``@resource.`` as DCGM's series carry them (cli/demo/realistic/otel.py
``dcgm_promql_labels``), and the pod's labels as ``@resource.k8s.pod.label.<key>`` (the
add-on's ``k8sattributes/cw_k8s_ci_v0_pod``: realistic/otel.py ``POD_METADATA``).
"""

import math
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import Any, Final

from cdk.alarms.power_table import gpu_power
from cli.demo.exporter import pod_uid, replay_window
from cli.demo.otel import DEMO_INTERVAL_S, PHASE_S, capacity_week_samples
from cli.demo.otlp import statistic_set_samples
from cli.demo.promql import Sample
from cli.demo.realistic import otel
from cli.demo.realistic.pods import Pod
from cli.demo.realistic.serving import (
    GPU_OF,
    IDLE_REPLICA,
    KSERVE,
    NODE,
    SERVING_PODS,
    VLLM,
    workload_of,
)
from cli.demo.week import HOURS, THIS_WEEK, GpuHourSample, WeekPlan, exporter_hour_data
from gpu_insights_agent.contract.metrics import OTLP_GPU, OTLP_NAMESPACE, OTLP_POD, OTLP_POD_UID
from gpu_insights_agent.contract.serving import (
    LENGTH_HISTOGRAMS,
    SERVERS,
    SERVING_METRICS,
    MetricType,
    Server,
    Signal,
    serving_metric,
)
from lambdas.shared.dcgm import DCGM_POWER, DCGM_UTIL

#: NVML's name of an A10G (dcgm-exporter's ``modelName``, as nodes.py's ``G5_12XLARGE`` product
#: label "NVIDIA-A10G" writes it with a dash), and its power limit from the fleet's table
#: (cdk/alarms/power_table.py: "300 W enforced power limit as NVML reports it on g5 instances").
GPU_NAME: Final = "NVIDIA A10G"
GPU_WATTS: Final = gpu_power(NODE.instance_type.name).watts_per_gpu
#: vLLM's histogram buckets (vllm-project/vllm vllm/v1/metrics/buckets.py, the same lists as
#: loggers.py's v0.8 and v0.12): time to first token, inter-token latency, request latency.
TTFT_BUCKETS: Final = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
    10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
ITL_BUCKETS: Final = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0,
)  # fmt: skip
REQUEST_LATENCY_BUCKETS: Final = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
    240.0, 480.0, 960.0, 1920.0, 7680.0,
)  # fmt: skip
#: How a step's requests spread about its typical latency: (multiple of it, percent). The p99
#: of a step is the bucket holding twice the typical (cumulative 99%).
SPREAD: Final = ((0.5, 50), (1.0, 40), (2.0, 9), (4.0, 1))
#: Tokens a request reads and writes; a tenth stop at ``max_tokens`` (finished_reason length).
PROMPT_TOKENS: Final = 600
GENERATION_TOKENS: Final = 200
TRUNCATED: Final = 0.1
#: vLLM's token-count buckets, ``build_1_2_5_buckets(max_model_len)`` (vllm/v1/metrics/
#: loggers.py, ``vllm:request_prompt_tokens`` and ``vllm:request_generation_tokens``), at a
#: max_model_len of 8,192.
TOKEN_BUCKETS: Final = tuple(float(b * 10**e) for e in range(4) for b in (1, 2, 5))
#: vLLM V1's finish reasons (vllm/v1/engine/__init__.py ``FinishReason``: stop, length, abort,
#: error), each a ``request_success_total`` series from the server's start.
FINISH_REASONS: Final = ("stop", "length", "abort", "error")
#: The label vLLM names the model by (contract/serving.py ``SERVERS``).
MODEL_LABEL: Final = SERVERS[Server.VLLM].model_label
#: V1's engine index label (loggers.py ``labelnames = ["model_name", "engine"]``): one engine.
ENGINE: Final = "0"


def _name(signal: Signal) -> str:
    """vLLM's newest name for ``signal`` (the serving table's first)."""
    metric = serving_metric(Server.VLLM, signal)
    assert metric is not None, signal
    return metric.names[0]


@dataclass(frozen=True)
class Load:
    """What one replica did over one step: requests finished, their typical first-token and
    inter-token latency, the queue and KV cache at the step's end, and its GPU's SM activity
    and power (percent of the limit)."""

    requests: int
    ttft_s: float = 0.12
    itl_s: float = 0.02
    running: float = 0.0
    waiting: float = 0.0
    kv_cache: float = 0.0
    util: float = 0.0
    power_percent: float = 8.0
    #: A request's typical prompt, and the share of requests cut at max_tokens.
    prompt_tokens: float = PROMPT_TOKENS
    truncated: float = TRUNCATED


#: An allocated replica the router sends nothing: vLLM's model loaded (its weights in memory)
#: and no kernel running: near-zero SM activity, the board's idle draw.
IDLE: Final = Load(requests=0, util=0.0, power_percent=8.0)


def replica_labels(cluster: str, pod: Pod) -> dict[str, str]:
    """A replica's vLLM series' labels: the model on the datapoint, the pod's resource
    attributes (DCGM's, less dcgm-exporter's own labels), the pod template's labels."""
    workload = workload_of(pod)
    dcgm = otel.dcgm_promql_labels(cluster, NODE.name, GPU_OF[pod], pod, workload.container)
    resource = {k: v for k, v in dcgm.items() if k.startswith(otel.RESOURCE_PREFIX)}
    return {MODEL_LABEL: workload.model, "engine": ENGINE} | resource | pod_labels(pod)


def pod_labels(pod: Pod) -> dict[str, str]:
    """The pod template's labels as the add-on's ``k8sattributes/cw_k8s_ci_v0_pod`` puts them on
    every series of the pod, its GPU's DCGM series among them: how the GPU analyzer tells a
    KServe InferenceService's pods from their Deployment's (gpu_hours/workloads.py)."""
    labels = workload_of(pod).labels.items()
    return {f"{otel.RESOURCE_PREFIX}k8s.pod.label.{k}": v for k, v in labels}


class _Histogram:
    """One histogram's cumulative buckets, sum and count."""

    def __init__(self, name: str, bounds: Sequence[float]) -> None:
        self.name, self.bounds = name, bounds
        self.counts = [0] * (len(bounds) + 1)  # the last: +Inf only
        self.sum = 0.0

    def observe(self, typical: float, requests: int, plus: float = 0.0) -> None:
        """``requests`` spread about ``typical`` (``SPREAD``), each ``plus`` longer."""
        placed = 0
        for i, (times, percent) in enumerate(SPREAD):
            n = requests - placed if i == len(SPREAD) - 1 else requests * percent // 100
            value = typical * times + plus
            self.counts[bisect_left(self.bounds, value)] += n
            self.sum += n * value
            placed += n

    def samples(self, labels: dict[str, str], at: float) -> Iterator[Sample]:
        running = 0
        for bound, n in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += n
            le = "+Inf" if bound == float("inf") else f"{bound:g}"
            yield f"{self.name}_bucket", labels | {"le": le}, at, float(running)
        yield f"{self.name}_sum", labels, at, self.sum
        yield f"{self.name}_count", labels, at, float(running)


def replica_samples(
    cluster: str, pod: Pod, steps: Iterable[tuple[float, Load]]
) -> Iterator[Sample]:
    """A replica's vLLM series at each step's start: the counters hold the steps before it
    (from 0 at the first: the server's start), the gauges the step's own; counters only rise."""
    for _, samples in replica_states(cluster, pod, steps):
        yield from samples


def replica_states(
    cluster: str, pod: Pod, steps: Iterable[tuple[float, Load]], *, end: float | None = None
) -> Iterator[tuple[float, list[Sample]]]:
    """A replica's vLLM series at each step's start, a list a step; with ``end``, also the
    counters at ``end`` after the last step (the gauges still the last step's)."""
    labels = replica_labels(cluster, pod)
    ttft = _Histogram(_name(Signal.TTFT), TTFT_BUCKETS)
    itl = _Histogram(_name(Signal.INTER_TOKEN), ITL_BUCKETS)
    e2e = _Histogram(_name(Signal.E2E), REQUEST_LATENCY_BUCKETS)
    lengths = {signal: _Histogram(m.names[0], TOKEN_BUCKETS) for m in LENGTH_HISTOGRAMS
               if m.server is Server.VLLM for signal in [m.signal]}  # fmt: skip
    finished = dict.fromkeys(FINISH_REASONS, 0)
    prompt = generated = 0
    load = Load(requests=0)

    def state(at: float) -> list[Sample]:
        samples = [s for h in (ttft, itl, e2e, *lengths.values()) for s in h.samples(labels, at)]
        for reason, n in finished.items():
            samples.append(
                (_name(Signal.REQUESTS), labels | {"finished_reason": reason}, at, float(n))
            )
        return [
            *samples,
            (_name(Signal.PROMPT_TOKENS), labels, at, float(prompt)),
            (_name(Signal.GENERATION_TOKENS), labels, at, float(generated)),
            (_name(Signal.PREEMPTIONS), labels, at, 0.0),
            (_name(Signal.RUNNING), labels, at, load.running),
            (_name(Signal.WAITING), labels, at, load.waiting),
            (_name(Signal.KV_CACHE), labels, at, load.kv_cache),
        ]

    for at, load in steps:
        yield at, state(at)
        ttft.observe(load.ttft_s, load.requests)
        itl.observe(load.itl_s, load.requests * GENERATION_TOKENS)
        e2e.observe(load.itl_s * GENERATION_TOKENS, load.requests, plus=load.ttft_s)
        lengths[Signal.PROMPT_LENGTH].observe(load.prompt_tokens, load.requests)
        lengths[Signal.GENERATION_LENGTH].observe(GENERATION_TOKENS, load.requests)
        length = round(load.requests * load.truncated)
        finished["stop"] += load.requests - length
        finished["length"] += length
        prompt += round(load.requests * load.prompt_tokens)
        generated += load.requests * GENERATION_TOKENS
    if end is not None:
        yield end, state(end)


#: vLLM's gauges (the serving table's ``GAUGE`` rows): a scrape reads the step's own value;
#: every other series a replica sends is a counter (a histogram's buckets, sum and count too).
GAUGES: Final = frozenset(
    _name(m.signal)
    for m in SERVING_METRICS
    if m.server is Server.VLLM and m.type is MetricType.GAUGE
)


def scraped(
    states: Iterable[tuple[float, list[Sample]]], interval: int, *, from_s: float
) -> Iterator[Sample]:
    """``states`` (each step's series, the last only closing the one before it: not sent) as a
    scrape every ``interval`` reads them from ``from_s`` on: between two steps a counter rises
    evenly from one step's value to the next's (a whole number of requests, tokens or bucket
    counts: rounded down, so a bucket never passes the one above it; a histogram's sum
    exactly), a gauge holds its step's value. Before ``from_s``, one sample a step."""
    previous: tuple[float, list[Sample]] | None = None
    for at, samples in states:
        if previous is not None:
            start, before = previous
            yield from before
            if start >= from_s:
                n = round((at - start) / interval)
                for k in range(1, n):
                    yield from (
                        _between(old, new[3], k, n, start + k * interval)
                        for old, new in zip(before, samples, strict=True)
                    )
        previous = at, samples


def _between(old: Sample, new: float, k: int, n: int, at: float) -> Sample:
    """``old``'s series ``k`` ``n``ths of the way to ``new``: a gauge unchanged, a counter
    risen (module's ``scraped``)."""
    name, labels, _, value = old
    if name in GAUGES:
        return name, labels, at, value
    risen = (new - value) * k / n
    return name, labels, at, value + (risen if name.endswith("_sum") else math.floor(risen))


def gpu_samples(
    cluster: str, pod: Pod, steps: Sequence[tuple[float, Load]], interval: int
) -> Iterator[Sample]:
    """The replica's GPU's DCGM SM activity and power every ``interval`` through each step (a
    step lasts to the next; the last as long as the one before it), labelled with the pod as
    DCGM's series of a held GPU are (realistic/otel.py ``dcgm_promql_labels``): a share of an
    hour is a count of samples, so a held hour is a full hour's."""
    labels = otel.dcgm_promql_labels(
        cluster, NODE.name, GPU_OF[pod], pod, workload_of(pod).container, model=GPU_NAME
    ) | pod_labels(pod)
    for i, (at, load) in enumerate(steps):
        length = (steps[i + 1][0] if i + 1 < len(steps) else 2 * at - steps[i - 1][0]) - at
        for k in range(int(length // interval)):
            yield DCGM_UTIL, labels, at + k * interval, load.util
            yield DCGM_POWER, labels, at + k * interval, load.power_percent / 100 * GPU_WATTS


def serving_samples(
    cluster: str,
    times: Sequence[float],
    load: Callable[[Pod, int], Load],
    gpu_interval: int | None = None,
    *,
    scrape: tuple[int, float] | None = None,
) -> Iterator[Sample]:
    """Every serving replica's vLLM series at ``times``, ``load(pod, i)`` its load in step
    ``i``; with ``gpu_interval``, its GPU's DCGM series every that many seconds; with
    ``scrape`` (interval, from), its vLLM series every ``interval`` seconds from ``from`` on,
    as a scrape reads them (``scraped``; the last step as long as the one before it)."""
    for pod in SERVING_PODS:
        steps = [(at, load(pod, i)) for i, at in enumerate(times)]
        if scrape is None:
            yield from replica_samples(cluster, pod, steps)
        else:
            end = 2 * times[-1] - times[-2]
            states = replica_states(cluster, pod, steps, end=end)
            yield from scraped(states, scrape[0], from_s=scrape[1])
        if gpu_interval is not None:
            yield from gpu_samples(cluster, pod, steps, gpu_interval)


# --- The week -----------------------------------------------------------------------------------

#: The day (0-based) the vLLM Deployment is saturated in its working hours: its queue grows,
#: its KV cache is full and its first tokens wait; its night is a usual one.
SATURATED_DAY: Final = 3
#: The working day (UTC hours, from the first to before the last).
WORKING_HOURS: Final = (9, 18)
#: A busy replica's requests an hour: 5 a second in the working day, 2 at night.
DAY_REQUESTS_PER_HOUR: Final = 18_000
NIGHT_REQUESTS_PER_HOUR: Final = 7_200
DAY_S: Final = 86_400
#: The first day (0-based) whose vLLM series are sampled every minute, as the add-on scrapes a
#: server: its Prometheus receivers scrape every ``otelContainerInsights.metricResolution``
#: ("Scrape interval for all OTEL CI prometheus receivers", "30s" by default:
#: aws-observability/helm-charts charts/amazon-cloudwatch-observability/values.yaml @71a298f,
#: templates/linux/_otel-container-insights-config.tpl ``scrape_interval``; "sends them to
#: CloudWatch using OTLP at 30-second granularity", container-insights-otel-metrics.html), the
#: demo's "60s" (cli/demo/otel.py ``DEMO_INTERVAL_S``), as its DCGM series and this project's
#: receiver (cdk/node_config/serving_otel.py ``SCRAPE_INTERVAL_S``). The day sampled so is the
#: one that holds the start of the day the demo's serving dashboards show. They
#: end with the replay (cli/demo/command.py: its PromQL widgets run to ``replay_window()``'s
#: end) and show a day ("-PT24H", dashboards/body.py), and their rates and quantiles read five
#: minutes of samples (``[5m]``, lambdas/shared/serving_queries.py ``RATE_RANGE_S``), which an
#: hourly sample never fills. The days before keep one sample an hour: the daily analysis reads
#: a day's increase, and a week of minutes would make the demo's Prometheus import much longer.
#: Whole days, so a day's mean of a gauge weighs its hours alike.
SCRAPED_FROM_DAY: Final = int((replay_window()[1] - DAY_S - THIS_WEEK.start) // DAY_S)
#: The hour of the week from which the KServe model's traffic drifts (Saturday 14:00 UTC): a
#: new client sends prompts 80% longer and a quarter of the outputs hit max_tokens
#: (docs/drift.md: the ``serving_drift`` finding and the report's drift section).
DRIFT_HOUR: Final = 5 * 24 + 14
DRIFT_PROMPT_TOKENS: Final = 1.8 * PROMPT_TOKENS
DRIFT_TRUNCATED: Final = 0.25


def week_load(pod: Pod, hour: int) -> Load:
    """A replica's hour of the week: the idle replica idle throughout; the others busier in
    the working day; the vLLM Deployment saturated in the working hours of ``SATURATED_DAY``
    (a fixed count too small at its peak and too large at night: an autoscaler's day); the
    KServe model's traffic drifted from ``DRIFT_HOUR`` on."""
    if pod == IDLE_REPLICA:
        return IDLE
    working = WORKING_HOURS[0] <= hour % 24 < WORKING_HOURS[1]
    if hour // 24 == SATURATED_DAY and working and pod in VLLM.pods:
        return Load(
            requests=2 * DAY_REQUESTS_PER_HOUR,
            ttft_s=1.5,
            itl_s=0.06,
            running=48,
            waiting=30,
            kv_cache=0.99,
            util=99,
            power_percent=97,
        )
    if working:
        load = Load(DAY_REQUESTS_PER_HOUR, running=12, kv_cache=0.45, util=70, power_percent=75)
    else:
        load = Load(NIGHT_REQUESTS_PER_HOUR, running=5, kv_cache=0.2, util=35, power_percent=40)
    if hour >= DRIFT_HOUR and pod in KSERVE.pods:
        return replace(load, prompt_tokens=DRIFT_PROMPT_TOKENS, truncated=DRIFT_TRUNCATED)
    return load


def serving_week_samples(
    cluster: str, plan: WeekPlan = THIS_WEEK, *, gpus: bool = False
) -> Iterator[Sample]:
    """The serving replicas' week, one sample an hour (at its start: an hour's requests are
    the counters' increase to the next hour's sample), for the daily serving analysis and the
    report, and from ``SCRAPED_FROM_DAY`` on one a minute, as the add-on's scrape reads them
    (``scraped``): the serving dashboards' rates and quantiles read five minutes of samples.
    ``gpus``: with their GPUs' DCGM series every minute (the demo's
    ``metricResolution``, cli/demo/otel.py ``DEMO_INTERVAL_S``) and the serving node's exporter
    series (its OTLP sink's, as the week's other nodes': cli/demo/otel.py
    ``exporter_week_samples``), which the GPU-hour attribution prices the replicas with. The
    run that must equal the Classic run loads no serving week: the Classic week
    (cli/demo/week.py ``NODES``) has no serving node."""
    times = [plan.start + hour * 3600 + PHASE_S for hour in range(HOURS)]
    scrape = (DEMO_INTERVAL_S, plan.start + SCRAPED_FROM_DAY * DAY_S)
    replicas = serving_samples(
        cluster, times, week_load, DEMO_INTERVAL_S if gpus else None, scrape=scrape
    )
    if not gpus:
        return replicas
    exporter = attributed(statistic_set_samples(exporter_week(cluster, plan), start=plan.start))
    # The serving node's GPU capacity, as Kube State Metrics reports every node's.
    capacity = capacity_week_samples(cluster, plan, nodes=(NODE,))
    return chain(replicas, exporter, capacity)


def attributed(samples: Iterable[Sample]) -> Iterator[Sample]:
    """The serving node's exporter series as its OTLP sink sends them with pod attribution on,
    as the replayed node's exporter has it (cli/demo/exporter.py ``write_pod_logs``): a GPU one
    pod holds carries the pod's UID, namespace and name on its resource
    (exporter/otlp_sink.py ``resource_attributes``), which the deployment dashboard's power
    against the limit reads per replica. Each replica holds its GPU all week."""
    holder = {str(gpu): pod for pod, gpu in GPU_OF.items()}
    for name, labels, at, value in samples:
        pod = holder.get(labels.get(OTLP_GPU, ""))
        held: dict[str, str] = {} if pod is None else {
            otel.RESOURCE_PREFIX + OTLP_POD_UID: pod_uid(pod),
            otel.RESOURCE_PREFIX + OTLP_NAMESPACE: pod.namespace,
            otel.RESOURCE_PREFIX + OTLP_POD: pod.name,
        }  # fmt: skip
        yield name, {**labels, **held}, at, value


def exporter_week(cluster: str, plan: WeekPlan = THIS_WEEK) -> list[dict[str, Any]]:
    """The serving node's exporter's week as the week's statistic sets (week.py
    ``exporter_hour_data``): each replica's GPU at its hour's power, its SM activity at its
    utilization, allocated to its pod; the node's other GPUs none (one GPU a replica)."""
    data: list[dict[str, Any]] = []
    for hour in range(HOURS):
        samples = [
            GpuHourSample(NODE.name, GPU_OF[pod], hour, load.power_percent, load.util,
                          healthy=True, pod=pod)
            for pod in SERVING_PODS
            for load in [week_load(pod, hour)]
        ]  # fmt: skip
        data += exporter_hour_data(cluster, hour, samples, plan.start)
    return data
