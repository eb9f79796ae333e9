"""The one place that names CloudWatch namespaces, ports and dimensions.

Everything else (CDK stacks, exporter, analyzers, dashboards) imports these names, so a
rename here is a contract change that every consumer sees at once.
"""

import hashlib
from enum import Enum
from typing import Final, Optional


class StrEnum(str, Enum):
    """``enum.StrEnum`` (3.11) for Python 3.9: the training emitter imports this module and
    runs in training images that are older than the project's own Python. Members are
    strings, and ``str()`` and ``format()`` give the value, as with ``enum.StrEnum``."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


#: Custom metrics published by the GPU node exporter (EMF through the CloudWatch agent).
NAMESPACE_GPU: Final = "GpuInsights"
#: Metrics published by training scripts through ``emitter.training``.
NAMESPACE_TRAINING: Final = "GpuInsights/Training"
#: Counts of findings published by the analyzers.
NAMESPACE_FINDINGS: Final = "GpuInsights/Findings"
#: Daily GPU-hour attribution totals (dimensions ClusterName, Namespace).
NAMESPACE_WASTE: Final = "GpuInsights/Waste"
#: The count metric in ``NAMESPACE_FINDINGS``: one datum per kind and severity per run, stamped
#: at 00:00 UTC of the run's day, so a rerun for the day repeats the datum at the same time.
FINDINGS_COUNT_METRIC: Final = "findings"
#: The statistic every reader of the count uses: a rerun's repeated datum leaves the day's
#: Maximum as it was, where a Sum would count the day twice.
FINDINGS_COUNT_STAT: Final = "Maximum"
#: Namespace of Container Insights (node_gpu_*, pod_gpu_* metrics from DCGM).
NAMESPACE_CONTAINER_INSIGHTS: Final = "ContainerInsights"
#: Namespace the CloudWatch agent uses for host metrics (``nvidia_smi_*`` on EC2 nodes).
NAMESPACE_CW_AGENT: Final = "CWAgent"

#: The CloudWatch agent's Embedded Metric Format listener (TCP and UDP).
EMF_PORT: Final = 25888

#: Dimension names shared by the exporter, alarms and dashboards.
DIM_CLUSTER: Final = "ClusterName"
DIM_NODE: Final = "NodeName"
DIM_GPU_INDEX: Final = "GpuIndex"
DIM_XID_CODE: Final = "XidCode"
DIM_JOB: Final = "JobName"
DIM_KIND: Final = "Kind"
DIM_SEVERITY: Final = "Severity"
#: The alarm shard of a GPU (``alarm_shard``): bounds the series one Metrics Insights alarm
#: query returns, so a fleet of any size is evaluated in full (cdk/alarms/sizing.py).
DIM_SHARD: Final = "Shard"
#: The Kubernetes namespace a GPU-hour is attributed to (GpuInsights/Waste).
DIM_NAMESPACE: Final = "Namespace"

#: Where the add-on's CloudWatch agent and Fluent Bit run, and the account they use.
AGENT_NAMESPACE: Final = "amazon-cloudwatch"
AGENT_SERVICE_ACCOUNT: Final = "cloudwatch-agent"
#: Where the exporter sends EMF by default: the add-on's agent service, in-cluster.
DEFAULT_EMF_ENDPOINT: Final = f"tcp://{AGENT_SERVICE_ACCOUNT}.{AGENT_NAMESPACE}:{EMF_PORT}"
#: Where the exporter sends OTLP by default in OTel mode: the add-on's CloudWatch agent serves
#: "OTLP over gRPC on port 4317 and over HTTP on port 4318, in plaintext" on every node, on by
#: default in add-on 8.0.0 and later ("OTLP ingestion", CloudWatch User Guide,
#: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/eks-observability-addon-otlp-endpoint.html),
#: through the agent's service; /v1/metrics is OTLP/HTTP's metrics path.
OTLP_HTTP_PORT: Final = 4318
DEFAULT_OTLP_ENDPOINT: Final = (
    f"http://{AGENT_SERVICE_ACCOUNT}.{AGENT_NAMESPACE}:{OTLP_HTTP_PORT}/v1/metrics"
)
#: The labels of the exporter's OTLP datapoints, named as dcgm-exporter names its series' (so a
#: PromQL query joins the two on them): the GPU's index, UUID, device and model on the
#: datapoint; the cluster and node as the add-on's pipeline sets them on the resource
#: (cli/demo/realistic/otel.py draws them from the add-on chart). The pod holding the GPU is its
#: UID (the exporter reads UIDs from the processes' cgroups), and where the kubelet's log
#: names say, its name, namespace and container (below).
OTLP_GPU: Final = "gpu"
OTLP_UUID: Final = "UUID"
OTLP_DEVICE: Final = "device"
OTLP_MODEL: Final = "modelName"
OTLP_POD_UID: Final = "k8s.pod.uid"
OTLP_XID_CODE: Final = "xid_code"
OTLP_CLUSTER: Final = "k8s.cluster.name"
OTLP_NODE: Final = "k8s.node.name"
#: The pod, namespace and container that hold a GPU (or run a training rank), as resource
#: attributes named as the add-on names DCGM's, so one label declaration reads both
#: (lambdas/shared/dcgm.py: ``@resource.k8s.pod.name`` in PromQL).
OTLP_POD: Final = "k8s.pod.name"
OTLP_NAMESPACE: Final = "k8s.namespace.name"
OTLP_CONTAINER: Final = "k8s.container.name"
#: The training emitter's datapoint labels: the job (EMF's JobName) and the rank.
OTLP_JOB: Final = "job_name"
OTLP_RANK: Final = "rank"
#: And the attempt (the ``Attempt`` property, ``PROP_ATTEMPT``): a restart begins new series,
#: so the analyzer reads each attempt apart (lambdas/training_analyzer/promql_jobs.py).
OTLP_ATTEMPT: Final = "attempt"
#: OpenTelemetry's resource attribute naming the sender ("service.name", semantic conventions;
#: without it the SDK says "unknown_service").
OTLP_SERVICE: Final = "service.name"
#: The sending process among those of one service: "MUST be unique for each instance of the
#: same service.namespace,service.name pair"; behind an application server "each division
#: (e.g. a worker thread in unicorn) to have its own instance.id" (semantic conventions,
#: https://opentelemetry.io/docs/specs/semconv/registry/attributes/service/). Each serving
#: worker's cumulative quality histogram is its own series (``quality.recorder``).
OTLP_INSTANCE: Final = "service.instance.id"
#: CloudWatch unit names as UCUM, OTLP's units ("%" and "By" as the add-on's pipeline sets them
#: for DCGM's series, transform/cw_k8s_ci_v0_set_unit; "1" for a count, "" for none).
OTLP_UNITS: Final = {
    "Percent": "%",
    "Bytes": "By",
    "Count": "1",
    "Count/Second": "1/s",
    "Seconds": "s",
    "None": "",
}
#: The variable that sends the training emitter's metrics over OTLP/HTTP (JSON) to the URL it
#: holds (``DEFAULT_OTLP_ENDPOINT`` in OTel mode) instead of EMF; the ``otlp_endpoint`` argument
#: wins over it.
OTLP_ENDPOINT_ENV: Final = "GPU_INSIGHTS_OTLP_ENDPOINT"
#: The variable a training pod's downward API sets to ``metadata.namespace``; without it, the
#: namespace of the pod's service account token, which the kubelet mounts at this path
#: ("Accessing the Kubernetes API from a Pod", https://kubernetes.io/docs/tasks/run-application/access-api-from-pod/).
POD_NAMESPACE_ENV: Final = "POD_NAMESPACE"
SERVICE_ACCOUNT_NAMESPACE_FILE: Final = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"


class ExporterSink(StrEnum):
    """How the exporter's DaemonSet sends its metrics (the exporter_sink setting): EMF to the
    agent's listener (CloudWatch metrics in ``GpuInsights``, read with GetMetricData and Metrics
    Insights), or OTLP to the agent's OTLP endpoint in OTel mode (read with PromQL only)."""

    EMF = "emf"
    OTLP = "otlp"


#: An exporter cycle longer than an hour would leave hourly alarms without data.
EXPORTER_MAX_INTERVAL_S: Final = 3600
#: Seconds between the exporter's cycles unless the exporter_interval_seconds setting says.
EXPORTER_INTERVAL_S: Final = 10


class TrainingMetric(StrEnum):
    """Metrics of ``emitter.training``, namespace ``GpuInsights/Training``."""

    SAMPLES_PER_SECOND = "samples_per_second"
    STEP_TIME = "step_time_seconds"
    #: Time a step waited for its batch.
    DATA_WAIT = "data_wait_seconds"
    CHECKPOINT_SAVE = "checkpoint_save_seconds"
    CHECKPOINT_RESTORE = "checkpoint_restore_seconds"
    CHECKPOINT_SIZE = "checkpoint_size_bytes"
    JOB_SUCCEEDED = "job_succeeded"
    JOB_FAILED = "job_failed"
    #: Steps completed in the flush interval (what the means above are over).
    STEPS = "steps"
    #: Percent of the step time spent waiting for data, per job and window (a ratio of
    #: sums, so a dashboard never has to divide one job's series by another's).
    DATA_WAIT_SHARE = "data_wait_share"
    # The job alarms' metrics (cdk/alarms/jobs.py), published every flush with the job's
    # alarm shard (``JOB_ALARM_DIMENSIONS``), stepping or not, until the job ends.
    #: Seconds since the rank's last completed step: the heartbeat a dashboard charts.
    SECONDS_SINCE_STEP = "seconds_since_step"
    #: Seconds the rank is past when its next step was due (``STEP_DUE_MULTIPLE`` times its
    #: recent median step time after its last step, checkpoint save or evaluation); 0 while
    #: a checkpoint save or an evaluation is in progress and at the end: what job-hung reads.
    STEP_OVERDUE = "step_overdue_seconds"
    #: ``record(loss=...)`` values that were NaN or infinite in the window (CloudWatch takes
    #: neither as a value, so they are counted instead).
    LOSS_NOT_FINITE = "loss_not_finite"
    #: The window's mean loss in robust deviations above the median of the rank's recent
    #: windows: (loss - median) / (1.4826 x MAD).
    LOSS_DEVIATION = "loss_deviation"
    #: Samples per second of training time (checkpoint saves and evaluation left out) as a
    #: share of the rank's recent median: 1 is as usual, 0.2 a fifth of it.
    THROUGHPUT_RATIO = "throughput_ratio"
    #: The share of the window the rank spent on productive steps: its steps' time less their
    #: data wait and the checkpoint saves and evaluation inside them, over the window's wall
    #: time (0 to 1), from its first step on. Its mean over any period is the job's rolling
    #: goodput there (docs/goodput.md): every window is one flush long.
    GOODPUT = "goodput"
    # Goodput (lambdas/training_analyzer/goodput, docs/goodput.md): each rank's window split
    # by what the rank was doing, in seconds that add up to the window's length, so the job's
    # GPU-time splits into goodput and badput with nothing left over or counted twice.
    #: The job's step number after the window's last step (``resume_from_step()`` sets where
    #: a restored attempt goes on from; else the process counts from 0).
    STEP_NUMBER = "step_number"
    #: The step number an attempt (a process) began from, in its first window with a step: a
    #: restart that goes back to a checkpoint shows as a step number that goes back.
    RESUMED_FROM_STEP = "resumed_from_step"
    #: Seconds from the emitter's start to the first batch request (checkpoint restore,
    #: model build, compilation), time in ``checkpoint_restore()`` included.
    STARTUP_TIME = "startup_seconds"
    #: Seconds the rank spent in its steps' own work (the batch in hand, not saving a
    #: checkpoint or evaluating), up to when the step was due; the rest is ``stalled_seconds``.
    COMPUTE_TIME = "compute_seconds"
    #: Seconds the rank waited for its batches (the sum; ``data_wait_seconds`` is the mean).
    DATA_WAIT_TIME = "data_wait_total_seconds"
    #: Seconds inside ``checkpoint_save()`` (the sum; ``checkpoint_save_seconds`` the longest).
    CHECKPOINT_SAVE_TIME = "checkpoint_save_total_seconds"
    #: Seconds inside ``evaluating()``.
    EVALUATION_TIME = "evaluation_seconds"
    #: Seconds a step ran past when it was due (``STEP_DUE_MULTIPLE`` times the recent median
    #: step): a hang in a collective, until the step ends or the process is killed.
    STALLED_TIME = "stalled_seconds"
    #: Seconds outside all of the above: after the loop ended, between loops, before close().
    IDLE_TIME = "idle_seconds"


TRAINING_METRIC_UNITS: Final[dict[TrainingMetric, str]] = {
    TrainingMetric.SAMPLES_PER_SECOND: "Count/Second",
    TrainingMetric.STEP_TIME: "Seconds",
    TrainingMetric.DATA_WAIT: "Seconds",
    TrainingMetric.CHECKPOINT_SAVE: "Seconds",
    TrainingMetric.CHECKPOINT_RESTORE: "Seconds",
    TrainingMetric.CHECKPOINT_SIZE: "Bytes",
    TrainingMetric.JOB_SUCCEEDED: "Count",
    TrainingMetric.JOB_FAILED: "Count",
    TrainingMetric.STEPS: "Count",
    TrainingMetric.DATA_WAIT_SHARE: "Percent",
    TrainingMetric.SECONDS_SINCE_STEP: "Seconds",
    TrainingMetric.STEP_OVERDUE: "Seconds",
    TrainingMetric.LOSS_NOT_FINITE: "Count",
    TrainingMetric.LOSS_DEVIATION: "None",
    TrainingMetric.THROUGHPUT_RATIO: "None",
    TrainingMetric.GOODPUT: "None",
    TrainingMetric.STEP_NUMBER: "Count",
    TrainingMetric.RESUMED_FROM_STEP: "Count",
    TrainingMetric.STARTUP_TIME: "Seconds",
    TrainingMetric.COMPUTE_TIME: "Seconds",
    TrainingMetric.DATA_WAIT_TIME: "Seconds",
    TrainingMetric.CHECKPOINT_SAVE_TIME: "Seconds",
    TrainingMetric.EVALUATION_TIME: "Seconds",
    TrainingMetric.STALLED_TIME: "Seconds",
    TrainingMetric.IDLE_TIME: "Seconds",
}
#: A rank's window's seconds by what it was doing: they add up to the window's length.
TIME_METRICS: Final = (
    TrainingMetric.STARTUP_TIME,
    TrainingMetric.COMPUTE_TIME,
    TrainingMetric.DATA_WAIT_TIME,
    TrainingMetric.CHECKPOINT_SAVE_TIME,
    TrainingMetric.EVALUATION_TIME,
    TrainingMetric.STALLED_TIME,
    TrainingMetric.IDLE_TIME,
)
TRAINING_DIMENSIONS: Final = (DIM_CLUSTER, DIM_JOB)
#: The metrics the job alarms read: published with the job's alarm shard as a dimension
#: (one series per job and shard, however many ranks), so one alarm per shard returns at most
#: 500 jobs (cdk/alarms/sizing.py).
JOB_ALARM_METRICS: Final = frozenset(
    {
        TrainingMetric.SECONDS_SINCE_STEP,
        TrainingMetric.STEP_OVERDUE,
        TrainingMetric.LOSS_NOT_FINITE,
        TrainingMetric.LOSS_DEVIATION,
        TrainingMetric.THROUGHPUT_RATIO,
        TrainingMetric.GOODPUT,
    }
)
JOB_ALARM_DIMENSIONS: Final = (DIM_CLUSTER, DIM_JOB, DIM_SHARD)
#: Job alarm shards: fixed, because a training script cannot know the deployment's settings.
#: 2,000 concurrent jobs put 250 +- 15 in each, half of the 500 series a query returns.
JOB_ALARM_SHARDS: Final = 8
#: A rank is overdue once its last step is this many times its recent median step time old.
STEP_DUE_MULTIPLE: Final = 3
#: The recent windows a rank's medians are over (an hour at the default one-minute flush: a
#: slowdown stays under the median for half of it, 30 minutes), and how many it needs before
#: it publishes a loss deviation or a throughput ratio (until then it has no "usual").
RECENT_WINDOWS: Final = 60
MIN_RECENT_WINDOWS: Final = 5
#: The property that says what a rank was doing at the flush (``JobState``).
PROP_JOB_STATE: Final = "JobState"
#: The property listing the GPUs the rank's container was given (the device plugin's
#: ``NVIDIA_VISIBLE_DEVICES``), for the notifier to name the job's GPUs.
PROP_GPUS: Final = "Gpus"
GPUS_ENV: Final = "NVIDIA_VISIBLE_DEVICES"


class JobState(StrEnum):
    """What a rank was doing when it flushed: tells a hang from a pause that is no hang."""

    STEPPING = "stepping"
    CHECKPOINTING = "checkpointing"
    EVALUATING = "evaluating"
    #: No step completed in the window and none of the above in progress.
    STALLED = "stalled"
    ENDED = "ended"


def job_shard(job_name: str) -> str:
    """The job's alarm shard, ``"0"`` to ``JOB_ALARM_SHARDS - 1``: stable for a job name
    (SHA-256, not Python's per-process ``hash``), the same on every rank."""
    digest = hashlib.sha256(job_name.encode()).digest()
    return str(int.from_bytes(digest[:8], "big") % JOB_ALARM_SHARDS)


#: Properties (not dimensions) that the training analyzer reads back from the log lines.
PROP_RANK: Final = "Rank"
#: The pod a rank runs in (from the downward API), so GPU-hours attribute to the job exactly.
PROP_POD_NAME: Final = "PodName"
#: The variable the training pod's downward API sets to ``metadata.name``.
POD_NAME_ENV: Final = "POD_NAME"
#: The property naming the attempt (the process) a document came from: the job's own restart
#: count where its launcher sets one, else an id drawn at the process's start.
PROP_ATTEMPT: Final = "Attempt"
#: Where a job's own attempt number is found, in order: torchrun's count of worker group
#: restarts ("TORCHELASTIC_RESTART_COUNT - The number of worker group restarts so far",
#: torchrun (Elastic Launch), environment variables, https://pytorch.org/docs/stable/elastic/run.html),
#: then JobSet's restart attempt, an annotation and label on its pods ("RestartsKey is an
#: annotation and label key which defines the restart attempt number the JobSet is currently
#: on", kubernetes-sigs/jobset pkg/constants, ``jobset.sigs.k8s.io/restart-attempt``) that the
#: pod's downward API passes as this variable. Kubeflow's PyTorchJob sets neither: its pods
#: restart under their restartPolicy, and the id drawn at start tells the attempts apart.
ATTEMPT_ENVS: Final = ("TORCHELASTIC_RESTART_COUNT", "JOBSET_RESTART_ATTEMPT")

#: Properties of the exporter's documents that the notifier reads: the UIDs of the pods on the
#: GPU (and their names), how the exporter learnt of an XID (``nvml``, ``lost``), and the GPU's
#: PCI bus id (the kernel's ``NVRM: Xid`` line names the GPU by it).
PROP_POD_UIDS: Final = "PodUids"
#: The same pods as ``namespace/name`` (what a person knows them by), where the exporter can
#: read them from the kubelet's pod log directories.
PROP_PODS: Final = "Pods"
#: The one container that holds the GPU (its processes' cgroup, named by the kubelet's log
#: names: ``exporter.pod_attribution``), which the OTLP sink sends as ``OTLP_CONTAINER``. Not an
#: EMF field: the exporter sets it only with the OTLP sink (``ExporterConfig.name_containers``),
#: and the XID event's log line leaves it out (``exporter.xid_event_log``).
PROP_CONTAINER: Final = "Container"
#: On an XID document only, when the exporter could not ask the GPU which processes run on it
#: (fallen off the bus): the pods it names are those of the last cycle that read them, and
#: this is when (epoch milliseconds). Absent: the pods were read at the XID (an older
#: notifier, which does not know it, shows them as read then).
PROP_PODS_LAST_SEEN_MS: Final = "PodsLastSeenMs"
PROP_XID_SOURCE: Final = "XidSource"
#: The XID event's running count on its GPU and code since the exporter started (this event
#: included): what the OTLP sink sends as the ``gpu_xid_errors`` counter, so PromQL's
#: ``increase()`` sees every XID, where DCGM's field is a gauge of the last code seen.
PROP_XID_COUNT: Final = "XidCount"
PROP_PCI_BUS_ID: Final = "PciBusId"


def dimension_value_problem(what: str, value: object) -> Optional[str]:
    """Why CloudWatch would refuse ``value`` as a dimension value, or None: "Dimension values
    must contain only ASCII characters and must include at least one non-whitespace character.
    ASCII control characters are not supported ... Maximum length of 1024"
    (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_Dimension.html)."""
    if not isinstance(value, str) or not value.strip():
        return f"{what} must be a non-empty string, not {value!r}"
    if len(value) > 1024:
        return f"{what} is {len(value)} characters; CloudWatch takes at most 1024"
    if not all(" " <= c <= "~" for c in value):
        return f"{what} {value!r} has a character CloudWatch refuses (ASCII, no control characters)"
    return None


def training_log_group(cluster_name: str) -> str:
    """Where the CloudWatch agent writes training scripts' EMF lines."""
    return f"/aws/gpu-insights/{cluster_name}/training"


#: Metric the host-log metric filter publishes for each kernel ``NVRM: Xid`` line (fallback
#: XID path for nodes without the exporter), in a namespace per cluster because a metric
#: filter cannot add a constant dimension.
HOST_LOG_XID_METRIC: Final = "gpu_xid_host_log_lines"


#: Published by the silence check (lambdas/silence_check), namespace ``GpuInsights``: per
#: (ClusterName, NodeName, GpuIndex) only while that GPU is silent (the number of GPUs the
#: series stands for), and per ClusterName every run (the silent GPUs in all), so that the
#: check's own silence shows as missing data.
SILENT_GPUS_METRIC: Final = "gpu_silent"
#: Per ClusterName every run: nodes with at least one silent GPU.
SILENT_NODES_METRIC: Final = "gpu_silent_nodes"
#: Published by the notifier (lambdas/notifier/refused.py), namespace ``GpuInsights``, per
#: ClusterName on every batch of log events it reads: the events that named an XID but that it
#: refused (a field that is not as the exporter or the kernel writes it). Alarmed: a refused
#: document may be a GPU fault that paged no one.
NOTIFIER_REFUSED_METRIC: Final = "notifier_refused_documents"
#: Published by the notifier (EMF, lambdas/notifier/culprit_record.py) with ClusterName and
#: NodeName each time a fail-slow page names a culprit on that node: 1 a page. The weekly report
#: sums 30 days of it per node for the lemon-node score (lambdas/weekly_report/aws.py).
FAIL_SLOW_CULPRIT_METRIC: Final = "fail_slow_culprits"
#: The ``GpuIndex`` of a node that sent nothing at all: one series for all its GPUs.
ALL_GPUS: Final = "all"


def exporter_log_group(cluster_name: str) -> str:
    """Where the CloudWatch agent writes the exporter's EMF lines (XID events are read there)."""
    return f"/aws/gpu-insights/{cluster_name}/exporter"


def host_log_namespace(cluster_name: str) -> str:
    return f"{NAMESPACE_GPU}/HostLogs/{cluster_name}"


#: Container Insights' PodName is the pod's controller's name where a DaemonSet, Job, ReplicaSet
#: (its Deployment) or ReplicationController owns it, the pod's own name otherwise; FullPodName
#: is always the pod's own name (amazon-contributing/opentelemetry-collector-contrib
#: receiver/awscontainerinsightreceiver/internal/stores/podstore.go, addPodOwnersAndPodName).
DIM_POD_NAME: Final = "PodName"
DIM_FULL_POD_NAME: Final = "FullPodName"
DIM_GPU_DEVICE: Final = "GpuDevice"
#: Container Insights' per-pod phase count: 1 while the pod is Pending, with dimensions
#: (ClusterName, FullPodName, Namespace, PodName) among others (aws/amazon-cloudwatch-agent-test
#: test/metric_value_benchmark ``expectedDimsToMetrics``); no GPU request beside it.
CI_POD_PENDING_METRIC: Final = "pod_status_pending"
CI_POD_SCHEMA: Final = (DIM_CLUSTER, DIM_FULL_POD_NAME, DIM_NAMESPACE, DIM_POD_NAME)
#: Container Insights' per-pod GPU power series (only GPUs that a pod holds have one).
CI_POD_GPU_POWER_METRIC: Final = "pod_gpu_power_draw"
CI_POD_GPU_SCHEMA: Final = (
    DIM_CLUSTER,
    DIM_FULL_POD_NAME,
    DIM_GPU_DEVICE,
    DIM_NAMESPACE,
    DIM_POD_NAME,
)
#: Container Insights' per-pod GPU utilization: a series exists for a (pod, GPU) while the pod
#: holds that GPU, which is what the GPU analyzer reads holding from. Enhanced Container
#: Insights publishes pod_gpu_* with dimensions (ClusterName, Namespace, PodName, FullPodName,
#: GpuDevice) and node_gpu_* with (ClusterName, NodeName, InstanceId, InstanceType, GpuDevice):
#: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Container-Insights-metrics-enhanced-EKS.html
#: and aws/amazon-cloudwatch-agent translator/translate/otel/exporter/awsemf/kubernetes.go.
CI_POD_GPU_UTILIZATION_METRIC: Final = "pod_gpu_utilization"
CI_NODE_GPU_POWER_METRIC: Final = "node_gpu_power_draw"
#: Container Insights' per-pod GPU framebuffer memory used and the device's total, in bytes:
#: the agent renames DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_FB_TOTAL (MiB) and scales both by
#: ``1024 * 1024`` (aws/amazon-cloudwatch-agent translator/translate/otel/processor/
#: metricstransformprocessor/translator.go, ``experimental_scale_value`` for GpuMemUsed and
#: GpuMemTotal). Dimensions as ``CI_POD_GPU_SCHEMA``.
CI_POD_GPU_MEMORY_USED_METRIC: Final = "pod_gpu_memory_used"
CI_POD_GPU_MEMORY_TOTAL_METRIC: Final = "pod_gpu_memory_total"
CI_NODE_GPU_SCHEMA: Final = (DIM_CLUSTER, DIM_GPU_DEVICE, "InstanceId", "InstanceType", DIM_NODE)
#: Container Insights' GPUs of a node, "The total number of GPU(s) available on the node",
#: dimensions (ClusterName) and (ClusterName, InstanceId, NodeName) (Amazon CloudWatch User
#: Guide, Container-Insights-metrics-EKS.html and Container-Insights-metrics-enhanced-EKS.html):
#: the GPU-hour funnel's paid stage (lambdas/training_analyzer/goodput/capacity.py).
CI_NODE_GPU_LIMIT_METRIC: Final = "node_gpu_limit"
CI_NODE_GPU_LIMIT_SCHEMA: Final = (DIM_CLUSTER, "InstanceId", DIM_NODE)
#: Container Insights' node CPU, "The percentage of CPU units used on the node", dimensions
#: (ClusterName) and (ClusterName, InstanceId, NodeName) (the same pages): a node whose CPU is
#: saturated starves its ranks' data loaders (the fail-slow culprit, lambdas/shared/fail_slow.py).
CI_NODE_CPU_METRIC: Final = "node_cpu_utilization"
CI_NODE_CPU_SCHEMA: Final = CI_NODE_GPU_LIMIT_SCHEMA

#: Daily GPU-hour attribution totals of the GPU analyzer, for showback dashboards.
WASTE_DIMENSIONS: Final = (DIM_CLUSTER, DIM_NAMESPACE)


class WasteMetric(StrEnum):
    """Per cluster and Kubernetes namespace, per day (unit: GPU-hours, and dollars)."""

    HELD = "gpu_hours_held"
    HELD_NOT_WORKING = "gpu_hours_held_not_working"
    #: Held and working: the GPU-hour funnel's active stage (the fleet dashboard's).
    HELD_WORKING = "gpu_hours_held_working"
    WASTE_USD = "gpu_waste_usd"


WASTE_METRIC_UNITS: Final[dict[WasteMetric, str]] = {
    WasteMetric.HELD: "None",
    WasteMetric.HELD_NOT_WORKING: "None",
    WasteMetric.HELD_WORKING: "None",
    WasteMetric.WASTE_USD: "None",
}


def container_insights_log_group_prefix(cluster_name: str) -> str:
    """Log groups Container Insights writes to: performance, application, host, dataplane."""
    return f"/aws/containerinsights/{cluster_name}"


class GpuMetric(StrEnum):
    """Per-GPU metrics of the NVML exporter, namespace ``GpuInsights``."""

    POWER_DRAW = "gpu_power_draw_watts"
    POWER_LIMIT = "gpu_power_limit_watts"
    #: Power draw as a percent of the enforced limit: the best single sign of real work.
    POWER_UTILIZATION = "gpu_power_utilization"
    #: The same, published only while the GPU is in use (a compute process on it, or over
    #: 1 GiB of memory held): an idle-by-design GPU has no value, so it cannot page anyone.
    ALLOCATED_POWER_UTILIZATION = "gpu_allocated_power_utilization"
    UTILIZATION = "gpu_utilization"
    MEMORY_USED = "gpu_memory_used_bytes"
    TEMPERATURE = "gpu_temperature_celsius"
    SM_ACTIVE = "gpu_sm_active"
    SM_OCCUPANCY = "gpu_sm_occupancy"
    TENSOR_ACTIVE = "gpu_tensor_active"
    XID_ERRORS = "gpu_xid_errors"
    #: XID errors whose code needs action (see contract.xid); lets one alarm cover every code.
    XID_FATAL_ERRORS = "gpu_xid_fatal_errors"
    ECC_UNCORRECTED = "gpu_ecc_errors_uncorrected"
    #: 1 while uncorrectable-error row remaps wait for a GPU reset.
    ROW_REMAP_PENDING = "gpu_row_remap_pending"
    THROTTLED_POWER = "gpu_throttled_power"
    THROTTLED_THERMAL = "gpu_throttled_thermal"
    #: 1 while NVML's HW Slowdown reason holds the clocks down (heat, an external power brake,
    #: or fast-trigger protection against a power spike).
    THROTTLED_HW_SLOWDOWN = "gpu_throttled_hw_slowdown"
    #: The SM clock at the sample, MHz: a GPU slower than its peers shows here.
    SM_CLOCK = "gpu_sm_clock_mhz"
    #: New PCIe replays (link-level retransmissions) since the last cycle.
    PCIE_REPLAYS = "gpu_pcie_replay_errors"
    #: New NVLink errors since the last cycle: CRC flit and data errors, replays and
    #: recoveries, summed over the GPU's active links.
    NVLINK_ERRORS = "gpu_nvlink_errors"
    #: 1 while NVML answers for the GPU, 0 once it is lost (fallen off the bus).
    HEALTHY = "gpu_healthy"


class Role(StrEnum):
    """How the exporter sends a per-GPU reading (what it costs follows from it, ``cost``)."""

    #: A metric per GPU in every cycle (and a cluster copy where ``cluster``).
    CYCLE = "per cycle"
    #: A metric per GPU only in the clock hours it is non-zero (exporter.fault_gate).
    FAULT = "fault gauge"
    #: Not a metric: a property of the GPU's EMF line (Logs Insights reads it, free of a metric).
    PROPERTY = "property"
    #: A metric the moment it happens (XID events), with ``XID_DIMENSION_SETS``.
    EVENT = "event"


class CostClass(StrEnum):
    """What CloudWatch bills a reading as ("metrics are prorated by the hour",
    https://aws.amazon.com/cloudwatch/pricing/)."""

    #: A custom metric every hour of the month.
    HOURLY = "custom metric, every hour"
    #: A custom metric in the hours it is published only.
    FAULT_HOURS = "custom metric, its non-zero hours"
    #: A custom metric once the event has happened.
    ON_EVENT = "custom metric, once it happens"
    #: Log ingestion only.
    LOG_ONLY = "log bytes only"


_COST: Final[dict[Role, CostClass]] = {
    Role.CYCLE: CostClass.HOURLY,
    Role.FAULT: CostClass.FAULT_HOURS,
    Role.EVENT: CostClass.ON_EVENT,
    Role.PROPERTY: CostClass.LOG_ONLY,
}


class GpuMetricRow:
    """One row of the exporter's metric table (``GPU_METRICS``): everything the exporter,
    alarms, dashboards, cost model and README know about one per-GPU reading."""

    __slots__ = (
        "alarmed",
        "cluster",
        "container_insights",
        "dcgm",
        "metric",
        "otlp",
        "role",
        "unit",
    )

    def __init__(
        self,
        metric: GpuMetric,
        unit: str,
        role: Role,
        *,
        alarmed: bool = False,
        cluster: bool = False,
        container_insights: Optional[str] = None,
        dcgm: Optional[str] = None,
        otlp: bool = False,
    ) -> None:
        #: The metric's name.
        self.metric = metric
        #: Its CloudWatch unit (EMF accepts only CloudWatch's unit names; watts and degrees
        #: are "None").
        self.unit = unit
        self.role = role
        #: A per-GPU multi time series alarm reads it: its per-GPU series carry ``Shard``.
        self.alarmed = alarmed
        #: It has a per-cluster series too (``ClusterName`` alone).
        self.cluster = cluster
        #: Container Insights' per-GPU metric of the same reading (``CI_NODE_GPU_SCHEMA``),
        #: which dashboards read instead.
        self.container_insights = container_insights
        #: DCGM's field for the same reading (``DCGM_FI_*``, as dcgm-exporter names its
        #: series), None where DCGM has none. The add-on's dcgm-exporter collects only
        #: ``ADDON_DCGM_FIELDS`` of them: in OTel mode those are what the add-on already gives.
        #: Read with PromQL in OTel mode (``DCGM_GPU_METRICS``).
        self.dcgm = dcgm
        #: A property of the EMF line (no custom metric in Classic) that the OTLP sink sends as
        #: a gauge all the same (OTel mode bills bytes, not metrics, and reads it with PromQL).
        self.otlp = otlp

    @property
    def cost(self) -> CostClass:
        return _COST[self.role]

    def __repr__(self) -> str:
        return f"GpuMetricRow({self.metric!s}, {self.unit}, {self.role!s})"


_R = GpuMetricRow
G = GpuMetric
#: The exporter's per-GPU metrics, one row each. The sets, schemas and dimension sets below,
#: the cost model (cli/cost/estimate.py), the alarms' invariants and the README's metric table are
#: derived from or checked against these rows (tests/unit/agent/contract/test_metrics.py).
GPU_METRICS: Final[tuple[GpuMetricRow, ...]] = (
    _R(G.POWER_UTILIZATION, "Percent", Role.CYCLE, cluster=True),
    _R(G.ALLOCATED_POWER_UTILIZATION, "Percent", Role.CYCLE, alarmed=True, cluster=True),
    _R(G.SM_ACTIVE, "Percent", Role.CYCLE, cluster=True, dcgm="DCGM_FI_PROF_SM_ACTIVE"),
    _R(G.HEALTHY, "None", Role.CYCLE, alarmed=True, cluster=True),
    _R(G.THROTTLED_THERMAL, "None", Role.FAULT, alarmed=True, dcgm="DCGM_FI_DEV_THERMAL_VIOLATION"),
    _R(G.THROTTLED_POWER, "None", Role.FAULT, alarmed=True, dcgm="DCGM_FI_DEV_POWER_VIOLATION"),
    _R(G.ECC_UNCORRECTED, "Count", Role.FAULT, alarmed=True, dcgm="DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"),
    _R(G.ROW_REMAP_PENDING, "None", Role.FAULT, dcgm="DCGM_FI_DEV_ROW_REMAP_PENDING"),
    # The fail-slow culprit's evidence (lambdas/shared/fail_slow.py), priced with Classic's
    # per-metric bill in mind (cli/cost): the error counters and the HW Slowdown flag are zero
    # in almost every hour, so they are fault gauges, billed only in their non-zero hours, as
    # ECC is. The SM clock is never zero: a metric of every cycle would cost Classic a custom
    # metric a GPU ($0.30 a month at the first tier, $2.40 an 8-GPU node, past issue 14's $14
    # a node-month), so it rides the EMF line as a property (log bytes only) and goes over
    # OTLP as a gauge (OTel mode bills its bytes); Classic's page reads it from the line.
    _R(G.THROTTLED_HW_SLOWDOWN, "None", Role.FAULT),
    _R(G.SM_CLOCK, "None", Role.PROPERTY, dcgm="DCGM_FI_DEV_SM_CLOCK", otlp=True),
    _R(G.PCIE_REPLAYS, "Count", Role.FAULT, dcgm="DCGM_FI_DEV_PCIE_REPLAY_COUNTER"),
    _R(G.NVLINK_ERRORS, "Count", Role.FAULT),
    _R(
        G.POWER_DRAW,
        "None",
        Role.PROPERTY,
        container_insights=CI_NODE_GPU_POWER_METRIC,
        dcgm="DCGM_FI_DEV_POWER_USAGE",
    ),
    _R(
        G.UTILIZATION,
        "Percent",
        Role.PROPERTY,
        container_insights="node_gpu_utilization",
        dcgm="DCGM_FI_DEV_GPU_UTIL",
    ),
    _R(
        G.MEMORY_USED,
        "Bytes",
        Role.PROPERTY,
        container_insights="node_gpu_memory_used",
        dcgm="DCGM_FI_DEV_FB_USED",  # MiB (DCGM_MIB_METRICS)
    ),
    _R(
        G.TEMPERATURE,
        "None",
        Role.PROPERTY,
        container_insights="node_gpu_temperature",
        dcgm="DCGM_FI_DEV_GPU_TEMP",
    ),
    _R(G.POWER_LIMIT, "None", Role.PROPERTY, dcgm="DCGM_FI_DEV_ENFORCED_POWER_LIMIT"),
    _R(G.SM_OCCUPANCY, "Percent", Role.PROPERTY, dcgm="DCGM_FI_PROF_SM_OCCUPANCY"),
    _R(G.TENSOR_ACTIVE, "Percent", Role.PROPERTY, dcgm="DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"),
    #: DCGM's XID field is a gauge of the last code seen ("Value of the last XID error
    #: encountered", NVIDIA/dcgm-exporter etc/default-counters.csv), read at each scrape:
    #: two XIDs between scrapes are one value, and a repeat of the same code is no change.
    _R(G.XID_ERRORS, "Count", Role.EVENT, cluster=True, dcgm="DCGM_FI_DEV_XID_ERRORS"),
    #: XID errors whose code needs action (contract.xid): one alarm covers every code.
    _R(G.XID_FATAL_ERRORS, "Count", Role.EVENT, cluster=True),
)
del _R, G
GPU_METRIC_ROWS: Final[dict[GpuMetric, GpuMetricRow]] = {r.metric: r for r in GPU_METRICS}

#: The DCGM fields the add-on's dcgm-exporter collects, its ``metricsConfig`` (read 2026-12-01:
#: aws-observability/helm-charts 71a298f, charts/amazon-cloudwatch-observability/templates/
#: linux/dcgm-exporter-daemonset.yaml, which the operator's dcgm-exporter-config-map carries as
#: dcp-metrics-included.csv: aws/amazon-cloudwatch-agent-operator internal/manifests/
#: dcgmexporter/configmap.go): in OTel mode the add-on sends these ten, under these names,
#: every ``otelContainerInsights.metricResolution`` ("30s"; _otel-container-insights-config.tpl,
#: ``prometheus/cw_k8s_ci_v0_dcgm``). Tensor activity is the one profiling field; no SM
#: activity or clock, no XID, no power limit, no violation or ECC counter is among them.
ADDON_DCGM_FIELDS: Final = frozenset(
    {
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_TOTAL",
        "DCGM_FI_DEV_FB_USED_PERCENT",
        "DCGM_FI_DEV_MEMORY_TEMP",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    }
)
#: The ``label`` fields of the same ``metricsConfig`` ("DCGM_FI_DRIVER_VERSION, label, Driver
#: Version."): dcgm-exporter writes each as a label of that name on every series it sends
#: (``DCGM_FI_DRIVER_VERSION="535.183.06"``), a series' label, not a series of its own.
ADDON_DCGM_LABEL_FIELDS: Final = ("DCGM_FI_DRIVER_VERSION",)
#: Seconds between the add-on's scrapes of dcgm-exporter in OTel mode (its chart's default).
ADDON_DCGM_INTERVAL_S: Final = 30


def _where(role: Optional[Role] = None, **flags: bool) -> "frozenset[GpuMetric]":
    return frozenset(
        r.metric
        for r in GPU_METRICS
        if (role is None or r.role is role) and all(getattr(r, k) == v for k, v in flags.items())
    )


#: CloudWatch units, by metric.
GPU_METRIC_UNITS: Final[dict[GpuMetric, str]] = {r.metric: r.unit for r in GPU_METRICS}

#: Dimension sets of per-GPU readings: one series per GPU, and one per cluster, so that
#: alarms can watch the whole fleet without one alarm per node.
GPU_DIMENSION_SETS: Final[tuple[tuple[str, ...], ...]] = (
    (DIM_CLUSTER, DIM_NODE, DIM_GPU_INDEX),
    (DIM_CLUSTER,),
)
#: The per-GPU metrics that the multi time series alarms query: their per-GPU series carry the
#: GPU's alarm shard as well (one extra dimension, no extra series), so one alarm per shard
#: returns at most 500 series. Their cluster series is unchanged.
ALARM_METRICS: Final = _where(alarmed=True)
ALARM_DIMENSION_SETS: Final[tuple[tuple[str, ...], ...]] = (
    (DIM_CLUSTER, DIM_NODE, DIM_GPU_INDEX, DIM_SHARD),
    (DIM_CLUSTER,),
)
#: What the exporter publishes per GPU every cycle: what no other source gives and that the
#: alarms (low power, lost GPU), the GPU-hour attribution (lambdas/training_analyzer/gpu_hours)
#: or the weekly report read.
CYCLE_METRICS: Final = _where(Role.CYCLE)
#: Fault gauges: per GPU only, and only in the clock hours they are non-zero, from the alarm
#: period of their first non-zero sample (tests/oracles/sparse.py proves the alarms read the same).
FAULT_METRICS: Final = _where(Role.FAULT)
#: The cycle metrics' cluster-wide copies: the weekly report's GPU-days (power samples and
#: mean, mean SM activity) and the fleet dashboard's counts (reporting, in use) and means.
CLUSTER_METRICS: Final = _where(Role.CYCLE, cluster=True)
#: Readings Container Insights already publishes per GPU (``CI_NODE_GPU_SCHEMA``): the exporter
#: carries them as EMF properties of its log line, and dashboards read Container Insights'.
CI_NODE_GPU_METRICS: Final[dict[GpuMetric, str]] = {
    r.metric: r.container_insights for r in GPU_METRICS if r.container_insights is not None
}
#: The same readings in OTel Container Insights mode: dcgm-exporter's series under DCGM's own
#: names, each labelled with its GPU (``gpu``), node, cluster and the pod holding it
#: (aws-observability/helm-charts charts/amazon-cloudwatch-observability/templates/linux/
#: _otel-container-insights-config.tpl: ``prometheus/cw_k8s_ci_v0_dcgm`` scrapes
#: dcgm-exporter; ``transform/cw_k8s_ci_v0_set_unit`` names these metrics).
DCGM_GPU_METRICS: Final[dict[GpuMetric, str]] = {
    r.metric: r.dcgm
    for r in GPU_METRICS
    if r.dcgm in ADDON_DCGM_FIELDS and r.container_insights is not None
}
#: Those DCGM sends in MiB where the exporter and Classic's node_gpu_* give bytes
#: (``transform/cw_k8s_ci_v0_set_unit`` sets "MiBy"; Classic scales by 1024 * 1024, see
#: ``CI_POD_GPU_MEMORY_USED_METRIC``).
DCGM_MIB_METRICS: Final = frozenset({GpuMetric.MEMORY_USED})
#: Properties of the EMF line that the OTLP sink sends as gauges too (``GpuMetricRow.otlp``).
OTLP_PROPERTIES: Final = frozenset(r.metric for r in GPU_METRICS if r.otlp)
#: Every reading of a GPU's cycle, whatever its role (XID events are no reading of a cycle).
GPU_READINGS: Final = frozenset(r.metric for r in GPU_METRICS if r.role is not Role.EVENT)


def gpu_schema(metric: GpuMetric) -> tuple[str, ...]:
    """The dimension names of a metric's per-GPU series (what a SCHEMA or SEARCH names)."""
    return ALARM_DIMENSION_SETS[0] if GPU_METRIC_ROWS[metric].alarmed else GPU_DIMENSION_SETS[0]


def emf_dimension_sets(metric: GpuMetric) -> "list[tuple[str, ...]]":
    """The dimension sets of a metric in the exporter's EMF document: its per-GPU schema, and
    its cluster copy where it has one (XID events: ``XID_DIMENSION_SETS``)."""
    row = GPU_METRIC_ROWS[metric]
    if row.role is Role.PROPERTY:
        return []
    if row.role is Role.EVENT:
        return list(XID_DIMENSION_SETS)
    return [gpu_schema(metric), *([(DIM_CLUSTER,)] if row.cluster else [])]


def alarm_shard(node_name: str, gpu_index: int, shards: int) -> str:
    """The GPU's alarm shard, ``"0"`` to ``shards - 1``: stable for a node name and GPU index
    (SHA-256, not Python's per-process ``hash``), and spread GPU by GPU so that shards fill
    evenly (by node, eight GPUs would move together and shards would fill unevenly)."""
    if shards < 1:
        raise ValueError(f"shards={shards} must be at least 1")
    digest = hashlib.sha256(f"{node_name}/{gpu_index}".encode()).digest()
    return str(int.from_bytes(digest[:8], "big") % shards)


#: Dimension sets of XID events: per GPU and code, per cluster and code, per cluster.
XID_DIMENSION_SETS: Final[tuple[tuple[str, ...], ...]] = (
    (DIM_CLUSTER, DIM_NODE, DIM_GPU_INDEX, DIM_XID_CODE),
    (DIM_CLUSTER, DIM_XID_CODE),
    (DIM_CLUSTER,),
)


#: The S3 request-metrics filter this app creates on the storage buckets. Not the console's
#: "EntireBucket": a configuration the user made keeps its id, so the app never overwrites it
#: on deploy nor deletes it on destroy. The storage analyzer reads either.
REQUEST_METRICS_FILTER_ID: Final = "GpuInsights-EntireBucket"
WHOLE_BUCKET_FILTER_IDS: Final = frozenset({"EntireBucket", REQUEST_METRICS_FILTER_ID})
