"""Classic mode's collection of the inference servers' own metrics: the Prometheus scrape
configuration and the agent's EMF metric declarations, both generated from the serving table
(agent/gpu_insights_agent/contract/serving.py), so a name is spelt there only.

How the add-on scrapes in Classic mode. The chart passes ``agent.prometheus.config`` to the
AmazonCloudWatchAgent resource's ``spec.prometheus.config`` and, with
``agent.prometheus.targetAllocator.enabled``, deploys a target allocator with
``allocationStrategy: "consistent-hashing"`` (aws-observability/helm-charts
charts/amazon-cloudwatch-observability/templates/linux/cloudwatch-agent-custom-resource.yaml).
The operator writes that configuration to a ConfigMap key ``prometheus.yaml``
(aws/amazon-cloudwatch-agent-operator internal/manifests/collector/configmap.go) mounted at
``/etc/prometheusconfig`` (internal/manifests/collector/container.go
``getPrometheusVolumeMounts``), and its admission webhook sets no mode limit on the target
allocator (apis/v1alpha1/amazoncloudwatchagent_webhook.go ``validateCRDSpec``). The agent is a
DaemonSet: without the allocator each node's agent would scrape every server in the cluster, so
the allocator shares the targets out, each scraped once.

The agent reads the file through ``logs.metrics_collected.prometheus.prometheus_config_path``
and turns the samples the ``emf_processor``'s ``metric_declaration`` selects into metrics
(the agent's JSON schema, ``emfProcessorDefinition``; "Scraping additional Prometheus sources
and importing those metrics",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/ContainerInsights-Prometheus-Setup-configure.html).
What it keeps: "The CloudWatch agent supports the counter, gauge, and summary metric types. The
Prometheus metrics with the unsupported histogram metric type are dropped by the CloudWatch
agent"; a counter becomes the delta from the previous scrape
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/ContainerInsights-Prometheus-metrics-conversion.html).
So only the table's counter and gauge rows are declared: requests, errors, tokens, requests
running and waiting, KV cache use and preemptions; time to first token, inter-token and
end-to-end latency (histograms) have no Classic metric.

Dimensions are Container Insights' own names: ClusterName (the agent adds it from
``cluster_name``), Namespace, PodName (the pod's controller: for a Deployment's pod the
Deployment, its ReplicaSet's hash cut off, as Container Insights names it), FullPodName (the
pod), and the server's model label (``SERVERS[...].model_label``), plus a row's matcher labels
(vLLM's ``finished_reason``, which tells an error from a success).
"""

import re
from dataclasses import dataclass
from typing import Any, Final

from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_FULL_POD_NAME,
    DIM_NAMESPACE,
    DIM_POD_NAME,
)
from gpu_insights_agent.contract.serving import (
    SERVERS,
    SERVING_METRICS,
    MetricType,
    Server,
    ServingMetric,
)

#: Where the operator mounts the ConfigMap key ``prometheus.yaml`` on Linux (module docstring).
PROMETHEUS_CONFIG_PATH: Final = "/etc/prometheusconfig/prometheus.yaml"
#: "Prometheus metrics collected from Amazon EKS and Kubernetes clusters are in the
#: ContainerInsights/Prometheus namespace" ("Prometheus metrics collected by the CloudWatch
#: agent", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/ContainerInsights-Prometheus-metrics.html).
SERVING_NAMESPACE: Final = "ContainerInsights/Prometheus"
#: The scrape interval and timeout of AWS's sample configuration ("global: scrape_interval: 1m
#: scrape_timeout: 10s", ContainerInsights-Prometheus-Setup-configure.html): one sample a
#: minute, the finest period the Classic serving alarms read.
SCRAPE_INTERVAL: Final = "1m"
SCRAPE_TIMEOUT: Final = "10s"
#: The Prometheus types the agent keeps (module docstring); the table has no summary row.
KEPT_TYPES: Final = frozenset({MetricType.COUNTER, MetricType.GAUGE})


@dataclass(frozen=True)
class Discovery:
    """How a server's pods are found among the cluster's: a declared container port (the
    table's, ``SERVERS``), and pod labels a chart or operator puts on them."""

    server: Server
    #: (Kubernetes pod label, regex) pairs a pod must match besides the port.
    pod_labels: tuple[tuple[str, str], ...] = ()


#: One row per server. vLLM's charts add no standard label ("No chart adds
#: app.kubernetes.io/name=vllm by default": vllm-project/production-stack
#: helm/templates/deployment-vllm-multi.yaml, vllm examples/online_serving/chart-helm), so
#: vLLM, NIM and Triton are found by their port and path alone; a target that is no such server
#: fails its scrape or sends no name the job keeps (``metric_relabel_configs``), and adds no
#: metric. KubeRay labels every Ray pod ``ray.io/is-ray-node=yes`` (ray-operator
#: ``utils/constant.go``) and serves its metrics on the port named ``metrics``, 8080.
DISCOVERY: Final[tuple[Discovery, ...]] = (
    Discovery(Server.VLLM),
    Discovery(Server.NIM),
    Discovery(Server.TRITON),
    Discovery(Server.RAY_SERVE, pod_labels=(("ray.io/is-ray-node", "yes"),)),
)


class ServingScrapeError(ValueError):
    """A serving metric the Classic agent cannot carry as declared."""


def kept_metrics(server: Server | None = None) -> tuple[ServingMetric, ...]:
    """The table's rows the Classic agent keeps (counters and gauges), for one server or all."""
    return tuple(
        m
        for m in SERVING_METRICS
        if m.type in KEPT_TYPES and (server is None or m.server is server)
    )


def kept_names(server: Server) -> tuple[str, ...]:
    """Every scraped name (newest and older) of the server's kept rows, each once."""
    return tuple(dict.fromkeys(n for m in kept_metrics(server) for n in m.names))


def _meta_label(label: str) -> str:
    """Prometheus' pod discovery meta label of a Kubernetes pod label: "any unsupported
    characters converted to an underscore" (prometheus.io configuration, kubernetes_sd_config,
    role pod, ``__meta_kubernetes_pod_label_<labelname>``)."""
    return "__meta_kubernetes_pod_label_" + re.sub(r"[^a-zA-Z0-9_]", "_", label)


def _names_regex(names: tuple[str, ...]) -> str:
    return "|".join(re.escape(n) for n in names)


#: The relabelling every job shares: Container Insights' dimension names from the pod's
#: discovery labels. The ReplicaSet rule comes second and overwrites the first for a
#: Deployment's pod (relabel rules apply in order), cutting ``-<pod-template-hash>``.
_DIMENSION_RELABELS: Final[tuple[dict[str, Any], ...]] = (
    {"source_labels": ["__meta_kubernetes_namespace"], "target_label": DIM_NAMESPACE},
    {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": DIM_FULL_POD_NAME},
    {"source_labels": ["__meta_kubernetes_pod_controller_name"], "target_label": DIM_POD_NAME},
    {
        "source_labels": [
            "__meta_kubernetes_pod_controller_kind",
            "__meta_kubernetes_pod_controller_name",
        ],
        "regex": "ReplicaSet;(.+)-[a-z0-9]+",
        "target_label": DIM_POD_NAME,
        "replacement": "$1",
    },
)


def scrape_job(discovery: Discovery, names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """One Prometheus scrape job: the server's pods on its port and path, the dimension labels,
    and only ``names``, by default those the Classic agent keeps (the rest would be ingested as
    log events for nothing)."""
    row = SERVERS[discovery.server]
    keep = [
        {
            "source_labels": ["__meta_kubernetes_pod_container_port_number"],
            "regex": str(row.port),
            "action": "keep",
        },
        *(
            {"source_labels": [_meta_label(label)], "regex": regex, "action": "keep"}
            for label, regex in discovery.pod_labels
        ),
    ]
    return {
        "job_name": str(discovery.server),
        "metrics_path": row.path,
        "kubernetes_sd_configs": [{"role": "pod"}],
        "relabel_configs": [*keep, *(dict(r) for r in _DIMENSION_RELABELS)],
        "metric_relabel_configs": [
            {
                "source_labels": ["__name__"],
                "regex": _names_regex(names or kept_names(discovery.server)),
                "action": "keep",
            }
        ],
    }


def scrape_config() -> dict[str, Any]:
    """The Prometheus configuration the add-on's ``agent.prometheus.config`` takes."""
    return {
        "global": {"scrape_interval": SCRAPE_INTERVAL, "scrape_timeout": SCRAPE_TIMEOUT},
        "scrape_configs": [scrape_job(d) for d in DISCOVERY],
    }


def dimensions(metric: ServingMetric) -> list[str]:
    """A row's one dimension set: a replica of a model, and the labels the matchers of any row
    of the same name read (vLLM's requests and errors are one counter, the errors those with
    ``finished_reason="error"``: its metric keeps the label, and requests sum over it)."""
    sharing = [m for m in kept_metrics(metric.server) if set(m.names) & set(metric.names)]
    return [
        DIM_CLUSTER,
        DIM_NAMESPACE,
        DIM_POD_NAME,
        DIM_FULL_POD_NAME,
        metric.model_label,
        *dict.fromkeys(k for m in sharing for k, _ in m.matchers),
    ]


def metric_declarations() -> list[dict[str, Any]]:
    """The ``emf_processor`` declarations: per server (its job) and dimension set, the names to
    make metrics of. Rows sharing a name (vLLM's requests and errors) share one declaration."""
    declarations: list[dict[str, Any]] = []
    for discovery in DISCOVERY:
        by_dims: dict[tuple[str, ...], list[str]] = {}
        for metric in kept_metrics(discovery.server):
            names = by_dims.setdefault(tuple(dimensions(metric)), [])
            names += [n for n in metric.names if n not in names]
        for dims, names in by_dims.items():
            declarations.append(
                {
                    "source_labels": ["job"],
                    "label_matcher": f"^{re.escape(str(discovery.server))}$",
                    "dimensions": [list(dims)],
                    "metric_selectors": [f"^{re.escape(n)}$" for n in names],
                }
            )
    _check_one_dimension_set_per_name(declarations)
    return declarations


def _check_one_dimension_set_per_name(declarations: list[dict[str, Any]]) -> None:
    """A name declared twice with other dimensions would be two metrics, each priced: refused."""
    seen: dict[tuple[str, str], list[str]] = {}
    for d in declarations:
        for selector in d["metric_selectors"]:
            key = (d["label_matcher"], selector)
            if key in seen and seen[key] != d["dimensions"][0]:
                raise ServingScrapeError(
                    f"{selector} of job {d['label_matcher']} declared with dimensions "
                    f"{seen[key]} and {d['dimensions'][0]}: give its rows one set"
                )
            seen[key] = d["dimensions"][0]


def prometheus_agent_section(cluster_name: str) -> dict[str, Any]:
    """``logs.metrics_collected.prometheus`` of the Classic agent configuration."""
    return {
        "cluster_name": cluster_name,
        "prometheus_config_path": PROMETHEUS_CONFIG_PATH,
        "emf_processor": {
            "metric_namespace": SERVING_NAMESPACE,
            "metric_declaration": metric_declarations(),
        },
    }
