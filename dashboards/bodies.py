"""The four dashboards: GPU fleet, training jobs, storage, findings and alarms.

Bodies use SEARCH expressions scoped to the cluster, and dashboard variables where CloudWatch
has them (a node picker on the GPU fleet, a job picker on training), so they keep up with a
fleet that changes.
"""

import json
from collections.abc import Sequence
from typing import Any, Final

from agent.metric_contract import (
    DIM_CLUSTER,
    DIM_GPU_INDEX,
    DIM_JOB,
    DIM_KIND,
    DIM_NODE,
    DIM_SEVERITY,
    DIM_XID_CODE,
    FINDINGS_COUNT_METRIC,
    FINDINGS_COUNT_STAT,
    NAMESPACE_FINDINGS,
    NAMESPACE_GPU,
    NAMESPACE_TRAINING,
    GpuMetric,
    TrainingMetric,
)
from agent.resource_names import dashboard_name
from dashboards.widgets import alarms, graph, layout, search, text

#: CloudWatch refuses dashboard bodies above this size.
MAX_BODY_BYTES: Final = 1_000_000
FINDINGS_METRIC: Final = FINDINGS_COUNT_METRIC
GPU_SCHEMA: Final = (DIM_CLUSTER, DIM_GPU_INDEX, DIM_NODE)


def _gpu(cluster: str, metric: GpuMetric, stat: str = "Average") -> str:
    return search(NAMESPACE_GPU, GPU_SCHEMA, str(metric), f'{DIM_CLUSTER}="{cluster}"', stat)


def _body(
    rows: Sequence[Sequence[Any]], region: str, variables: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    widgets = layout(rows)
    for widget in widgets:
        if widget["type"] in {"metric", "alarm"}:
            widget["properties"]["region"] = region
    body: dict[str, Any] = {"start": "-PT24H", "periodOverride": "inherit", "widgets": widgets}
    if variables:
        body["variables"] = variables
    return body


def _variable(
    property_name: str,
    label: str,
    namespace: str,
    dimensions: Sequence[str],
    metric: str,
    cluster: str,
) -> dict[str, Any]:
    schema = ",".join((namespace, *dimensions))
    return {
        "type": "property",
        "property": property_name,
        "inputType": "select",
        "id": property_name.lower(),
        "label": label,
        "visible": True,
        "search": f'{{{schema}}} MetricName="{metric}" {DIM_CLUSTER}="{cluster}"',
        "populateFrom": property_name,
    }


def gpu_fleet(cluster: str, region: str) -> dict[str, Any]:
    g = GpuMetric
    return _body(
        [
            [
                text(
                    f"# GPU fleet of {cluster}\nThree questions, top to bottom: is the device "
                    "active, how busy are its SMs, how efficient is the work. Pick a node above."
                )
            ],
            [
                graph(
                    "1. Active? GPU utilization (%)",
                    [(_gpu(cluster, g.UTILIZATION), "")],
                    width=8,
                    y_max=100,
                ),
                graph("1. Active? Power draw (W)", [(_gpu(cluster, g.POWER_DRAW), "")], width=8),
                graph("1. Active? Temperature (C)", [(_gpu(cluster, g.TEMPERATURE), "")], width=8),
            ],
            [
                graph(
                    "2. SMs busy? SM activity (%)", [(_gpu(cluster, g.SM_ACTIVE), "")], y_max=100
                ),
                graph(
                    "2. SMs busy? SM occupancy (%)",
                    [(_gpu(cluster, g.SM_OCCUPANCY), "")],
                    y_max=100,
                ),
            ],
            [
                graph(
                    "3. Efficient? Power against the limit (%)",
                    [(_gpu(cluster, g.POWER_UTILIZATION), "")],
                    y_max=100,
                ),
                graph(
                    "3. Efficient? Tensor activity (%)",
                    [(_gpu(cluster, g.TENSOR_ACTIVE), "")],
                    y_max=100,
                ),
            ],
            [
                graph(
                    "XID errors by code",
                    [
                        (
                            search(
                                NAMESPACE_GPU,
                                (DIM_CLUSTER, DIM_XID_CODE),
                                str(g.XID_ERRORS),
                                f'{DIM_CLUSTER}="{cluster}"',
                                "Sum",
                            ),
                            "",
                        )
                    ],
                    width=8,
                ),
                graph(
                    "Lost GPUs (gpu_healthy = 0)",
                    [(_gpu(cluster, g.HEALTHY, "Minimum"), "")],
                    width=8,
                ),
                graph(
                    "Throttled (share of samples)",
                    [
                        (_gpu(cluster, g.THROTTLED_THERMAL), "thermal"),
                        (_gpu(cluster, g.THROTTLED_POWER), "power brake"),
                    ],
                    width=8,
                ),
            ],
        ],
        region,
        [_variable(DIM_NODE, "Node", NAMESPACE_GPU, GPU_SCHEMA, str(g.POWER_UTILIZATION), cluster)],
    )


def _job(cluster: str, metric: TrainingMetric, stat: str = "Average") -> str:
    return search(
        NAMESPACE_TRAINING, (DIM_CLUSTER, DIM_JOB), str(metric), f'{DIM_CLUSTER}="{cluster}"', stat
    )


def training_jobs(cluster: str, region: str) -> dict[str, Any]:
    t = TrainingMetric
    return _body(
        [
            [
                text(
                    f"# Training jobs of {cluster}\nA data-wait share above 20% of the step time "
                    "is a job waiting on storage. Pick a job above."
                )
            ],
            [
                graph("Throughput (samples/s)", [(_job(cluster, t.SAMPLES_PER_SECOND), "")]),
                graph("Step time (s)", [(_job(cluster, t.STEP_TIME), "")]),
            ],
            [
                graph(
                    "Data-wait share of the step (%)",
                    [(f"100 * {_job(cluster, t.DATA_WAIT)} / {_job(cluster, t.STEP_TIME)}", "")],
                    y_max=100,
                ),
                graph("Checkpoint save (s)", [(_job(cluster, t.CHECKPOINT_SAVE, "Maximum"), "")]),
            ],
            [graph("Failed runs", [(_job(cluster, t.JOB_FAILED, "Sum"), "")], width=24, height=4)],
        ],
        region,
        [
            _variable(
                DIM_JOB, "Job", NAMESPACE_TRAINING, (DIM_CLUSTER, DIM_JOB), str(t.STEPS), cluster
            )
        ],
    )


def storage(cluster: str, buckets: Sequence[str], region: str) -> dict[str, Any]:
    del cluster  # EBS metrics carry no cluster; the widgets show the account's busiest volumes
    ebs = "{AWS/EBS,VolumeId}"

    def top(metric: str) -> str:
        return f"SORT(SEARCH('{ebs} MetricName=\"{metric}\"', 'Sum', 300), SUM, DESC, 10)"

    rows = [
        [
            text(
                "# Storage\nThe ten busiest EBS volumes, then the S3 buckets the analyzer reads. "
                "Compare throughput with what each volume provisions (storage findings)."
            )
        ],
        [
            graph("EBS read IOPS (ten busiest)", [(top("VolumeReadOps") + " / 300", "")]),
            graph(
                "EBS read throughput, bytes/s (ten busiest)",
                [(top("VolumeReadBytes") + " / 300", "")],
            ),
        ],
        [
            graph(
                "EBS queue length",
                [
                    (
                        "SORT(SEARCH('"
                        + ebs
                        + " MetricName=\"VolumeQueueLength\"', 'Average', 300), AVG, DESC, 10)",
                        "",
                    )
                ],
            ),
            graph(
                "EBS limit exceeded (checks)",
                [
                    (
                        "SEARCH('"
                        + ebs
                        + " MetricName=\"VolumeThroughputExceededCheck\"', 'Maximum', 300)",
                        "throughput",
                    ),
                    (
                        "SEARCH('"
                        + ebs
                        + " MetricName=\"VolumeIOPSExceededCheck\"', 'Maximum', 300)",
                        "IOPS",
                    ),
                ],
            ),
        ],
    ]
    if buckets:
        names = " OR ".join(f'BucketName="{b}"' for b in buckets)
        s3 = "{AWS/S3,BucketName,FilterId}"
        rows.append(
            [
                graph(
                    "S3 first-byte latency p99 (ms)",
                    [(f"SEARCH('{s3} MetricName=\"FirstByteLatency\" ({names})', 'p99', 300)", "")],
                    width=8,
                ),
                graph(
                    "S3 5xx errors",
                    [(f"SEARCH('{s3} MetricName=\"5xxErrors\" ({names})', 'Sum', 300)", "")],
                    width=8,
                ),
                graph(
                    "S3 requests",
                    [(f"SEARCH('{s3} MetricName=\"AllRequests\" ({names})', 'Sum', 300)", "")],
                    width=8,
                ),
            ]
        )
    return _body(rows, region)


def findings_and_alarms(cluster: str, alarm_arns: Sequence[str], region: str) -> dict[str, Any]:
    schema = (DIM_CLUSTER, DIM_KIND, DIM_SEVERITY)
    where = f'{DIM_CLUSTER}="{cluster}"'
    return _body(
        [
            [
                text(
                    f"# Findings and alarms of {cluster}\nFindings come from the daily analyzers; "
                    "the full list is in the report bucket and the weekly report."
                )
            ],
            [alarms("GPU alarms", alarm_arns)],
            [
                graph(
                    "Findings by kind (daily)",
                    [
                        (
                            search(
                                NAMESPACE_FINDINGS,
                                schema,
                                FINDINGS_METRIC,
                                where,
                                FINDINGS_COUNT_STAT,
                                86400,
                            ),
                            "",
                        )
                    ],
                ),
                graph(
                    "Critical findings (daily)",
                    [
                        (
                            search(
                                NAMESPACE_FINDINGS,
                                schema,
                                FINDINGS_METRIC,
                                f'{where} {DIM_SEVERITY}="critical"',
                                FINDINGS_COUNT_STAT,
                                86400,
                            ),
                            "",
                        )
                    ],
                ),
            ],
        ],
        region,
    )


def all_dashboards(
    cluster: str, buckets: Sequence[str], alarm_arns: Sequence[str], region: str
) -> dict[str, dict[str, Any]]:
    """Dashboard name -> body, for the CDK app and the demo."""
    return {
        dashboard_name(cluster, "gpu-fleet"): gpu_fleet(cluster, region),
        dashboard_name(cluster, "training"): training_jobs(cluster, region),
        dashboard_name(cluster, "storage"): storage(cluster, buckets, region),
        dashboard_name(cluster, "findings"): findings_and_alarms(cluster, alarm_arns, region),
    }


def encode(body: dict[str, Any]) -> str:
    text_body = json.dumps(body, separators=(",", ":"))
    if len(text_body.encode()) > MAX_BODY_BYTES:
        raise ValueError(f"dashboard body of {len(text_body):,} bytes is over CloudWatch's limit")
    return text_body
