"""The serving dashboards' PromQL charts run by the dashboard evaluator on a real PromQL engine
(Debian's Prometheus, tests/prometheus.py), over the serving alarms' vLLM-shaped series
(tests/functional/cdk/alarms/test_serving_promql.py: llama's two replicas with a p99 time to
first token of 3.75 s and 10% errors, mistral's one at 0.4975 s and none), in the classic bucket
form a Prometheus scrape holds."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli.backtest.dashboards import PromQLSource, WidgetView, evaluate_body
from dashboards.serving import (
    DEPLOYMENT_VARIABLE,
    MODELS_NOT_DRAWN,
    MODELS_SERVING,
    NAMESPACE_VARIABLE,
    ServingTargets,
    deployment,
    serving,
)
from gpu_insights_agent.contract.serving import HistogramForm
from lambdas.shared.promql import PromQLClient
from tests.functional.cdk.alarms.test_serving_promql import CLUSTER, END, LABELS, _series
from tests.prometheus import serve, write_openmetrics

pytestmark = pytest.mark.promql_engine


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PromQLSource]:
    folder: Path = tmp_path_factory.mktemp("serving-dashboard")
    write_openmetrics(folder / "serving.om", _series())
    with serve(folder / "serving.om", folder / "data") as url:
        yield PromQLSource(PromQLClient(endpoint=url, region="us-east-1", credentials=None), END)


def _views(body: dict[str, Any], source: PromQLSource, **variables: str) -> dict[str, WidgetView]:
    return {v.title: v for v in evaluate_body(body, [], variables, promql=source)}


def _by_model(view: WidgetView) -> dict[str, float]:
    """model -> value, from a line labelled with the label values in label-name order (the
    model's ``model_name`` is the bare label, after the ``@resource`` ones)."""
    return {line.label.split()[-1]: round(line.value, 4) for line in view.lines}


def test_the_serving_dashboard_draws_each_model_as_the_alarms_read_it(
    source: PromQLSource,
) -> None:
    targets = ServingTargets(ttft_p99_s=2.0, ttft_p99_targets=(("mistral", 0.3),), error_percent=5)
    views = _views(serving(CLUSTER, "us-east-1", targets, LABELS, HistogramForm.CLASSIC), source)
    ttft = views["Time to first token p99 (s), 10 models; alarm above 2 s (mistral 0.3 s)"]
    assert _by_model(ttft) == {"llama": 3.75, "mistral": 0.4975}
    assert _by_model(views["Time to first token p50 (s), 10 models"]) == {
        "llama": 0.1765,
        "mistral": 0.375,
    }
    assert _by_model(views["Errors (% of finished requests); alarm above 5%"]) == {
        "llama": 10.0,
        "mistral": 0.0,
    }
    # vLLM's 0-1 fraction in percent; llama's newest name (replica A) over the old one's (B).
    assert _by_model(views["KV cache used, the fullest replica (%)"]) == {
        "llama": 97.0,
        "mistral": 99.0,
    }
    assert _by_model(views["Generation tokens a second"]) == {"llama": 3000.0, "mistral": 1500.0}
    assert [line.value for line in views[MODELS_SERVING].lines] == [2.0]
    # Two models: none beyond the ten, a 0 drawn (not "no data").
    assert [line.value for line in views[MODELS_NOT_DRAWN].lines] == [0.0]


def test_the_deployment_dashboard_draws_its_replicas_only(source: PromQLSource) -> None:
    body = deployment(CLUSTER, "us-east-1", labels=LABELS, form=HistogramForm.CLASSIC)
    views = _views(
        body, source, **{NAMESPACE_VARIABLE: "serving", DEPLOYMENT_VARIABLE: "llama-vllm"}
    )
    waiting = views["Requests waiting, per replica"]
    assert sorted(round(line.value) for line in waiting.lines) == [3, 12]
    assert all("llama-vllm-5d8f-" in line.label for line in waiting.lines)
    kv = views["KV cache used, per replica (%)"]
    # Replica B sends the old name only; per replica, each replica's own.
    assert sorted(round(line.value) for line in kv.lines) == [97, 98]
