"""The demo's serving series (cli/demo/serving.py): vLLM's own names, buckets and labels,
counters that only rise, and the week's idle replica and saturated day."""

from collections import defaultdict
from collections.abc import Iterable

import pytest

from cli.demo.promql import Sample
from cli.demo.realistic.serving import GPU_OF, IDLE_REPLICA, KSERVE, NODE, VLLM
from cli.demo.serving import (
    SATURATED_DAY,
    SCRAPED_FROM_DAY,
    TTFT_BUCKETS,
    Load,
    gpu_samples,
    replica_samples,
    replica_states,
    scraped,
    serving_week_samples,
)
from cli.demo.week import DAYS, HOURS, THIS_WEEK
from gpu_insights_agent.contract.serving import LENGTH_HISTOGRAMS, SERVING_METRICS, Server
from lambdas.shared.dcgm import CLOUDWATCH as L
from lambdas.shared.dcgm import DCGM_POWER, DCGM_UTIL

CLUSTER = "train"
#: The serving table's vLLM rows and its per-request length histograms (drift's).
VLLM_ROWS = [m for m in (*SERVING_METRICS, *LENGTH_HISTOGRAMS) if m.server is Server.VLLM]
VLLM_NAMES = {n for m in VLLM_ROWS for n in m.names}
SUFFIXES = ("_bucket", "_sum", "_count")


def _series(samples: Iterable[Sample]) -> dict[tuple[str, frozenset], list[tuple[float, float]]]:  # type: ignore[type-arg]
    out: dict[tuple[str, frozenset], list[tuple[float, float]]] = defaultdict(list)  # type: ignore[type-arg]
    for name, labels, at, value in samples:
        out[(name, frozenset(labels.items()))].append((at, value))
    return out


def _base(name: str) -> str:
    return next((name[: -len(s)] for s in SUFFIXES if name.endswith(s)), name)


def test_every_name_is_vllms_newest_in_the_serving_table() -> None:
    names = {name for name, *_ in replica_samples(CLUSTER, VLLM.pods[0], [(0.0, Load(100))])}
    served = {_base(n) for n in names}
    assert served <= VLLM_NAMES
    newest = {m.names[0] for m in VLLM_ROWS}
    assert served == newest  # every signal, none under an old name
    assert "vllm:time_to_first_token_seconds_bucket" in names  # the CLASSIC form


def test_the_ttft_buckets_are_vllms_cumulative_up_to_inf() -> None:
    # 100 requests in the first step: seen at the second step's start.
    samples = list(
        replica_samples(CLUSTER, VLLM.pods[0], [(0.0, Load(100, ttft_s=0.12)), (60.0, Load(0))])
    )
    buckets = {
        labels["le"]: value
        for name, labels, at, value in samples
        if name == "vllm:time_to_first_token_seconds_bucket" and at == 60.0
    }
    assert list(buckets) == [f"{b:g}" for b in TTFT_BUCKETS] + ["+Inf"]
    assert buckets["0.06"] == 50  # half at 0.06 s
    assert buckets["0.25"] == 99  # 0.12 and 0.24 s
    assert buckets["0.5"] == buckets["+Inf"] == 100  # the last 1% at 0.48 s
    values = list(buckets.values())
    assert values == sorted(values)
    count = next(
        v
        for n, labels, at, v in samples
        if n == "vllm:time_to_first_token_seconds_count" and at == 60.0
    )
    assert count == 100


@pytest.fixture(scope="module")
def week() -> list[Sample]:
    return list(serving_week_samples(CLUSTER, gpus=True))


def test_counters_only_rise_over_the_week_and_the_idle_replica_serves_nothing(
    week: list[Sample],
) -> None:
    series = _series(week)
    counters = [
        (key, points)
        for key, points in series.items()
        if key[0].endswith(("_total", "_bucket", "_sum", "_count"))
    ]
    assert counters
    for key, points in counters:
        values = [v for _, v in sorted(points)]
        assert values == sorted(values), key[0]
        # One sample an hour, then one a minute from the day the dashboards' day starts in: the
        # week's last two days (docs/demo.md).
        assert SCRAPED_FROM_DAY == DAYS - 2
        assert len(points) == SCRAPED_FROM_DAY * 24 + (HOURS - SCRAPED_FROM_DAY * 24) * 60
    idle = {
        name: points
        for (name, labels), points in series.items()
        if dict(labels).get(L.pod) == IDLE_REPLICA.name
    }
    assert all(v == 0 for _, v in idle["vllm:prompt_tokens_total"])
    assert max(v for _, v in idle[DCGM_UTIL]) == 0
    assert max(v for _, v in idle[DCGM_POWER]) < 30  # 8% of the A10G's 300 W
    # The GPU's series every minute of every hour: the attribution counts a full hour held.
    assert len(idle[DCGM_POWER]) == HOURS * 60
    # Without them (the OTel run's load), only vLLM's series.
    assert not any(name.startswith("DCGM_") for name, *_ in serving_week_samples(CLUSTER))


def test_the_vllm_deployment_is_saturated_on_one_day_only(week: list[Sample]) -> None:
    day = {
        (hour // 24)
        for name, labels, at, value in week
        if name == "vllm:num_requests_waiting" and value > 0
        for hour in [int((at - THIS_WEEK.start) // 3600)]
        if labels[L.deployment] == VLLM.deployment
    }
    assert day == {SATURATED_DAY}


def test_the_labels_are_cloudwatchs_in_otel_mode() -> None:
    (pod,) = KSERVE.pods
    name, labels, _, _ = next(iter(replica_samples(CLUSTER, pod, [(0.0, Load(1))])))
    assert name.startswith("vllm:")
    assert labels["model_name"] == "mistralai/Mistral-7B-Instruct-v0.3"
    assert labels[L.cluster] == CLUSTER
    assert labels[L.namespace] == "inference"
    assert labels[L.pod] == pod.name
    assert labels[L.node] == NODE.name
    assert labels[L.deployment] == "mistral-7b-predictor"
    assert labels["@resource.k8s.pod.label.serving.kserve.io/inferenceservice"] == "mistral-7b"
    # The GPU's DCGM series: the same pod, its GPU index, the A10G's name.
    steps = [(0.0, Load(1)), (60.0, Load(1))]
    gpu = next(labels for n, labels, *_ in gpu_samples(CLUSTER, pod, steps, 30) if n == DCGM_POWER)
    assert len(list(gpu_samples(CLUSTER, pod, steps, 30))) == 2 * 2 * 2  # 2 steps, 2 a step
    assert (gpu[L.pod], gpu[L.gpu], gpu[L.model]) == (pod.name, str(GPU_OF[pod]), "NVIDIA A10G")


def test_a_scrape_reads_counters_rising_evenly_and_the_hours_values_unchanged() -> None:
    """Between two hourly steps a scrape every minute reads each counter rising evenly, in
    whole requests, and each gauge at its hour's value; at each hour's start the values are the
    hourly series' own, so a day's increase is the same read either way. 7,200 requests in
    the first hour, of which 648 (9%) at twice the typical 0.12 s first token."""
    pod = VLLM.pods[0]
    steps = [(0.0, Load(7_200, running=5)), (3600.0, Load(18_000, running=12))]
    hourly = _series(replica_samples(CLUSTER, pod, steps))
    states = replica_states(CLUSTER, pod, steps, end=7200.0)
    minutes = _series(scraped(states, 60, from_s=0.0))
    for key, points in hourly.items():
        assert [p for p in minutes[key] if p[0] in (0.0, 3600.0)] == points, key[0]
        assert len(minutes[key]) == 120, key[0]
    stop = next(k for k in minutes if k[0] == "vllm:request_success_total"
                and dict(k[1])["finished_reason"] == "stop")  # fmt: skip
    # 6,480 stopped in the first hour (a tenth at max_tokens): 108 a minute.
    assert [v for _, v in minutes[stop][:3]] == [0.0, 108.0, 216.0]
    assert minutes[stop][60] == (3600.0, 6480.0)
    bucket = next(k for k in minutes if k[0] == "vllm:time_to_first_token_seconds_bucket"
                  and dict(k[1])["le"] == "0.25")  # fmt: skip
    # 3,528 of 7,200 within 0.25 s but not 0.1 s (40% and 9%) and 3,600 at 0.06 s: 7,128 an
    # hour, 118.8 a minute read as whole requests.
    assert [v for _, v in minutes[bucket][:3]] == [0.0, 118.0, 237.0]
    running = next(k for k in minutes if k[0] == "vllm:num_requests_running")
    assert {v for t, v in minutes[running] if t < 3600} == {5.0}
    assert {v for t, v in minutes[running] if t >= 3600} == {12.0}
    # Before ``from_s``, one sample a step.
    late = _series(scraped(replica_states(CLUSTER, pod, steps, end=7200.0), 60, from_s=3600.0))
    assert len(late[running]) == 1 + 60
