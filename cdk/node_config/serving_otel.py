"""OTel mode's collection of the inference servers the add-on does not scrape itself: a
Prometheus receiver and a metrics pipeline added to the add-on's own OTel configuration,
generated from the serving table (agent/gpu_insights_agent/contract/serving.py).

What the add-on collects itself in OTel mode: vLLM ("Collecting vLLM metrics with OTel Container
Insights", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/container-insights-eks-otel-vllm.html,
on by default, "you do not need to label or annotate your pods") and, from add-on 8.0.0, Ray
(``ray_serve_*`` and Ray Serve LLM's ``ray_vllm_*``, the AWS page on Ray with OTel Container
Insights). Nothing in it scrapes Triton (port 8002) or NIM (``/v1/metrics``).

How a deployment adds a receiver: the chart's ``agent.otelConfig`` ("optional YAML config that
can be provided to combine with the build-default-otel-config output", values.yaml) is merged
with the configuration the chart generates for OTel Container Insights
(aws-observability/helm-charts charts/amazon-cloudwatch-observability/templates/_helpers.tpl
``cloudwatch-agent.merge-otel-configs``: "For map sections (extensions, receivers, processors,
exporters) both sets of entries are combined, with generated entries winning on key collision
... For service.pipelines (a map) both pipeline maps are combined"; applied in
templates/linux/cloudwatch-agent-custom-resource.yaml, ``{{- if $agent.otelConfig }}``, chart
6.4.0). So a pipeline here may send through the generated exporter
``otlphttp/cw_k8s_ci_v0_metrics_dest`` (templates/linux/_otel-container-insights-config.tpl,
CloudWatch's OTLP endpoint with SigV4), which exists whenever ``otelContainerInsights.enabled``,
as OTel mode sets it. The names here carry no ``cw_k8s_ci`` prefix, so none collides with a
generated one (a collision would silently drop ours).

The agent is a DaemonSet: each node's agent discovers only its own node's pods
(``spec.nodeName`` of ``${env:K8S_NODE_NAME}``, the variable the chart's own k8sattributes
processor reads, ``node_from_env_var: K8S_NODE_NAME``), so each server is scraped once. The
collector expands ``${env:...}`` and takes ``$$`` for a literal ``$`` in a Prometheus
configuration (open-telemetry/opentelemetry-collector-contrib receiver/prometheusreceiver
README.md: "If you want to use $ characters in your prometheus configuration, you must escape
them using $$"). The queries group by ``@resource.k8s.cluster.name``, ``k8s.namespace.name``,
``k8s.deployment.name`` and ``k8s.pod.name`` (cdk/alarms/serving_promql.py): the pipeline's
transform moves the scrape's labels there, as the chart's does for DCGM.
"""

from typing import Any, Final

from cdk.node_config.serving_prometheus import DISCOVERY, SCRAPE_TIMEOUT, Discovery, scrape_job
from gpu_insights_agent.contract.metrics import DIM_FULL_POD_NAME, DIM_NAMESPACE, DIM_POD_NAME
from gpu_insights_agent.contract.serving import SERVING_METRICS, MetricType, Server

#: The servers the add-on collects in OTel mode by itself (module docstring); Ray from add-on
#: 8.0.0 only.
ADDON_COLLECTED: Final = frozenset({Server.VLLM, Server.RAY_SERVE})
#: The servers this project's receiver scrapes in OTel mode.
RECEIVER_SCRAPED: Final = tuple(d.server for d in DISCOVERY if d.server not in ADDON_COLLECTED)
#: The chart's generated OTLP exporter to CloudWatch (module docstring).
ADDON_METRICS_EXPORTER: Final = "otlphttp/cw_k8s_ci_v0_metrics_dest"
RECEIVER: Final = "prometheus/gpu_insights_serving"
TRANSFORM: Final = "transform/gpu_insights_serving"
BATCH: Final = "batch/gpu_insights_serving"
PIPELINE: Final = "metrics/gpu_insights_serving"
#: One sample a minute, as Classic's scrape (serving_prometheus.SCRAPE_INTERVAL), but in the
#: chart's ``"<N>s"`` form (``otelContainerInsights.metricResolution``).
SCRAPE_INTERVAL_S: Final = 60
#: The series of a histogram in the exposition format (prometheus.io, "Metric types").
HISTOGRAM_SUFFIXES: Final = ("_bucket", "_sum", "_count")
#: The scrape's labels (Container Insights' names, serving_prometheus) and the resource
#: attributes the queries read.
RESOURCE_ATTRIBUTES: Final = (
    (DIM_NAMESPACE, "k8s.namespace.name"),
    (DIM_POD_NAME, "k8s.deployment.name"),
    (DIM_FULL_POD_NAME, "k8s.pod.name"),
)


def _otel_job(discovery: Discovery) -> dict[str, Any]:
    """Classic's job for the server, on this node's pods only, keeping every name the table
    reads (histograms included: OTLP carries them; a scrape's histogram is its ``_bucket``,
    ``_sum`` and ``_count`` series, which ``metric_relabel_configs`` sees one by one),
    ``$`` escaped for the collector."""
    names = tuple(
        dict.fromkeys(
            n + suffix
            for m in SERVING_METRICS
            if m.server is discovery.server
            for n in m.names
            for suffix in (HISTOGRAM_SUFFIXES if m.type is MetricType.HISTOGRAM else ("",))
        )
    )
    job = scrape_job(discovery, names=names)
    job["kubernetes_sd_configs"] = [
        {
            "role": "pod",
            "selectors": [{"role": "pod", "field": "spec.nodeName=${env:K8S_NODE_NAME}"}],
        }
    ]
    job["scrape_interval"] = f"{SCRAPE_INTERVAL_S}s"
    job["scrape_timeout"] = SCRAPE_TIMEOUT
    for rule in job["relabel_configs"]:
        if "replacement" in rule:
            rule["replacement"] = rule["replacement"].replace("$", "$$")
    return job


def serving_otel_config(cluster_name: str) -> dict[str, Any]:
    """The chart's ``agent.otelConfig``: the receiver, its processors and its pipeline."""
    statements = [f'set(resource.attributes["k8s.cluster.name"], "{cluster_name}")']
    for label, attribute in RESOURCE_ATTRIBUTES:
        statements += [
            f'set(resource.attributes["{attribute}"], attributes["{label}"])',
            f'delete_key(attributes, "{label}")',
        ]
    return {
        "receivers": {
            RECEIVER: {
                "config": {
                    "scrape_configs": [
                        _otel_job(d) for d in DISCOVERY if d.server in RECEIVER_SCRAPED
                    ]
                }
            }
        },
        "processors": {
            TRANSFORM: {
                "error_mode": "ignore",
                "metric_statements": [{"context": "datapoint", "statements": statements}],
            },
            BATCH: {"send_batch_size": 500, "send_batch_max_size": 500, "timeout": "10s"},
        },
        "service": {
            "pipelines": {
                PIPELINE: {
                    "receivers": [RECEIVER],
                    "processors": [TRANSFORM, BATCH],
                    "exporters": [ADDON_METRICS_EXPORTER],
                }
            }
        },
    }
