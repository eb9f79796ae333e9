"""A finding: one thing a person should know about a resource, with the numbers behind it.

``kind`` values are stable ids that users write EventBridge rules and dashboards against; add
to them, never rename them.
"""

import json
import logging
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"


class Kind(StrEnum):
    EBS_IDLE_VOLUME = "ebs_idle_volume"
    EBS_OVERPROVISIONED_IOPS = "ebs_overprovisioned_iops"
    EBS_OVERPROVISIONED_THROUGHPUT = "ebs_overprovisioned_throughput"
    EBS_THROUGHPUT_SATURATED = "ebs_throughput_saturated"
    EBS_HIGH_QUEUE_LENGTH = "ebs_high_queue_length"
    S3_HIGH_LATENCY = "s3_high_latency"
    S3_HIGH_ERROR_RATE = "s3_high_error_rate"
    S3_REQUEST_METRICS_DISABLED = "s3_request_metrics_disabled"
    GPU_LOW_POWER_UTILIZATION = "gpu_low_power_utilization"
    GPU_XID_ERRORS = "gpu_xid_errors"
    GPU_THERMAL_THROTTLING = "gpu_thermal_throttling"
    TRAINING_DATA_BOUND = "training_data_bound"
    TRAINING_GPU_UNDERUTILIZED = "training_gpu_underutilized"
    TRAINING_SLOW_CHECKPOINT = "training_slow_checkpoint"
    TRAINING_THROUGHPUT_REGRESSION = "training_throughput_regression"
    TRAINING_JOB_FAILURES = "training_job_failures"
    TRAINING_STRAGGLER = "training_straggler"
    #: A job's goodput (kept steps' work over the GPU-time it held) under its target, with
    #: its largest badput named (lambdas/training_analyzer/goodput).
    TRAINING_LOW_GOODPUT = "training_low_goodput"
    #: A failed job's cause, named from its pods' and nodes' logs, with the lines cited.
    TRAINING_FAILURE_CAUSE = "training_failure_cause"
    #: A job (or pod) held GPUs that did no work: priced GPU-hours, by namespace and job.
    GPU_HELD_NOT_WORKING = "gpu_held_not_working"
    #: A job's GPU memory P95 near its GPUs' capacity: out-of-memory risk.
    TRAINING_GPU_MEMORY_NEAR_CAPACITY = "training_gpu_memory_near_capacity"
    #: A job's GPU memory peak, with headroom, fits a MIG profile of its GPU: priced.
    TRAINING_GPU_MEMORY_OVERSIZED = "training_gpu_memory_oversized"
    #: A serving deployment whose replicas' GPUs, KV cache and queue sat idle over a day:
    #: replicas that could go (or a smaller GPU), priced.
    SERVING_OVERPROVISIONED = "serving_overprovisioned"
    #: A serving deployment whose requests waited or were preempted over a day: what to add.
    SERVING_SATURATED = "serving_saturated"
    #: A serving deployment saturated in some hours of a day and over-provisioned in others
    #: (or one replica idle while the others queued): autoscale it, priced both ways.
    SERVING_AUTOSCALING = "serving_autoscaling"
    #: A served model's traffic moved from its own past (prompt or generation lengths, finish
    #: reasons, the quality proxy): what moved, by how much, since when, what it may mean.
    SERVING_DRIFT = "serving_drift"
    #: A resource the analyzer could not analyze; the run went on without it.
    ANALYSIS_ERROR = "analysis_error"


@dataclass(frozen=True, kw_only=True)
class Finding:
    kind: Kind
    resource: str
    severity: Severity
    summary: str
    evidence: dict[str, Any]
    recommendation: str
    estimated_monthly_waste_usd: float | None = None
    cluster: str = ""
    analyzer: str = ""
    detected_at: str = ""
    related: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        document = asdict(self)
        document["kind"] = str(self.kind)
        document["severity"] = str(self.severity)
        document["related"] = list(self.related)
        if self.estimated_monthly_waste_usd is not None:
            document["estimated_monthly_waste_usd"] = round(self.estimated_monthly_waste_usd, 2)
        return document

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> "Finding":
        """The finding ``to_dict`` wrote (a shard's part, read back to be merged)."""
        return cls(
            **{
                **document,
                "kind": Kind(document["kind"]),
                "severity": Severity(document["severity"]),
                "related": tuple(document.get("related", ())),
            }
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))


def analysis_error(resource: str, error: BaseException | str, *, analyzer: str) -> Finding:
    """What a run says about a resource it had to skip."""
    return Finding(
        kind=Kind.ANALYSIS_ERROR,
        resource=resource,
        severity=Severity.WARNING,
        summary=f"{resource} could not be analyzed: {error}",
        evidence={"error": str(error)},
        recommendation="Check the analyzer's permissions and the resource, then rerun.",
        analyzer=analyzer,
    )


@dataclass
class AnalysisRun:
    """What one analyzer run found, and what it had to skip (each skip is also a finding)."""

    analyzer: str
    findings: list[Finding] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def skip(self, resource: str, error: BaseException) -> None:
        logging.getLogger(__name__).warning("skipping %s: %s", resource, error)
        self.skipped.append(resource)
        self.findings.append(analysis_error(resource, error, analyzer=self.analyzer))


def stamped(findings: Iterable[Finding], cluster: str, end: float) -> list[Finding]:
    """The run's findings as a reader gets them, wherever the run is (a function or the command
    line): named by their cluster and dated by the end of the window analyzed."""
    at = datetime.fromtimestamp(end, UTC).isoformat()
    return [replace(f, cluster=cluster, detected_at=at) for f in findings]
