"""The add-on's configuration values, held to the chart they configure.

The ``amazon-cloudwatch-observability`` add-on is built from the Helm chart of the same name;
its configuration values are that chart's values (chart 6.4.0's values.yaml, vendored in
tests/data/ from aws-observability/helm-charts charts/amazon-cloudwatch-observability/).
A key the chart does not have is ignored, so a typo silently turns a feature off: every key we
set must be one of the chart's, with the type of the chart's default.
"""

import json
from typing import Any

import jsonschema
import kubernetes_validate.utils  # type: ignore[import-untyped]
import pytest

from cdk.constructs.addon_configuration import ObservabilityAddonConfiguration
from gpu_insights_agent.contract.metrics import DEFAULT_EMF_ENDPOINT, EMF_PORT
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from tests.unit.reference_data import (
    agent_config_schema,
    observability_chart_values,
    translator_keys,
    unknown_agent_keys,
)

#: Where values.yaml leaves the content to the user (a null, ``{}`` or list default), the type
#: the chart's templates need there and what checks the content instead.
FREE_FORM: dict[tuple[str, ...], tuple[type, str]] = {
    # templates/linux/cloudwatch-agent-custom-resource.yaml passes it to
    # "cloudwatch-agent.modify-config" (templates/_helpers.tpl), which calls hasKey on it: a map,
    # the agent's JSON configuration, checked against the agent's schema and translator keys.
    ("agent", "config"): (dict, "the agent's configuration"),
    # templates/linux/cloudwatch-agent-custom-resource.yaml writes it, toYaml, as the agent
    # resource's spec.prometheus.config: a Prometheus configuration (global, scrape_configs),
    # checked by promtool in tests/unit/cdk/node_config/test_serving_prometheus.py.
    ("agent", "prometheus", "config"): (dict, "a Prometheus configuration"),
    # templates/linux/cloudwatch-agent-custom-resource.yaml merges it with the generated OTel
    # configuration ("cloudwatch-agent.merge-otel-configs", templates/_helpers.tpl), a map or a
    # YAML string: an OTel collector configuration, checked in
    # tests/unit/cdk/node_config/test_serving_otel.py.
    ("agent", "otelConfig"): (dict, "an OTel collector configuration"),
    # Rendered as the pods' tolerations: each a Kubernetes Toleration, checked against its schema.
    ("tolerations",): (list, "Kubernetes tolerations"),
}

TOLERATION_SCHEMA = "kubernetes-json-schema/v1.33.0-local-strict/toleration-v1.json"


def _gpu_values(**overrides: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "cluster_name": "train",
        "container_logs": True,
        "tolerate_all_taints": False,
        "gpu_taint_keys": ("nvidia.com/gpu", "example.com/h200"),
    }
    config = ObservabilityAddonConfiguration.for_gpu_cluster(**{**arguments, **overrides})
    values: dict[str, Any] = json.loads(config.to_json())
    return values


def _chart_problems(values: Any, defaults: Any, path: tuple[str, ...] = ()) -> list[str]:
    """Keys the chart does not have, and values of another type than the chart's default."""
    problems = []
    for key, value in values.items():
        where = (*path, key)
        name = ".".join(where)
        if not isinstance(defaults, dict) or key not in defaults:
            problems.append(f"{name}: not a key of the chart")
            continue
        default = defaults[key]
        if where in FREE_FORM:
            kind, _ = FREE_FORM[where]
            if not isinstance(value, kind):
                problems.append(f"{name}: {type(value).__name__}, the chart needs {kind.__name__}")
        elif default in (None, {}, []):
            problems.append(f"{name}: free-form in the chart; say in FREE_FORM what it takes")
        elif isinstance(default, dict):
            if isinstance(value, dict):
                problems += _chart_problems(value, default, where)
            else:
                problems.append(f"{name}: {type(value).__name__}, the chart has a map")
        elif type(value) is not type(default):
            problems.append(
                f"{name}: {type(value).__name__}, the chart's default is {type(default).__name__}"
            )
    return problems


def _toleration_problems(tolerations: list[Any]) -> list[str]:
    schema = kubernetes_validate.utils.schema_contents(TOLERATION_SCHEMA, "1.33.0")
    validator = jsonschema.Draft202012Validator(schema)
    return [error.message for item in tolerations for error in validator.iter_errors(item)]


@pytest.mark.parametrize("serving_metrics", [True, False])
@pytest.mark.parametrize("mode", list(ContainerInsightsMode))
@pytest.mark.parametrize("tolerate_all", [True, False])
@pytest.mark.parametrize("container_logs", [True, False])
def test_every_value_is_a_chart_key_of_the_charts_type(
    tolerate_all: bool, container_logs: bool, mode: ContainerInsightsMode, serving_metrics: bool
) -> None:
    values = _gpu_values(
        tolerate_all_taints=tolerate_all,
        container_logs=container_logs,
        mode=mode,
        serving_metrics=serving_metrics,
    )
    assert _chart_problems(values, observability_chart_values()) == []
    assert _toleration_problems(values["tolerations"]) == []
    agent_config = values["agent"]["config"]
    jsonschema.Draft4Validator(agent_config_schema()).validate(agent_config)
    assert unknown_agent_keys(agent_config) == []


def test_the_chart_check_finds_a_typo_a_wrong_type_and_an_unexplained_free_form_key() -> None:
    values = _gpu_values()
    values["containerLogs"]["enable"] = True
    values["agent"]["enabled"] = "true"
    values["agent"]["env"] = []
    values["agent"]["config"] = "{}"
    values["tolerations"].append({"key": "x", "operater": "Exists"})
    assert _chart_problems(values, observability_chart_values()) == [
        "agent.config: str, the chart needs dict",
        "agent.enabled: str, the chart's default is bool",
        "agent.env: free-form in the chart; say in FREE_FORM what it takes",
        "containerLogs.enable: not a key of the chart",
    ]
    assert _toleration_problems(values["tolerations"]) == [
        "Additional properties are not allowed ('operater' was unexpected)"
    ]


def test_emf_listener_is_on_at_the_port_the_exporter_sends_to() -> None:
    """``"emf": {}`` opens the agent's EMF listener on its default socket, tcp:25888
    (CloudWatch User Guide, "Using the CloudWatch agent to send embedded metric format logs",
    awsdocs/amazon-cloudwatch-user-guide
    doc_source/CloudWatch_Embedded_Metric_Format_Generation_CloudWatch_Agent.md).
    The agent's schema leaves logs.metrics_collected open, so validating the schema proves
    nothing about ``emf``; the translator's keys name it (translator/translate/otel/common)."""
    collected = _gpu_values()["agent"]["config"]["logs"]["metrics_collected"]
    assert collected["emf"] == {}
    assert "emf" in translator_keys()
    assert (
        "emf"
        not in agent_config_schema()["definitions"]["logsDefinition"]["properties"][
            "metrics_collected"
        ]["properties"]
    )
    assert EMF_PORT == 25888
    assert DEFAULT_EMF_ENDPOINT.endswith(f":{EMF_PORT}")


def test_configuration_round_trips_through_json() -> None:
    config = ObservabilityAddonConfiguration.for_gpu_cluster(
        cluster_name="train",
        container_logs=False,
        tolerate_all_taints=True,
        gpu_taint_keys=("nvidia.com/gpu",),
    )
    values = json.loads(config.to_json())
    assert values["containerLogs"] == {"enabled": False}
    assert values["tolerations"] == [{"operator": "Exists"}]
    kubernetes = values["agent"]["config"]["logs"]["metrics_collected"]["kubernetes"]
    assert kubernetes["cluster_name"] == "train"
    assert kubernetes["accelerated_compute_metrics"] is True


def test_only_gpu_taints_when_not_tolerating_all() -> None:
    config = ObservabilityAddonConfiguration.for_gpu_cluster(
        cluster_name="train",
        container_logs=True,
        tolerate_all_taints=False,
        gpu_taint_keys=("nvidia.com/gpu", "example.com/h200"),
    )
    assert config.to_dict()["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists"},
        {"key": "example.com/h200", "operator": "Exists"},
    ]


def test_otel_mode_turns_on_the_otlp_pipeline_and_turns_off_classics() -> None:
    """The chart's values.yaml: ``otelContainerInsights.enabled: false`` by default, and
    ``containerInsights.enabled: true`` ("Can run alongside otelContainerInsights — both
    pipelines are independent"): OTel mode must set both, or the cluster runs (and pays for)
    Classic as well. The agent keeps only the EMF listener the exporter sends to."""
    chart = observability_chart_values()
    assert chart["otelContainerInsights"]["enabled"] is False
    assert chart["containerInsights"]["enabled"] is True
    values = _gpu_values(mode=ContainerInsightsMode.OTEL)
    assert values["otelContainerInsights"] == {"enabled": True, "logs": {"enabled": False}}
    assert values["containerInsights"] == {"enabled": False}
    assert values["agent"]["config"] == {"logs": {"metrics_collected": {"emf": {}}}}
    # DCGM's exporter, whose series OTel mode sends, is on by the chart's default.
    assert chart["dcgmExporter"]["enabled"] is True


def test_classic_mode_is_todays_configuration_unchanged() -> None:
    values = _gpu_values(mode=ContainerInsightsMode.CLASSIC)
    assert set(values) == {"agent", "containerLogs", "tolerations"}
    kubernetes = values["agent"]["config"]["logs"]["metrics_collected"]["kubernetes"]
    assert kubernetes["enhanced_container_insights"] is True


def test_classic_serving_metrics_scrape_through_the_target_allocator() -> None:
    """The chart's ``agent.prometheus.config`` becomes the agent resource's
    ``spec.prometheus.config``, which the operator mounts as /etc/prometheusconfig/prometheus.yaml
    (cdk/node_config/serving_prometheus.py cites where); the agent config points there. The
    agent is a DaemonSet, so the target allocator shares the servers out: each scraped once."""
    chart = observability_chart_values()
    assert chart["agent"]["prometheus"]["targetAllocator"]["enabled"] is False
    values = _gpu_values(mode=ContainerInsightsMode.CLASSIC, serving_metrics=True)
    prometheus = values["agent"]["prometheus"]
    assert prometheus["targetAllocator"] == {"enabled": True}
    jobs = [job["job_name"] for job in prometheus["config"]["scrape_configs"]]
    assert jobs == ["vllm", "nim-llm", "triton", "ray-serve"]
    section = values["agent"]["config"]["logs"]["metrics_collected"]["prometheus"]
    assert section["prometheus_config_path"] == "/etc/prometheusconfig/prometheus.yaml"
    assert section["cluster_name"] == "train"
    assert section["emf_processor"]["metric_namespace"] == "ContainerInsights/Prometheus"


@pytest.mark.parametrize(
    ("mode", "serving_metrics"),
    [(ContainerInsightsMode.OTEL, True), (ContainerInsightsMode.CLASSIC, False)],
)
def test_no_serving_scrape_in_otel_mode_or_when_turned_off(
    mode: ContainerInsightsMode, serving_metrics: bool
) -> None:
    """OTel mode's add-on collects the servers itself; ``serving_metrics=false`` turns it off."""
    values = _gpu_values(mode=mode, serving_metrics=serving_metrics)
    assert "prometheus" not in values["agent"]
    assert "prometheus" not in values["agent"]["config"]["logs"]["metrics_collected"]
