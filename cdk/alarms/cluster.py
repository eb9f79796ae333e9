"""The cluster under the jobs: the EKS control plane's health, and GPU pods that cannot be
scheduled.

Control plane, both modes: "For clusters that are Kubernetes version 1.28 and above, you get
CloudWatch vended metrics for free in the AWS/EKS namespace ... Every metric listed has a
frequency of one minute" ("Monitor cluster data with Amazon CloudWatch", Amazon EKS User Guide,
https://docs.aws.amazon.com/eks/latest/userguide/cloudwatch.html; awsdocs/amazon-eks-user-guide
latest/ug/observability/cloudwatch.adoc), each with the dimension ``ClusterName`` (aws-cdk-lib
aws-eks ``EKSMetrics``: every canned metric takes ``dimensions: {ClusterName: string}``). Each
row of ``CONTROL_PLANE`` is one plain metric alarm on one of them, with the statistic the page
lists as valid for it. Their states reach people through the notifier like every alarm's; a
page's action is the alarm's description, so each says what the metric means and where to look.

GPU pods pending, OTel mode: one PromQL alarm on Kube State Metrics (``gpu_pending_query``),
one contributor per pod that asks for GPUs and that the scheduler could not place. Classic
Container Insights publishes no unschedulable pod status (its pod metrics have
``pod_status_pending`` and ``pod_status_scheduled``, no reason: aws/amazon-cloudwatch-agent's
EMF metric declarations), so there the control plane's cluster-wide
``scheduler_pending_pods_UNSCHEDULABLE`` is the page.
"""

from dataclasses import dataclass, field
from typing import Final

from cdk.alarms.model import AlarmSpec, Comparison, MetricStat, MissingData, Severity
from cdk.alarms.nodes import NODE_ALARM_KINDS, NodeAlarmSettings
from cdk.alarms.promql import EVALUATION_INTERVAL_S, RECOVERY_S, PromQLQuery
from gpu_insights_agent.contract.metrics import DIM_CLUSTER
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.kube_state import GPUS_REQUESTED, gpu_pods_waiting
from lambdas.shared.promql import quote_label, quote_string

NAMESPACE_EKS: Final = "AWS/EKS"
GIB: Final = 2**30
#: "In the Amazon EKS environment, etcd storage is limited to 8 GiB as per upstream guidance"
#: ("Amazon EKS clusters", https://docs.aws.amazon.com/eks/latest/userguide/clusters.html);
#: "When you create a cluster, Amazon EKS provisions the maximum recommended database size for
#: etcd in Kubernetes, which is 8GB" ("Managing etcd database size on Amazon EKS clusters",
#: https://aws.amazon.com/blogs/containers/managing-etcd-database-size-on-amazon-eks-clusters/).
#: A provisioned control-plane tier has more (``controlPlaneScalingTiers[].clusterDatabaseSizeGb``
#: of ``describe-cluster-versions``): the ``etcd_limit_gib`` setting.
ETCD_LIMIT_GIB_STANDARD: Final = 8.0
#: The share of the limit that warns: the rest is room to find and delete what grows the
#: database (the blog above: a full database stops the API server's writes) before it fills.
ETCD_WARN_SHARE: Final = 0.8
#: Kubernetes' API call latency SLOs, "99th percentile per cluster-day": "<= 1s" for mutating
#: calls (POST, PUT, DELETE, PATCH) on single objects, and for non-streaming reads (GET and
#: LIST) "(a) <= 1s if scope=resource (b) <= 5s if scope=namespace (c) <= 30s if scope=cluster"
#: (kubernetes/community sig-scalability/slos/api_call_latency.md). EKS's GET is a read of one
#: object (scope=resource); its LIST mixes the scopes, so it is held to the widest, 30 s.
SLO_SINGLE_OBJECT_S: Final = 1.0
SLO_CLUSTER_LIST_S: Final = 30.0
#: A GPU pod pending this long pages: longer than a GPU node takes to launch, join and
#: register its GPUs, so a pod waiting on the autoscaler's new node does not page.
GPU_PENDING_MINUTES: Final = 15
MIN_PENDING_MINUTES: Final = 5
#: PromQL alarms' PendingPeriod is at most 86,400 s (cdk/alarms/promql.py ``MAX_PERIOD_S``).
MAX_PENDING_MINUTES: Final = 1440
#: Kube State Metrics' series are read over two of the add-on's 30 s scrapes
#: (cdk/alarms/promql.py ``CAPACITY_RANGE_S``): one late scrape does not end a pod's wait.
KSM_RANGE_S: Final = 120
#: The alarm kinds of this module, kept out of the GPU fleet health composite.
GPU_PENDING: Final = "gpu-pods-pending"
UNSCHEDULABLE: Final = "control-plane-unschedulable-pods"


class ClusterAlarmSettingsError(ValueError):
    """A cluster alarm setting the alarms cannot use; the message names it."""


@dataclass(frozen=True, kw_only=True)
class ClusterAlarmSettings:
    #: Pods the scheduler cannot place this many minutes page (per GPU pod in OTel mode,
    #: the cluster's count in Classic).
    pending_minutes: int = GPU_PENDING_MINUTES
    #: The control plane's etcd database size limit (8 GiB in the Standard tier).
    etcd_limit_gib: float = ETCD_LIMIT_GIB_STANDARD
    #: OTel mode's GPU node and crash-looping GPU pod alarms (cdk/alarms/nodes.py).
    nodes: NodeAlarmSettings = field(default_factory=NodeAlarmSettings)

    def __post_init__(self) -> None:
        if not MIN_PENDING_MINUTES <= self.pending_minutes <= MAX_PENDING_MINUTES:
            raise ClusterAlarmSettingsError(
                f"gpu_pending_alarm_minutes={self.pending_minutes} must be "
                f"{MIN_PENDING_MINUTES} to {MAX_PENDING_MINUTES} (a GPU node takes minutes to "
                "launch; a PromQL alarm's pending period is at most a day)"
            )
        if not 1 <= self.etcd_limit_gib <= 1024:
            raise ClusterAlarmSettingsError(
                f"etcd_limit_gib={self.etcd_limit_gib:g} must be 1 to 1024 GiB (8 in the "
                "Standard control-plane tier)"
            )


@dataclass(frozen=True)
class ControlPlaneAlarm:
    """One row of ``CONTROL_PLANE``: an AWS/EKS metric, how it is read, and what it means."""

    key: str
    metric: str
    stat: str
    period_s: int
    periods: int
    comparison: Comparison
    title: str
    #: What the metric means and where to look: the page's action.
    meaning: str
    #: Where the threshold comes from.
    source: str


_LATENCY_LOOK = (
    "Look for a client flooding the API (the API server's audit log in CloudWatch Logs, "
    "userAgent), a slow admission webhook (apiserver_admission_webhook_admission_duration_"
    "seconds in AWS/EKS), or a large etcd (apiserver_storage_size_bytes); slow calls delay "
    "every controller, job start-up and scheduling included."
)
_API_SLO = "Kubernetes API call latency SLO (sig-scalability/slos/api_call_latency.md)"


def _latency(verb: str, what: str, slo_s: float) -> tuple[ControlPlaneAlarm, float]:
    return (
        ControlPlaneAlarm(
            key=f"control-plane-{verb.lower()}-latency",
            metric=f"apiserver_request_duration_seconds_{verb}_P99",
            stat="Average",
            period_s=300,
            periods=3,
            comparison=Comparison.GREATER,
            title=f"API server {verb} calls slow",
            meaning=(
                f"For 15 minutes the API server's p99 latency of {verb} calls ({what}) was over "
                f"Kubernetes' {slo_s:g} s service level. {_LATENCY_LOOK}"
            ),
            source=_API_SLO,
        ),
        slo_s,
    )


#: Every control-plane alarm and its threshold (the etcd size's is the limit setting's share,
#: ``control_plane_alarms``). Periods of a minute read each of the metric's datapoints.
CONTROL_PLANE: Final[tuple[tuple[ControlPlaneAlarm, float], ...]] = (
    (
        ControlPlaneAlarm(
            key="control-plane-5xx",
            metric="apiserver_request_total_5XX",
            stat="Sum",
            period_s=60,
            periods=10,
            comparison=Comparison.GREATER_OR_EQUAL,
            title="API server failing requests",
            meaning=(
                "For 10 minutes the API server answered at least 10 requests a minute with a "
                "5XX (server) error: a failing admission webhook, an aggregated API whose "
                "service is down (kubectl get apiservice: AVAILABLE False), or an overloaded "
                "control plane. Controllers retry, so jobs start late or not at all. Read the "
                "API server's log in CloudWatch Logs (control plane logging) for the failing "
                "path."
            ),
            source="a sustained stream, not one blip: this project's threshold",
        ),
        10.0,
    ),
    (
        ControlPlaneAlarm(
            key="control-plane-throttling",
            metric="apiserver_request_total_429",
            stat="Sum",
            period_s=60,
            periods=15,
            comparison=Comparison.GREATER_OR_EQUAL,
            title="API server throttling clients",
            meaning=(
                "For 15 minutes the API server refused requests with 429 (Too Many Requests) "
                "every minute: API Priority and Fairness is shedding load, and the clients it "
                "refuses (controllers, operators, the scheduler's binds) wait and retry. Find "
                "the busiest clients in the audit log (userAgent), and a flow schema's queue in "
                "apiserver_flowcontrol_current_executing_seats."
            ),
            source="a healthy API server refuses none: this project's threshold",
        ),
        1.0,
    ),
    _latency("GET", "reads of one object", SLO_SINGLE_OBJECT_S),
    _latency("LIST", "lists, held to the cluster-wide LIST's", SLO_CLUSTER_LIST_S),
    _latency("POST", "creates", SLO_SINGLE_OBJECT_S),
    _latency("PUT", "updates", SLO_SINGLE_OBJECT_S),
    _latency("PATCH", "patches", SLO_SINGLE_OBJECT_S),
    _latency("DELETE", "deletes", SLO_SINGLE_OBJECT_S),
    (
        ControlPlaneAlarm(
            key="control-plane-etcd-size",
            metric="apiserver_storage_size_bytes",
            stat="Maximum",
            period_s=300,
            periods=1,
            comparison=Comparison.GREATER_OR_EQUAL,
            title="etcd database near its limit",
            meaning=(
                "The control plane's etcd database is at {share:.0%} of its {limit:g} GiB "
                "limit; a full database stops every write to the API (no pod, job or node can "
                "change). Find the resources with the most objects (apiserver_storage_objects "
                "in kubectl get --raw=/metrics), usually events, old ReplicaSets, completed Jobs "
                "or a controller's custom resources, and delete what is not needed."
            ),
            source="Amazon EKS clusters: etcd storage is limited to 8 GiB",
        ),
        ETCD_WARN_SHARE,
    ),
)


#: Every kind of this module: the cluster's, not the GPU fleet's health (the composite leaves
#: them out: cdk/constructs/gpu_alarms.py).
CLUSTER_ALARM_KINDS: Final = (
    *(row.key for row, _ in CONTROL_PLANE),
    UNSCHEDULABLE,
    GPU_PENDING,
    *NODE_ALARM_KINDS,
)


def unschedulable_alarm(cluster: str, settings: ClusterAlarmSettings) -> AlarmSpec:
    """The scheduler's count of pods it could not place, above 0 in every minute of
    ``pending_minutes``: Classic's pending-pod page, and OTel mode's for pods without GPUs."""
    minutes = settings.pending_minutes
    return AlarmSpec(
        key=UNSCHEDULABLE,
        kind=UNSCHEDULABLE,
        title="Pods the scheduler cannot place",
        description=(
            f"For {minutes} minutes the scheduler held pods it could not place on any node "
            "(scheduler_pending_pods_UNSCHEDULABLE, the value is how many): no node has the "
            "GPUs, CPU or memory they ask for, or none matches their node selector, affinity "
            "or tolerations. kubectl get pods -A --field-selector=status.phase=Pending, then "
            "kubectl describe pod for the scheduler's reason (FailedScheduling); for GPU pods, "
            "check the node group's or Karpenter NodePool's limits and the GPU instance "
            "capacity in the Availability Zones."
        ),
        severity=Severity.WARNING,
        metric=_eks(cluster, "scheduler_pending_pods_UNSCHEDULABLE", "Sum"),
        period_s=60,
        evaluation_periods=minutes,
        datapoints_to_alarm=minutes,
        threshold=0,
        comparison=Comparison.GREATER,
        missing_data=MissingData.NOT_BREACHING,
        missing_data_reason=_MISSING,
    )


_MISSING = (
    "EKS publishes these every minute from Kubernetes 1.28; a minute without a datapoint (an "
    "older cluster, a gap) is not read as a fault"
)


def _eks(cluster: str, metric: str, stat: str) -> MetricStat:
    return MetricStat(NAMESPACE_EKS, metric, ((DIM_CLUSTER, cluster),), stat)


def control_plane_alarms(cluster: str, settings: ClusterAlarmSettings) -> list[AlarmSpec]:
    """A metric alarm per ``CONTROL_PLANE`` row, and the unschedulable pods' (both modes)."""
    alarms = []
    for row, value in CONTROL_PLANE:
        meaning, threshold = row.meaning, value
        if row.metric == "apiserver_storage_size_bytes":
            meaning = meaning.format(share=value, limit=settings.etcd_limit_gib)
            threshold = round(value * settings.etcd_limit_gib * GIB)
        alarms.append(
            AlarmSpec(
                key=row.key,
                kind=row.key,
                title=row.title,
                description=f"{meaning} (Threshold: {row.source}.)",
                severity=Severity.WARNING,
                metric=_eks(cluster, row.metric, row.stat),
                period_s=row.period_s,
                evaluation_periods=row.periods,
                datapoints_to_alarm=row.periods,
                threshold=threshold,
                comparison=row.comparison,
                missing_data=MissingData.NOT_BREACHING,
                missing_data_reason=_MISSING,
            )
        )
    return [*alarms, unschedulable_alarm(cluster, settings)]


def gpu_pending_query(
    cluster: str, pending_minutes: int, labels: DcgmLabels = CLOUDWATCH
) -> PromQLQuery:
    """Each pod of ``cluster`` that asks for GPUs (``nvidia_com_gpu`` requests, summed over its
    containers) and that the scheduler could not place, one series per pod labelled with the
    GPUs it asked for (``count_values``: the value becomes the ``GPUS_REQUESTED`` label).
    Pending ``pending_minutes``: the pod pages once it has been unschedulable that long."""
    pod = (labels.cluster, labels.namespace, labels.pod)
    by = ", ".join(quote_label(n) for n in pod)
    waiting = gpu_pods_waiting(cluster, f"{KSM_RANGE_S // 60}m", labels)
    return PromQLQuery(
        query=f"count_values by ({by}) ({quote_string(GPUS_REQUESTED)}, {waiting})",
        evaluation_interval_s=EVALUATION_INTERVAL_S,
        pending_period_s=pending_minutes * 60,
        recovery_period_s=RECOVERY_S,
        labels=labels,
        lookback_s=KSM_RANGE_S,
    )


def gpu_pending_alarm(cluster: str, settings: ClusterAlarmSettings) -> AlarmSpec:
    """OTel mode's page for a GPU pod the scheduler cannot place (``gpu_pending_query``)."""
    minutes = settings.pending_minutes
    query = gpu_pending_query(cluster, minutes)
    return AlarmSpec(
        key=GPU_PENDING,
        kind=GPU_PENDING,
        title="GPU pod waiting for GPUs",
        description=(
            f"A pod that asks for GPUs has been unschedulable for {minutes} minutes: no node "
            "has that many free GPUs, or none it may run on (selector, affinity, taints). "
            "kubectl describe pod for the scheduler's reason (FailedScheduling); check the "
            "node group's or Karpenter NodePool's GPU limits, the instance type's capacity "
            "(InsufficientInstanceCapacity in the autoscaler's events) and GPUs held by idle "
            "pods (the weekly report). Each contributor (cluster, namespace, pod) names the "
            f"pod, {GPUS_REQUESTED} the GPUs it asked for."
        ),
        severity=Severity.WARNING,
        metric=query,
        period_s=query.evaluation_interval_s,
        evaluation_periods=1,
        datapoints_to_alarm=1,
        threshold=1,
        comparison=Comparison.GREATER_OR_EQUAL,
        missing_data=MissingData.NOT_BREACHING,
        missing_data_reason=(
            "a pod the query does not return was placed, asks for no GPU, or is gone; absent "
            "for the recovery period, its contributor is OK"
        ),
    )


def control_plane_table(cluster: str = "train") -> str:
    """The control-plane alarms at the default settings, as the Markdown table docs/alarms.md
    shows (a test holds the two equal)."""
    rows = [
        "| alarm | AWS/EKS metric (statistic) | breaches when | for | threshold from |",
        "| --- | --- | --- | --- | --- |",
    ]
    settings = ClusterAlarmSettings()
    sources = {row.key: row.source for row, _ in CONTROL_PLANE}
    for spec in control_plane_alarms(cluster, settings):
        assert isinstance(spec.metric, MetricStat)
        minutes = spec.period_s * spec.evaluation_periods // 60
        op = {Comparison.GREATER: ">", Comparison.GREATER_OR_EQUAL: ">="}[spec.comparison]
        value = f"{spec.threshold:g} a {spec.period_s // 60}-minute period"
        if spec.metric.stat == "Maximum":  # the etcd size: bytes, the limit setting's share
            value = (
                f"{spec.threshold:,.0f} bytes ({ETCD_WARN_SHARE:.0%} of `etcd_limit_gib`="
                f"{settings.etcd_limit_gib:g})"
            )
        rows.append(
            f"| `{spec.key}` | `{spec.metric.metric}` ({spec.metric.stat}) | "
            f"{op} {value} | {minutes} min | "
            f"{sources.get(spec.key, 'any pod unplaced that long')} |"
        )
    return "\n".join(rows) + "\n"
