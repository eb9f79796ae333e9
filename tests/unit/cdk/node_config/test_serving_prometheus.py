"""Classic mode's serving scrape, held to the contracts it must satisfy: the agent's JSON schema
and translator keys (tests/data/, from ../shared/reference/), Prometheus' own configuration
parser (promtool, Debian's 2.42), and Prometheus' relabelling rules applied to the meta labels
its pod discovery gives."""

import re
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from cdk.node_config.cloudwatch_agent_config import container_insights_agent_config
from cdk.node_config.serving_prometheus import (
    PROMETHEUS_CONFIG_PATH,
    SERVING_NAMESPACE,
    ServingScrapeError,
    _check_one_dimension_set_per_name,
    kept_metrics,
    metric_declarations,
    prometheus_agent_section,
    scrape_config,
)
from gpu_insights_agent.contract.serving import SERVING_METRICS, MetricType, Server
from tests.prometheus import binaries
from tests.unit.reference_data import unknown_agent_keys


def _classic_config(cluster: str = "inference-1") -> dict[str, Any]:
    config = container_insights_agent_config(cluster_name=cluster)
    config["logs"]["metrics_collected"]["prometheus"] = prometheus_agent_section(cluster)
    return config


def test_the_agent_section_validates_against_the_agents_schema(
    agent_schema: dict[str, Any],
) -> None:
    config = _classic_config()
    jsonschema.Draft4Validator(agent_schema).validate(config)
    assert unknown_agent_keys(config) == []
    section = config["logs"]["metrics_collected"]["prometheus"]
    assert section["prometheus_config_path"] == PROMETHEUS_CONFIG_PATH
    assert (
        section["emf_processor"]["metric_namespace"]
        == SERVING_NAMESPACE
        == ("ContainerInsights/Prometheus")
    )


def test_the_schema_check_has_teeth_for_the_declarations(agent_schema: dict[str, Any]) -> None:
    """The schema closes ``metric_declaration`` items (additionalProperties false): a misspelt
    key is refused, so the validation above proves the keys."""
    config = _classic_config()
    declaration = config["logs"]["metrics_collected"]["prometheus"]["emf_processor"][
        "metric_declaration"
    ][0]
    declaration["metric_selector"] = declaration.pop("metric_selectors")
    with pytest.raises(jsonschema.ValidationError, match="metric_selector"):
        jsonschema.Draft4Validator(agent_schema).validate(config)


def test_vllms_declarations_are_its_counters_and_gauges_per_replica() -> None:
    vllm = [d for d in metric_declarations() if d["label_matcher"] == "^vllm$"]
    assert vllm == [
        {
            "source_labels": ["job"],
            "label_matcher": "^vllm$",
            "dimensions": [
                [
                    "ClusterName",
                    "Namespace",
                    "PodName",
                    "FullPodName",
                    "model_name",
                    "finished_reason",
                ]
            ],
            "metric_selectors": ["^vllm:request_success_total$"],
        },
        {
            "source_labels": ["job"],
            "label_matcher": "^vllm$",
            "dimensions": [["ClusterName", "Namespace", "PodName", "FullPodName", "model_name"]],
            "metric_selectors": [
                "^vllm:prompt_tokens_total$",
                "^vllm:generation_tokens_total$",
                "^vllm:num_requests_running$",
                "^vllm:num_requests_waiting$",
                "^vllm:kv_cache_usage_perc$",
                "^vllm:gpu_cache_usage_perc$",
                "^vllm:num_preemptions_total$",
            ],
        },
    ]


def _selected(name: str, job: str) -> bool:
    return any(
        re.search(selector, name)
        for d in metric_declarations()
        if re.search(d["label_matcher"], job)
        for selector in d["metric_selectors"]
    )


def test_every_kept_name_is_declared_and_no_histogram_is() -> None:
    """A histogram's samples (``_bucket``, ``_sum``, ``_count``) would be dropped by the agent
    anyway ("The Prometheus metrics with the unsupported histogram metric type are dropped"):
    none is declared, and every counter and gauge of the table is, under its own server's job."""
    kept = kept_metrics()
    # vLLM 8, NIM 7, Triton 3 (requests, errors, waiting), Ray Serve 4.
    assert len(kept) == 22
    for metric in kept:
        for name in metric.names:
            assert _selected(name, str(metric.server)), (metric, name)
    histograms = [m for m in SERVING_METRICS if m.type is MetricType.HISTOGRAM]
    # vLLM's and NIM's three latencies, Triton's first response, Ray Serve's processing.
    assert len(histograms) == 8
    for metric in histograms:
        for name in metric.names:
            for sample in (name, f"{name}_bucket", f"{name}_sum", f"{name}_count"):
                assert not _selected(sample, str(metric.server)), sample
    # A name is declared for its own server's job only: NIM's unprefixed queue is not vLLM's.
    assert not _selected("num_requests_waiting", "vllm")
    assert _selected("num_requests_waiting", "nim-llm")


def test_a_name_declared_with_two_dimension_sets_is_refused() -> None:
    declarations = [
        {"label_matcher": "^vllm$", "metric_selectors": ["^x$"], "dimensions": [["A"]]},
        {"label_matcher": "^vllm$", "metric_selectors": ["^x$"], "dimensions": [["A", "B"]]},
    ]
    with pytest.raises(ServingScrapeError, match=r"\^x\$ of job \^vllm\$ declared with"):
        _check_one_dimension_set_per_name(declarations)


def promtool_check(path: Path) -> "subprocess.CompletedProcess[str]":
    """``promtool check config --syntax-only`` of the file."""
    promtool, _ = binaries()
    return subprocess.run(
        [promtool, "check", "config", "--syntax-only", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_promtool_accepts_the_scrape_config(tmp_path: Path) -> None:
    """Prometheus' own parser: the operator loads the same file with it
    (internal/manifests/collector/config_replace.go, ``promconfig``). Debian's build leaves
    Kubernetes discovery out ("field kubernetes_sd_configs not found"), so each job's pod
    discovery is checked to be exactly ``role: pod`` and stands in as a static target for the
    parser, which still reads every relabel regex, path and interval."""
    path = tmp_path / "prometheus.yaml"

    def for_debian(config: dict[str, Any]) -> str:
        for job in config["scrape_configs"]:
            assert job.pop("kubernetes_sd_configs") == [{"role": "pod"}]
            job["static_configs"] = [{"targets": ["10.0.0.1:8000"]}]
        return yaml.safe_dump(config)

    path.write_text(for_debian(scrape_config()))
    checked = promtool_check(path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    broken = scrape_config()
    broken["scrape_configs"][0]["relabel_configs"][0]["regex"] = "8000("
    path.write_text(for_debian(broken))
    refused = promtool_check(path)
    assert refused.returncode != 0


def _relabel(labels: dict[str, str], rules: list[dict[str, Any]]) -> dict[str, str] | None:
    """Prometheus' relabelling (prometheus.io configuration, <relabel_config>): source label
    values joined by ``;``, the regex anchored at both ends, ``replace`` (the default) writes
    the expanded replacement (default ``$1``) to the target label, ``keep`` drops a target
    whose joined value does not match; a missing label is the empty string."""
    out = dict(labels)
    for rule in rules:
        value = ";".join(out.get(s, "") for s in rule["source_labels"])
        match = re.fullmatch(rule.get("regex", "(.*)"), value)
        if rule.get("action", "replace") == "keep":
            if not match:
                return None
            continue
        if match:
            replacement = rule.get("replacement", "$1")
            out[rule["target_label"]] = match.expand(re.sub(r"\$(\d+)", r"\\\1", replacement))
    return out


def _job(server: Server) -> dict[str, Any]:
    return next(j for j in scrape_config()["scrape_configs"] if j["job_name"] == str(server))


def test_a_deployments_vllm_pod_gets_container_insights_dimension_values() -> None:
    """A Deployment's pod: its controller is the ReplicaSet ``<deployment>-<pod-template-hash>``
    and the pod ``<replicaset>-<5 chars>`` (Kubernetes' naming); PodName is the Deployment, as
    Container Insights names a pod's controller."""
    pod = {
        "__meta_kubernetes_namespace": "inference",
        "__meta_kubernetes_pod_name": "llama-3-8b-7d9f8c6b5-x2k4p",
        "__meta_kubernetes_pod_controller_kind": "ReplicaSet",
        "__meta_kubernetes_pod_controller_name": "llama-3-8b-7d9f8c6b5",
        "__meta_kubernetes_pod_container_port_number": "8000",
    }
    job = _job(Server.VLLM)
    assert job["metrics_path"] == "/metrics"
    labels = _relabel(pod, job["relabel_configs"])
    assert labels is not None
    assert (labels["Namespace"], labels["PodName"], labels["FullPodName"]) == (
        "inference",
        "llama-3-8b",
        "llama-3-8b-7d9f8c6b5-x2k4p",
    )
    # The same pod's other port (say a sidecar's 9090) is no target.
    assert (
        _relabel(
            {**pod, "__meta_kubernetes_pod_container_port_number": "9090"}, job["relabel_configs"]
        )
        is None
    )
    # A StatefulSet's pod keeps its controller's name whole.
    stateful = _relabel(
        {
            **pod,
            "__meta_kubernetes_pod_controller_kind": "StatefulSet",
            "__meta_kubernetes_pod_controller_name": "triton-a10",
            "__meta_kubernetes_pod_container_port_number": "8002",
        },
        _job(Server.TRITON)["relabel_configs"],
    )
    assert stateful is not None
    assert stateful["PodName"] == "triton-a10"


def test_ray_serve_is_scraped_on_kuberay_pods_only() -> None:
    """KubeRay labels its pods ``ray.io/is-ray-node=yes``; Prometheus turns ``.`` and ``/`` in
    a label name into ``_`` in its meta label."""
    job = _job(Server.RAY_SERVE)
    ray_head = {
        "__meta_kubernetes_pod_container_port_number": "8080",
        "__meta_kubernetes_pod_label_ray_io_is_ray_node": "yes",
        "__meta_kubernetes_pod_controller_kind": "RayCluster",
        "__meta_kubernetes_pod_controller_name": "llm-serve-raycluster-abcde",
    }
    assert _relabel(ray_head, job["relabel_configs"]) is not None
    other = {**ray_head, "__meta_kubernetes_pod_label_ray_io_is_ray_node": ""}
    assert _relabel(other, job["relabel_configs"]) is None


def test_only_the_kept_names_leave_the_scrape() -> None:
    """``metric_relabel_configs`` keeps the table's counters and gauges: the rest of a vLLM
    scrape (its histograms, the HTTP layer's series) would be written to the log group as
    events and priced for nothing."""
    rules = _job(Server.VLLM)["metric_relabel_configs"]
    assert _relabel({"__name__": "vllm:num_requests_waiting"}, rules) is not None
    assert _relabel({"__name__": "vllm:num_preemptions_total"}, rules) is not None
    assert _relabel({"__name__": "vllm:time_to_first_token_seconds_bucket"}, rules) is None
    assert _relabel({"__name__": "http_requests_total"}, rules) is None
