"""What each dashboard would show on the demo's data: every widget's query evaluated over the
metrics the demo published (the exporter's EMF lines, the training jobs' EMF read back from
CloudWatch Logs), with the node and job pickers set to the demo's node and its data-bound job.
In OTel mode the bodies are the OTel mode's, and each PromQL widget's query runs on the demo's
Prometheus (``PromQLSource``) over the day that ends with the replay.
"""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from cli.backtest.dashboards import PromQLSource, WidgetView, evaluate_body
from cli.backtest.history import Sample, read_history, samples_from_emf
from cli.demo.exporter import REPLAY_PODS, REPLAYED
from cli.demo.realistic import container_insights as ci
from cli.demo.realistic.control_plane import NAMESPACE as CONTROL_PLANE_NAMESPACE
from cli.demo.realistic.serving import NAMESPACE as SERVING_NAMESPACE
from cli.demo.realistic.serving import VLLM
from dashboards.bodies import Mode, all_dashboards, encode, storage, training_jobs
from dashboards.serving import (
    DEPLOYMENT_DASHBOARD,
    DEPLOYMENT_VARIABLE,
    NAMESPACE_VARIABLE,
    SERVING_DASHBOARD,
    deployment,
    serving,
)
from dashboards.funnel import CI_NODE_GPU_USAGE_METRIC
from dashboards.widgets import AlarmLine
from gpu_insights_agent.contract.metrics import (
    CI_NODE_GPU_LIMIT_METRIC,
    CI_NODE_GPU_METRICS,
    DIM_CLUSTER,
    DIM_GPU_DEVICE,
    DIM_GPU_INDEX,
    DIM_NODE,
    DIM_XID_CODE,
    FINDINGS_COUNT_STAT,
    NAMESPACE_CONTAINER_INSIGHTS,
    NAMESPACE_FINDINGS,
    NAMESPACE_WASTE,
    ExporterSink,
    training_log_group,
)
from gpu_insights_agent.contract.resource_names import dashboard_name
from gpu_insights_agent.contract.serving import HistogramForm
from gpu_insights_agent.emf.document import parse_emf_line
from lambdas.shared.console_links import NODE_VARIABLE, STORAGE_DASHBOARD, node_dashboard_url
from lambdas.shared.container_insights_mode import ContainerInsightsMode

DATA_BOUND_JOB = "bert-data-bound"
#: The demo node's instance, as Container Insights names it.
NODE_INSTANCE = (REPLAYED.instance_id, REPLAYED.instance_type.name)
TOP = 3


@dataclass(frozen=True)
class DashboardView:
    name: str
    widgets: list[WidgetView]


def training_samples(logs: Any, cluster: str) -> list[Sample]:
    """The training jobs' metrics as CloudWatch stored them, from their EMF log lines."""
    pages = logs.get_paginator("filter_log_events").paginate(
        logGroupName=training_log_group(cluster)
    )
    documents = [parse_emf_line(e["message"]) for page in pages for e in page["events"]]
    return samples_from_emf(documents)


def container_insights_samples(line: str) -> list[Sample]:
    """What Container Insights (DCGM) publishes for the same GPU at the same time, standing in
    for the add-on on the demo's node: the readings the exporter carries as properties."""
    document = parse_emf_line(line)
    if DIM_XID_CODE in document or DIM_GPU_INDEX not in document:
        return []
    instance_id, instance_type = NODE_INSTANCE
    dimensions = frozenset(
        {
            (DIM_CLUSTER, str(document[DIM_CLUSTER])),
            (DIM_GPU_DEVICE, f"nvidia{document[DIM_GPU_INDEX]}"),
            ("InstanceId", instance_id),
            ("InstanceType", instance_type),
            (DIM_NODE, str(document[DIM_NODE])),
        }
    )
    timestamp = document["_aws"]["Timestamp"] / 1000
    return [
        Sample(NAMESPACE_CONTAINER_INSIGHTS, name, dimensions, timestamp, float(document[metric]))
        for metric, name in CI_NODE_GPU_METRICS.items()
        if str(metric) in document
    ]


def container_insights_node_samples(lines: Sequence[str]) -> list[Sample]:
    """Container Insights' per-node GPU counts of the same node at each of its exporter's
    cycles (Classic), which the fleet dashboard's funnel sums: ``node_gpu_limit``, the node's
    GPUs (its instance type's: the device plugin advertises each), and
    ``node_gpu_usage_total``, the GPUs its running pods use (one a pod of the replay's
    PyTorchJob: ``REPLAY_PODS``), per node (ClusterName, InstanceId, NodeName)."""
    cycles: dict[float, str] = {}
    for line in lines:
        document = parse_emf_line(line)
        if DIM_GPU_INDEX in document and DIM_XID_CODE not in document:
            cycles[document["_aws"]["Timestamp"] / 1000] = str(document[DIM_CLUSTER])
    instance_id, _ = NODE_INSTANCE
    counts = (
        (CI_NODE_GPU_LIMIT_METRIC, float(REPLAYED.instance_type.gpu_count)),
        (CI_NODE_GPU_USAGE_METRIC, float(len(REPLAY_PODS))),
    )
    return [
        Sample(
            NAMESPACE_CONTAINER_INSIGHTS,
            name,
            frozenset(ci.node_dimensions(cluster, REPLAYED.name, instance_id).items()),
            at,
            value,
        )
        for at, cluster in sorted(cycles.items())
        for name, value in counts
    ]


#: What the analyzers published that the dashboards read, with the statistic each is read by;
#: and the storage dashboard's AWS/EBS and AWS/S3 series and the cluster dashboard's AWS/EKS
#: series, which the demo put in CloudWatch as AWS would (cli/demo/storage.py,
#: cli/demo/realistic/control_plane.py: one datapoint an hour each, so an hour's Average is
#: that datapoint, drawn as the console draws it).
PUBLISHED: Final = (
    (NAMESPACE_WASTE, "Sum"),
    (NAMESPACE_FINDINGS, FINDINGS_COUNT_STAT),
    ("AWS/EBS", "Average"),
    ("AWS/S3", "Average"),
    (CONTROL_PLANE_NAMESPACE, "Average"),
)


def published_samples(cloudwatch: Any, *, start: datetime, end: datetime) -> list[Sample]:
    """The metrics in CloudWatch that the dashboards read (``PUBLISHED``) read back hour by
    hour: ListMetrics, then GetMetricData in batches of 500."""
    samples: list[Sample] = []
    for namespace, stat in PUBLISHED:
        pages = cloudwatch.get_paginator("list_metrics").paginate(Namespace=namespace)
        # One query per metric: moto's ListMetrics repeats a multi-dimension metric once per
        # datapoint (CloudWatch lists each once), which would count each datapoint again.
        unique = {
            (m["MetricName"], tuple(sorted((d["Name"], d["Value"]) for d in m["Dimensions"]))): m
            for page in pages
            for m in page["Metrics"]
        }
        metrics = list(unique.values())
        for first in range(0, len(metrics), 500):
            batch = metrics[first : first + 500]
            queries = [
                {"Id": f"m{i}", "MetricStat": {"Metric": m, "Period": 3600, "Stat": stat}}
                for i, m in enumerate(batch)
            ]
            pages = cloudwatch.get_paginator("get_metric_data").paginate(
                MetricDataQueries=queries, StartTime=start, EndTime=end
            )
            for page in pages:
                for result in page["MetricDataResults"]:
                    metric = batch[int(result["Id"][1:])]
                    dims = frozenset((d["Name"], d["Value"]) for d in metric["Dimensions"])
                    samples += [
                        Sample(namespace, metric["MetricName"], dims, t.timestamp(), v)
                        for t, v in zip(result["Timestamps"], result["Values"], strict=True)
                    ]
    return samples


def dashboard_views(
    samples: Sequence[Sample],
    *,
    cluster: str,
    training_cluster: str,
    node: str,
    buckets: Sequence[str],
    alarm_arns: Sequence[str],
    exporter_interval_s: int,
    alarm_lines: Sequence[AlarmLine] = (),
    mode: ContainerInsightsMode = ContainerInsightsMode.CLASSIC,
    promql: PromQLSource | None = None,
    deployed: Mapping[str, dict[str, Any]] | None = None,
    exporter_sink: ExporterSink = ExporterSink.EMF,
) -> list[DashboardView]:
    """Each dashboard the app deploys in ``mode`` with the exporter's ``exporter_sink``, as it
    shows on ``samples``; its PromQL widgets (OTel mode's) run by ``promql``; ``deployed``:
    bodies as CloudWatch holds them after a run wrote to them (the storage dashboard's
    volumes), by name."""
    bodies = {
        **all_dashboards(
            cluster,
            buckets,
            alarm_arns,
            "us-east-1",
            exporter_interval_s=exporter_interval_s,
            alarm_lines=alarm_lines,
            mode=mode,
            exporter_sink=exporter_sink,
        ),
        **(deployed or {}),
        **(classic_serving(cluster, exporter_sink) if mode is ContainerInsightsMode.OTEL else {}),
    }
    # The demo's jobs run under their own cluster name: their dashboard is built for it (over
    # the emitter's OTLP series, with PromQL, where the jobs send OTLP).
    training = training_jobs(training_cluster, "us-east-1", Mode(mode, sink=exporter_sink))
    # The serving-deployment dashboard typed with the demo's vLLM Deployment.
    chosen = {
        NODE_VARIABLE: node,
        "job": DATA_BOUND_JOB,
        NAMESPACE_VARIABLE: SERVING_NAMESPACE,
        DEPLOYMENT_VARIABLE: VLLM.deployment,
    }
    views = []
    for name, body in bodies.items():
        shown = training if name == dashboard_name(cluster, "training") else body
        views.append(DashboardView(name, evaluate_body(shown, samples, chosen, promql)))
    return views


def classic_serving(cluster: str, exporter_sink: ExporterSink) -> dict[str, dict[str, Any]]:
    """The serving dashboards as the local Prometheus can answer them, by name: their latency
    widgets read CloudWatch's native histograms by the metric's name, which a Prometheus 2.42
    holds as classic ``_bucket`` series (contract/serving.py ``HistogramForm``), so they are
    built in that form, as the demo's serving alarms are (cli/backtest/otel_replay.py
    ``classic_histograms``); every other widget as deployed."""
    otlp = exporter_sink is ExporterSink.OTLP
    return {
        dashboard_name(cluster, SERVING_DASHBOARD): serving(
            cluster, "us-east-1", form=HistogramForm.CLASSIC
        ),
        dashboard_name(cluster, DEPLOYMENT_DASHBOARD): deployment(
            cluster, "us-east-1", form=HistogramForm.CLASSIC, exporter_otlp=otlp
        ),
    }


def demo_dashboard_views(
    emf_path: Path,
    logs: Any,
    *,
    cluster: str,
    training_cluster: str,
    node: str,
    buckets: Sequence[str],
    exporter_interval_s: int,
    alarm_lines: Sequence[AlarmLine] = (),
    cloudwatch: Any = None,
    window: tuple[datetime, datetime] | None = None,
    mode: ContainerInsightsMode = ContainerInsightsMode.CLASSIC,
    promql: PromQLSource | None = None,
    deployed: Mapping[str, dict[str, Any]] | None = None,
    exporter_sink: ExporterSink = ExporterSink.EMF,
) -> list[DashboardView]:
    lines = emf_path.read_text(encoding="utf-8").splitlines()
    samples = read_history(lines, source=str(emf_path))
    if mode is ContainerInsightsMode.CLASSIC:  # OTel mode turns Classic's node_gpu_* off
        samples += [s for line in lines for s in container_insights_samples(line)]
        samples += container_insights_node_samples(lines)
    samples += training_samples(logs, training_cluster)
    if cloudwatch is not None and window is not None:
        samples += published_samples(cloudwatch, start=window[0], end=window[1])
    return dashboard_views(
        samples,
        cluster=cluster,
        training_cluster=training_cluster,
        node=node,
        buckets=buckets,
        alarm_arns=[],
        exporter_interval_s=exporter_interval_s,
        alarm_lines=alarm_lines,
        mode=mode,
        promql=promql,
        deployed=deployed,
        exporter_sink=exporter_sink,
    )


def storage_dashboard(cloudwatch: Any, cluster: str) -> dict[str, dict[str, Any]]:
    """The storage dashboard as CloudWatch holds it, by name: the storage analyzer's run wrote
    the cluster's volumes into it (lambdas/storage_analyzer/dashboard.py)."""
    name = dashboard_name(cluster, STORAGE_DASHBOARD)
    body: dict[str, Any] = json.loads(cloudwatch.get_dashboard(DashboardName=name)["DashboardBody"])
    return {name: body}


def deploy_storage_dashboard(cloudwatch: Any, cluster: str, buckets: Sequence[str]) -> None:
    """The storage dashboard as the Alarms stack deploys it, before the analyzer's first run."""
    cloudwatch.put_dashboard(
        DashboardName=dashboard_name(cluster, STORAGE_DASHBOARD),
        DashboardBody=encode(storage(cluster, buckets, "us-east-1")),
    )


def dashboards_summary(
    views: Sequence[DashboardView],
    region: str,
    cluster: str,
    node: str,
    mode: ContainerInsightsMode = ContainerInsightsMode.CLASSIC,
) -> list[str]:
    lines = ["11. What each dashboard shows on the demo's data (top entries, series drawn):"]
    if mode is ContainerInsightsMode.OTEL:
        lines.append(
            "   OTel mode's bodies: each PromQL widget's query run on the local Prometheus over "
            "the day that ends with the replay"
        )
    for view in views:
        lines.append(f"   {view.name}")
        for widget in view.widgets:
            top = ", ".join(f"{line.label or '-'} {line.value:.4g}" for line in widget.lines[:TOP])
            lines.append(f"      {widget.title}: {top or 'no data'} [{widget.series} series]")
    lines.append(f"   drill-down link for {node}: {node_dashboard_url(region, cluster, node)}")
    return lines
