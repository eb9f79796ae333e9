"""OTel mode's serving receiver, held to the chart it is merged into (the chart's merge rule,
aws-observability/helm-charts templates/_helpers.tpl ``cloudwatch-agent.merge-otel-configs``,
chart 6.4.0), Prometheus' parser (promtool) and its relabelling rules."""

import json
from pathlib import Path
from typing import Any

import yaml

from cdk.constructs.addon_configuration import ObservabilityAddonConfiguration
from cdk.node_config.serving_otel import (
    ADDON_COLLECTED,
    ADDON_METRICS_EXPORTER,
    PIPELINE,
    RECEIVER_SCRAPED,
    serving_otel_config,
)
from gpu_insights_agent.contract.serving import SERVERS
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from tests.unit.cdk.node_config.test_serving_prometheus import _relabel, promtool_check


def _otel_values(serving_metrics: bool = True) -> dict[str, Any]:
    config = ObservabilityAddonConfiguration.for_gpu_cluster(
        cluster_name="inference-1",
        container_logs=True,
        tolerate_all_taints=True,
        gpu_taint_keys=(),
        mode=ContainerInsightsMode.OTEL,
        serving_metrics=serving_metrics,
    )
    values: dict[str, Any] = json.loads(config.to_json())
    return values


def _jobs() -> dict[str, dict[str, Any]]:
    otel = _otel_values()["agent"]["otelConfig"]
    receiver = otel["service"]["pipelines"][PIPELINE]["receivers"][0]
    return {j["job_name"]: j for j in otel["receivers"][receiver]["config"]["scrape_configs"]}


def test_every_server_has_a_data_path_in_otel_mode() -> None:
    """The add-on collects vLLM and Ray; the receiver scrapes Triton and NIM, the rest."""
    assert set(_jobs()) == {"triton", "nim-llm"}
    assert ADDON_COLLECTED | set(RECEIVER_SCRAPED) == set(SERVERS)
    assert _jobs()["triton"]["relabel_configs"][0]["regex"] == "8002"
    assert _jobs()["nim-llm"]["metrics_path"] == "/v1/metrics"
    assert "otelConfig" not in _otel_values(serving_metrics=False)["agent"]


def test_the_pipeline_merges_with_the_charts_and_collides_with_none() -> None:
    """The chart keeps its generated entry on a name collision: every name here is new
    (``cw_k8s_ci_v0`` is the generated prefix), and the one generated name it reads, the
    exporter, is referenced as the chart spells it."""
    otel = serving_otel_config("inference-1")
    names = [*otel["receivers"], *otel["processors"], *otel["service"]["pipelines"]]
    assert [n for n in names if "cw_k8s_ci" in n] == []
    assert otel["service"]["pipelines"][PIPELINE]["exporters"] == [ADDON_METRICS_EXPORTER]
    assert ADDON_METRICS_EXPORTER == "otlphttp/cw_k8s_ci_v0_metrics_dest"


def test_a_triton_pod_on_this_node_gets_the_queries_labels() -> None:
    """``$$1`` is the collector's escape of Prometheus' ``$1``; unescaped it is the same
    rule as Classic's, so a Deployment's pod is named by its Deployment."""
    job = _jobs()["triton"]
    assert job["kubernetes_sd_configs"][0]["selectors"] == [
        {"role": "pod", "field": "spec.nodeName=${env:K8S_NODE_NAME}"}
    ]
    rules = json.loads(json.dumps(job["relabel_configs"]).replace("$$", "$"))
    pod = {
        "__meta_kubernetes_namespace": "inference",
        "__meta_kubernetes_pod_name": "triton-7d9f8c6b5-x2k4p",
        "__meta_kubernetes_pod_controller_kind": "ReplicaSet",
        "__meta_kubernetes_pod_controller_name": "triton-7d9f8c6b5",
        "__meta_kubernetes_pod_container_port_number": "8002",
    }
    labels = _relabel(pod, rules)
    assert labels is not None
    assert labels["PodName"] == "triton"
    # Histograms travel (OTLP carries them), as their exposition's series.
    metric_rules = job["metric_relabel_configs"]
    kept = "nv_inference_first_response_histogram_ms_bucket"
    assert _relabel({"__name__": kept}, metric_rules) is not None
    assert _relabel({"__name__": "nv_gpu_utilization"}, metric_rules) is None


def test_promtool_accepts_the_receivers_scrape_config(tmp_path: Path) -> None:
    """The collector hands the receiver's ``config`` to Prometheus' own parser once it has
    expanded ``${env:...}`` and ``$$``; Debian's promtool lacks Kubernetes discovery, so a
    static target stands in for it (as in test_serving_prometheus.py)."""
    jobs = list(_jobs().values())
    for job in jobs:
        job.pop("kubernetes_sd_configs")
        job["static_configs"] = [{"targets": ["10.0.0.1:8002"]}]
    text = yaml.safe_dump({"scrape_configs": jobs}).replace("$$", "$")
    path = tmp_path / "prometheus.yaml"
    path.write_text(text)
    checked = promtool_check(path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
