"""The demo's inference serving: each replica's vLLM series and its GPU's DCGM series, as
samples (cli/demo/promql.py ``Sample``) for the local Prometheus, in the two stretches the demo
runs: the alarm stage's two hours (one sample a minute, a traffic spike and an idle replica
planted: cli/demo/otel_alarms.py) and the week (one sample an hour: what a daily analysis reads;
the idle replica all week, the vLLM Deployment saturated one day).

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

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import Any, Final

from cdk.alarms.power_table import gpu_power
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
from gpu_insights_agent.contract.serving import (
    LENGTH_HISTOGRAMS,
    SERVERS,
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
    labels = replica_labels(cluster, pod)
    ttft = _Histogram(_name(Signal.TTFT), TTFT_BUCKETS)
    itl = _Histogram(_name(Signal.INTER_TOKEN), ITL_BUCKETS)
    e2e = _Histogram(_name(Signal.E2E), REQUEST_LATENCY_BUCKETS)
    lengths = {signal: _Histogram(m.names[0], TOKEN_BUCKETS) for m in LENGTH_HISTOGRAMS
               if m.server is Server.VLLM for signal in [m.signal]}  # fmt: skip
    finished = dict.fromkeys(FINISH_REASONS, 0)
    prompt = generated = 0
    for at, load in steps:
        for histogram in (ttft, itl, e2e, *lengths.values()):
            yield from histogram.samples(labels, at)
        for reason, n in finished.items():
            yield _name(Signal.REQUESTS), labels | {"finished_reason": reason}, at, float(n)
        yield _name(Signal.PROMPT_TOKENS), labels, at, float(prompt)
        yield _name(Signal.GENERATION_TOKENS), labels, at, float(generated)
        yield _name(Signal.PREEMPTIONS), labels, at, 0.0
        yield _name(Signal.RUNNING), labels, at, load.running
        yield _name(Signal.WAITING), labels, at, load.waiting
        yield _name(Signal.KV_CACHE), labels, at, load.kv_cache
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
) -> Iterator[Sample]:
    """Every serving replica's vLLM series at ``times``, ``load(pod, i)`` its load in step
    ``i``; with ``gpu_interval``, its GPU's DCGM series every that many seconds."""
    for pod in SERVING_PODS:
        steps = [(at, load(pod, i)) for i, at in enumerate(times)]
        yield from replica_samples(cluster, pod, steps)
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
    report. ``gpus``: with their GPUs' DCGM series every minute (the demo's
    ``metricResolution``, cli/demo/otel.py ``DEMO_INTERVAL_S``) and the serving node's exporter
    series (its OTLP sink's, as the week's other nodes': cli/demo/otel.py
    ``exporter_week_samples``), which the GPU-hour attribution prices the replicas with. The
    run that must equal the Classic run loads no serving week: the Classic week
    (cli/demo/week.py ``NODES``) has no serving node."""
    times = [plan.start + hour * 3600 + PHASE_S for hour in range(HOURS)]
    replicas = serving_samples(cluster, times, week_load, DEMO_INTERVAL_S if gpus else None)
    if not gpus:
        return replicas
    exporter = statistic_set_samples(exporter_week(cluster, plan), start=plan.start)
    # The serving node's GPU capacity, as Kube State Metrics reports every node's.
    capacity = capacity_week_samples(cluster, plan, nodes=((NODE, len(GPU_OF)),))
    return chain(replicas, exporter, capacity)


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
