"""The serving queries as CloudWatch reads them (native histograms under the metric's name) and
the serving settings' refusals."""

import pytest

from cdk.alarms.serving_promql import (
    ServingAlarmSettings,
    ServingAlarmSettingsError,
    latency_slo_query,
    model_group,
    quantile,
)
from gpu_insights_agent.contract.serving import Server, Signal, serving_metric


def test_cloudwatch_reads_a_histogram_by_its_own_name_without_le() -> None:
    itl = serving_metric(Server.VLLM, Signal.INTER_TOKEN)
    assert itl is not None
    query = quantile(itl, 0.9, "prod", model_group(itl))
    assert query == (
        "histogram_quantile(0.9, "
        '(sum by ("@resource.k8s.cluster.name", "@resource.k8s.namespace.name", '
        '"@resource.k8s.deployment.name", model_name) (rate({__name__=~"(ray_)?vllm[:_]inter_'
        'token_latency_seconds", "@resource.k8s.cluster.name"="prod"}[5m]))) or (sum by ('
        '"@resource.k8s.cluster.name", "@resource.k8s.namespace.name", '
        '"@resource.k8s.deployment.name", model_name) (rate({__name__=~"(ray_)?vllm[:_]time_per_'
        'output_token_seconds", "@resource.k8s.cluster.name"="prod"}[5m]))))'
    )
    assert "_bucket" not in query


def test_a_millisecond_histogram_is_read_in_seconds() -> None:
    triton = serving_metric(Server.TRITON, Signal.TTFT)
    assert triton is not None
    assert quantile(triton, 0.99, "prod", model_group(triton)).endswith(" * 0.001)")


def test_no_target_for_any_model_is_no_alarm() -> None:
    assert latency_slo_query(Signal.E2E, "prod", None, ()) is None
    query = latency_slo_query(Signal.E2E, "prod", None, (("llama", 30.0),))
    assert query is not None
    assert 'model_name="llama"' in query.query
    assert "!=" not in query.query  # no default clause


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"ttft_p99_targets": (("llama", 0.0),)}, "serving_ttft_p99_targets['llama']=0.0"),
        (
            {"e2e_p99_targets": (("a", 1.0), ("a", 2.0))},
            "serving_e2e_p99_targets: model 'a' is empty or given twice",
        ),
        ({"waiting_minutes": 0}, "serving_waiting_minutes=0"),
        ({"error_percent": 100.0}, "serving_error_percent=100.0"),
    ],
)
def test_a_bad_target_is_refused_by_name(settings: dict[str, object], named: str) -> None:
    with pytest.raises(ServingAlarmSettingsError, match="^" + named.replace("[", r"\[")):
        ServingAlarmSettings(**settings)  # type: ignore[arg-type]


def test_the_serving_rates_read_the_five_minutes_the_gpu_alarms_read() -> None:
    from cdk.alarms.promql import RANGE_S
    from lambdas.shared.serving_queries import RATE_RANGE_S

    assert RATE_RANGE_S == RANGE_S
