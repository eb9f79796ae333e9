"""The GPU analyzer's reads in OTel Container Insights mode: which pod held which GPU of which
node, hour by hour, from DCGM's own series read with PromQL.

The add-on sends dcgm-exporter's series over OTLP under DCGM's names, each datapoint of a GPU
in use labelled with the pod, namespace and node it runs on (the add-on chart's
``_otel-container-insights-config.tpl``: ``groupbyattrs/cw_k8s_ci_v0_dcgm``,
``transform/cw_k8s_ci_v0_dcgm_promote``, ``k8sattributes/cw_k8s_ci_v0_pod``), so a pod's GPU
is an exact (node, GPU index) join: no power matching as in Classic (aws.resolve_nodes).
CloudWatch exposes an OTLP resource attribute as ``@resource.<name>`` and a datapoint
attribute bare ("PromQL querying", CloudWatch-PromQL-Querying.html: "attributes use a single-@
scope prefix, for example, @resource.service.name. Datapoint attributes also support bare
(un-prefixed) access").

Per node and hour (range queries at a one-hour step, paged by ``lambdas.shared.promql``):

- a pod's samples on a GPU (``count_over_time`` of DCGM_FI_DEV_GPU_UTIL): the share of the
  hour it held the GPU, over the samples a full hour holds, which is the most common count of
  a GPU's samples in an hour (every 30 s by default: 120);
- a pod's mean power on the GPU and the GPU's own (DCGM_FI_DEV_POWER_USAGE, watts), which
  with the exporter's percent of the limit give the pod's percent (aws.pod_power_percent);
- the GPUs that reported at all (the node's Container Insights hours).

A pod's controller (the Classic ``PodName``) is its Job's, Deployment's or DaemonSet's name
where it has one (``k8s.job.name``, ``k8s.deployment.name``, ``k8s.daemonset.name``), its own
name otherwise, from which workloads.job_of names its job as in Classic.
"""

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final

from gpu_insights_agent.contract.metrics import GpuMetric
from lambdas.shared.dcgm import CLOUDWATCH, DCGM_POWER, DCGM_UTIL, DcgmLabels
from lambdas.shared.exporter_promql import (
    ExporterQueries,
    hourly,
    node_batches,
    per_gpu,
    read_hours,
    reporting_nodes,
)
from lambdas.shared.promql import PromQLClient, Series, quote_label, quote_string
from lambdas.training_analyzer.gpu_hours.attribution import GpuHour, GpuKey, Hold
from lambdas.training_analyzer.gpu_hours.aws import (
    EXPORTER,
    Observed,
    exporter_gpu_hours,
    gpu_hours_of,
    pod_power_percent,
    samples_per_hour,
)
from lambdas.training_analyzer.gpu_hours.workloads import SERVING_POD_LABELS, serving_controller

#: The add-on scrapes DCGM every ``otelContainerInsights.metricResolution`` ("30s").
SAMPLES_PER_HOUR: Final = 120


class OtelQueries:
    """The PromQL the reader sends, built for one cluster and label naming."""

    def __init__(self, cluster: str, labels: DcgmLabels = CLOUDWATCH) -> None:
        self.labels = labels
        self.cluster = cluster

    def select(self, metric: str, node: str | None = None, *, pods: bool = False) -> str:
        q = quote_label
        # ``__name__=`` selects by name in PromQL 2 and 3 alike (CloudWatch takes it:
        # "{__name__="http.server.active_requests"}", CloudWatch-PromQL-API-QueryMetrics.html).
        matchers = [
            f"__name__={quote_string(metric)}",
            f"{q(self.labels.cluster)}={quote_string(self.cluster)}",
        ]
        if node is not None:
            matchers.append(f"{q(self.labels.node)}={quote_string(node)}")
        if pods:
            matchers.append(f'{q(self.labels.pod)}!=""')
        return "{" + ", ".join(matchers) + "}[1h]"

    def by(self, *names: str) -> str:
        return "by (" + ", ".join(quote_label(n) for n in names) + ")"

    def pod_keys(self) -> tuple[str, ...]:
        return (self.labels.namespace, self.labels.pod, self.labels.gpu, *self.labels.owners())

    def holder_keys(self) -> tuple[str, ...]:
        """A pod's keys and the pod labels that name a serving controller (pod_controller)."""
        return (*self.pod_keys(), *(self.labels.pod_label(k) for k in SERVING_POD_LABELS))

    def nodes(self) -> str:
        return f"count {self.by(self.labels.node)} (count_over_time({self.select(DCGM_UTIL)}))"

    def pod_samples(self, node: str) -> str:
        return (
            f"sum {self.by(*self.holder_keys())} "
            f"(count_over_time({self.select(DCGM_UTIL, node, pods=True)}))"
        )

    def pod_watts(self, node: str) -> str:
        return self._mean(self.select(DCGM_POWER, node, pods=True), self.pod_keys())

    def gpu_samples(self, node: str) -> str:
        by = self.by(self.labels.gpu)
        return f"sum {by} (count_over_time({self.select(DCGM_UTIL, node)}))"

    def gpu_watts(self, node: str) -> str:
        return self._mean(self.select(DCGM_POWER, node), (self.labels.gpu,))

    def _mean(self, selector: str, keys: Iterable[str]) -> str:
        """The mean of every sample in the hour of each group (not a mean of means)."""
        by = self.by(*keys)
        return f"sum {by} (sum_over_time({selector})) / sum {by} (count_over_time({selector}))"


def read_holds(
    promql: PromQLClient,
    cluster: str,
    *,
    start: float,
    end: float,
    gpu_hours: Iterable[GpuHour],
    labels: DcgmLabels = CLOUDWATCH,
    only: Collection[str] | None = None,
    power: bool = True,
) -> tuple[list[Hold], set[tuple[str, int]]]:
    """Every pod's holds in [start, end) (whole hours) on the GPUs of every node DCGM reported
    (``only`` those of these nodes, where given), and the (node, hour)s DCGM reported;
    ``gpu_hours`` (the exporter's) give each GPU's percent of its limit. Without ``power`` the
    pods' and GPUs' watts are not read (two queries a node fewer) and no hold has a power."""
    queries = OtelQueries(cluster, labels)

    def read(query: str) -> list[Series]:
        return read_hours(promql, query, start, end)

    if only is None:
        nodes = sorted({s.labels.get(labels.node, "") for s in read(queries.nodes())} - {""})
    else:  # no cluster-wide listing: a node DCGM did not report reads as no hold
        nodes = sorted(only)
    percent = {(h.gpu.node, h.gpu.gpu, h.hour): h.power_utilization for h in gpu_hours}
    holds: list[Hold] = []
    reported: set[tuple[str, int]] = set()
    gpu_counts: list[float] = []
    per_node = []
    for node in nodes:
        gpu_watts = {
            (s.labels.get(labels.gpu, ""), hour): watts
            for s in (read(queries.gpu_watts(node)) if power else ())
            for hour, watts in hourly(s).items()
        }
        for s in read(queries.gpu_samples(node)):
            counts = hourly(s)
            gpu_counts += counts.values()
            reported |= {(node, hour) for hour in counts}
        samples = read(queries.pod_samples(node))
        pods = read(queries.pod_watts(node)) if power else ()
        watts = {pod_key(s.labels, labels): hourly(s) for s in pods}
        per_node.append((node, samples, watts, gpu_watts))
    full_hour = samples_per_hour(gpu_counts) if gpu_counts else float(SAMPLES_PER_HOUR)
    for node, samples, watts, gpu_watts in per_node:
        for s in samples:
            key = pod_key(s.labels, labels)
            namespace, pod, gpu, controller = key
            kind = None
            serving = pod_controller(s.labels, labels)
            if serving is not None:
                kind, controller = serving
            for hour, count in sorted(hourly(s).items()):
                pod_watts = watts.get(key, {}).get(hour)
                holds.append(
                    Hold(
                        gpu=GpuKey(node, gpu),
                        hour=hour,
                        namespace=namespace,
                        pod=pod,
                        controller=controller,
                        controller_kind=kind,
                        share=min(1.0, count / full_hour),
                        power_utilization=pod_power_percent(
                            pod_watts, gpu_watts.get((gpu, hour)), percent.get((node, gpu, hour))
                        ),
                    )
                )
    return holds, reported


def pod_key(found: Mapping[str, str], labels: DcgmLabels) -> tuple[str, str, str, str]:
    """(namespace, pod, GPU index, controller) of a pod's series: the controller is the pod's
    own name where it has no Job, Deployment or DaemonSet, as Classic's PodName is."""
    pod = found[labels.pod]
    controller = next((found[o] for o in labels.owners() if found.get(o)), pod)
    return found.get(labels.namespace, ""), pod, found.get(labels.gpu, ""), controller


def pod_controller(found: Mapping[str, str], labels: DcgmLabels) -> tuple[str, str] | None:
    """(kind, name) of the serving controller a pod's series name by its pod labels and owner
    attributes (workloads.serving_controller), or None."""
    pod_labels = {key: found.get(labels.pod_label(key), "") for key in SERVING_POD_LABELS}
    return serving_controller(pod_labels, found.get(labels.deployment))


def exporter_gpu_hours_promql(
    promql: PromQLClient,
    cluster: str,
    *,
    start: float,
    end: float,
    labels: DcgmLabels = CLOUDWATCH,
) -> list[GpuHour]:
    """The window's GPU-hours as the exporter saw them where it sends OTLP: its own series
    (``EXPORTER``: power against its enforced limit, SM activity, health, in use) read with
    PromQL, per node batch. DCGM's series cannot stand in: the add-on's DCGM fields carry no
    power limit (contract.metrics ``ADDON_DCGM_FIELDS``). Every GPU sends ``gpu_healthy``
    every cycle, a lost one that only, so its nodes are every node's GPUs."""
    queries = ExporterQueries(cluster, labels)
    read = {
        "Average": queries.gpu_mean,
        "Minimum": queries.gpu_min,
        "SampleCount": queries.gpu_samples,
    }
    exporter: dict[tuple[str, str], dict[str, dict[int, float]]] = defaultdict(dict)
    nodes = reporting_nodes(promql, queries, str(GpuMetric.HEALTHY), start, end)
    for batch in node_batches(nodes):
        for name, metric, stat in EXPORTER:
            found = per_gpu(promql, read[stat](str(metric), batch), start, end, labels)
            for gpu, values in found.items():
                exporter[gpu][name] = values
    return gpu_hours_of(exporter)


def observe_otel(
    cloudwatch: Any,
    promql: PromQLClient,
    cluster: str,
    *,
    start: float,
    end: float,
    labels: DcgmLabels = CLOUDWATCH,
    exporter_otlp: bool = False,
) -> Observed:
    """The window's GPU-hours as the exporter saw them (CloudWatch's ``GpuInsights``, as in
    Classic; with ``exporter_otlp``, its OTLP series with PromQL), and the pods' holds as
    DCGM's labelled series give them: the same ``Observed`` as aws.observe."""
    gpu_hours = (
        exporter_gpu_hours_promql(promql, cluster, start=start, end=end, labels=labels)
        if exporter_otlp
        else exporter_gpu_hours(cloudwatch, cluster, start=start, end=end)
    )
    holds, reported = read_holds(
        promql, cluster, start=start, end=end, gpu_hours=gpu_hours, labels=labels
    )
    return Observed(gpu_hours=gpu_hours, holds=holds, ci_node_hours=reported)
