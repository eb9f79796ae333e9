"""S3 findings from a bucket's request metrics: pure, no AWS.

Request metrics exist only where a metrics configuration asks for them (per bucket, optionally
per prefix through a filter); hourly values: latency p99 in milliseconds, counts as sums.
"""

from dataclasses import dataclass, field

from gpu_insights_agent.contract.metrics import WHOLE_BUCKET_FILTER_IDS
from lambdas.shared.findings import Finding, Kind, Severity
from lambdas.storage_analyzer.ebs_analysis import ANALYZER, percentile


@dataclass
class BucketMetrics:
    bucket: str
    filter_id: str
    first_byte_p99_ms: list[float] = field(default_factory=list)
    total_latency_p99_ms: list[float] = field(default_factory=list)
    requests: list[float] = field(default_factory=list)
    errors_4xx: list[float] = field(default_factory=list)
    errors_5xx: list[float] = field(default_factory=list)
    bytes_downloaded: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class S3Thresholds:
    #: First-byte latency p99 above this, in this share of hours, is a slow data path.
    first_byte_p99_ms: float = 200.0
    slow_hours_share: float = 0.25
    #: 5xx errors (503 SlowDown, mostly) above this share of requests.
    error_rate: float = 0.01
    #: Fewer requests than this over the lookback say nothing about a rate.
    min_requests: float = 1000.0


def request_metrics_disabled(bucket: str) -> Finding:
    return Finding(
        kind=Kind.S3_REQUEST_METRICS_DISABLED,
        resource=f"arn:aws:s3:::{bucket}",
        severity=Severity.INFO,
        summary=f"{bucket} has no request metrics: nobody can see its latency or its throttling.",
        evidence={"bucket": bucket, "metrics_configurations": 0},
        recommendation=(
            "Turn on request metrics for the bucket (or the training-data prefix): set "
            "s3_enable_request_metrics=true in this app's settings, or add a metrics "
            "configuration in the S3 console. They cost as custom metrics."
        ),
        analyzer=ANALYZER,
    )


def analyze_bucket(m: BucketMetrics, t: S3Thresholds = S3Thresholds()) -> list[Finding]:
    findings: list[Finding] = []
    resource = f"arn:aws:s3:::{m.bucket}"
    scope = m.bucket if m.filter_id in WHOLE_BUCKET_FILTER_IDS else f"{m.bucket} ({m.filter_id})"
    if m.first_byte_p99_ms:
        slow = [v for v in m.first_byte_p99_ms if v > t.first_byte_p99_ms]
        share = len(slow) / len(m.first_byte_p99_ms)
        if share >= t.slow_hours_share:
            median = percentile(m.first_byte_p99_ms, 0.5)
            findings.append(
                Finding(
                    kind=Kind.S3_HIGH_LATENCY,
                    resource=resource,
                    severity=Severity.WARNING,
                    summary=(
                        f"{scope}: first-byte p99 above {t.first_byte_p99_ms:g} ms in "
                        f"{share:.0%} of hours (median hourly p99 {median:.0f} ms)."
                    ),
                    evidence={
                        "filter_id": m.filter_id,
                        "median_hourly_p99_first_byte_ms": round(median, 1),
                        "max_hourly_p99_first_byte_ms": round(max(m.first_byte_p99_ms), 1),
                        "slow_hours": len(slow),
                        "hours": len(m.first_byte_p99_ms),
                        "threshold_ms": t.first_byte_p99_ms,
                    },
                    recommendation=(
                        "Read in parallel with larger ranged GETs, keep compute in the bucket's "
                        "Region, and cache hot training data (Mountpoint for S3 with a cache, "
                        "FSx for Lustre, or S3 Express One Zone)."
                    ),
                    analyzer=ANALYZER,
                )
            )
    requests = sum(m.requests)
    errors = sum(m.errors_5xx)
    if requests >= t.min_requests and errors / requests > t.error_rate:
        rate = errors / requests
        findings.append(
            Finding(
                kind=Kind.S3_HIGH_ERROR_RATE,
                resource=resource,
                severity=Severity.CRITICAL if rate > 10 * t.error_rate else Severity.WARNING,
                summary=(
                    f"{scope}: {rate:.1%} of {requests:,.0f} requests failed with 5xx "
                    "(mostly 503 SlowDown: the request rate outran a prefix)."
                ),
                evidence={
                    "filter_id": m.filter_id,
                    "requests": requests,
                    "errors_5xx": errors,
                    "errors_4xx": sum(m.errors_4xx),
                    "error_rate": round(rate, 5),
                    "threshold": t.error_rate,
                },
                recommendation=(
                    "S3 scales per prefix (3,500 writes and 5,500 reads a second): spread keys "
                    "over more prefixes, retry with exponential backoff (the SDKs' adaptive "
                    "mode), and cache or shard hot objects."
                ),
                analyzer=ANALYZER,
            )
        )
    return findings
