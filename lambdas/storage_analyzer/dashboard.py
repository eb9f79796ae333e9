"""The storage dashboard's EBS widgets, drawn for the cluster's own volumes.

EBS metrics carry one dimension, ``VolumeId`` ("Amazon EBS metrics ... The only dimension that
Amazon EBS sends to CloudWatch is the volume ID", EBS User Guide, "Amazon CloudWatch metrics for
Amazon EBS", https://docs.aws.amazon.com/ebs/latest/userguide/using_cloudwatch_ebs.html), so a
query written at synth time can only rank every volume of the Region. The storage analyzer
finds the cluster's volumes on every run (aws.py), so it writes them into the deployed storage
dashboard: GetDashboard, each EBS widget's rows replaced by one hidden row per volume and one
``SORT(METRICS(), FUNC, DESC, 10)`` that draws the ten busiest of them (SORT and METRICS():
"Metric math syntax and functions", CloudWatch User Guide,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html), then
PutDashboard of the same body. The stack owns the dashboard (it deletes it); the analyzer
owns its EBS rows, until the stack next changes the body and the next run writes them again.

Limits: "One metrics array can include 0-500 metrics and expressions" (Dashboard Body Structure
and Syntax, the metric widget's ``metrics``,
https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/CloudWatch-Dashboard-Body-Structure.html),
and a dashboard draws at most 2,500 metrics across its widgets (CloudWatch service quotas,
"Dashboards", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_limits.html):
with five EBS widgets, at most ``MAX_VOLUMES`` volumes are drawn, and the heading says which.
"""

import json
import logging
from collections.abc import Sequence
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

log = logging.getLogger(__name__)

#: (title, metric, statistic of each volume's row, SORT's function): the storage dashboard's
#: EBS widgets, written here once for the body (dashboards/bodies.py) and for the analyzer.
EBS_WIDGETS: Final = (
    ("EBS read ops per 5 minutes (ten busiest)", "VolumeReadOps", "Sum", "SUM"),
    ("EBS read bytes per 5 minutes (ten busiest)", "VolumeReadBytes", "Sum", "SUM"),
    ("EBS queue length (ten longest)", "VolumeQueueLength", "Average", "AVG"),
    ("EBS throughput limit exceeded (checks)", "VolumeThroughputExceededCheck", "Maximum", "MAX"),
    ("EBS IOPS limit exceeded (checks)", "VolumeIOPSExceededCheck", "Maximum", "MAX"),
)
TOP: Final = 10
#: 2,500 metrics a dashboard over five EBS widgets, less the S3 widgets' rows: 480 each (and
#: 480 rows plus the SORT is within a widget's 500).
MAX_VOLUMES: Final = 480
#: The heading widget's first line, by which the analyzer finds it in the deployed body.
HEADING: Final = "# Storage of "


def heading(cluster: str, volumes: int | None) -> str:
    """The dashboard's heading: which volumes its EBS widgets draw."""
    if volumes is None:
        drawn = (
            "Its EBS widgets draw the cluster's volumes once the storage analyzer has run (it "
            "writes them here daily: EBS metrics name no cluster)."
        )
    elif volumes <= MAX_VOLUMES:
        drawn = f"The EBS widgets rank the cluster's {volumes:,} volumes (as of its last run)."
    else:
        drawn = (
            f"The EBS widgets rank {MAX_VOLUMES:,} of the cluster's {volumes:,} volumes (the "
            "first by volume ID: a dashboard draws at most 2,500 metrics); the storage "
            "findings judge them all."
        )
    return f"{HEADING}{cluster}\n{drawn} Then the S3 buckets the analyzer reads."


def volume_rows(metric: str, stat: str, function: str, volume_ids: Sequence[str]) -> list[Any]:
    """One hidden row per volume (at most ``MAX_VOLUMES``, by ID) and the SORT that draws the
    ``TOP`` of them; no rows for no volumes."""
    chosen = sorted(volume_ids)[:MAX_VOLUMES]
    if not chosen:
        return []
    rows: list[Any] = [
        ["AWS/EBS", metric, "VolumeId", v, {"id": f"v{i}", "stat": stat, "visible": False}]
        for i, v in enumerate(chosen)
    ]
    sort = f"SORT(METRICS(), {function}, DESC, {TOP})"
    return [*rows, [{"expression": sort, "id": "top", "label": ""}]]


def with_volumes(body: dict[str, Any], cluster: str, volume_ids: Sequence[str]) -> dict[str, Any]:
    """The body with its EBS widgets drawing ``volume_ids`` and its heading saying so; the other
    widgets as they were."""
    by_title = {title: (metric, stat, fn) for title, metric, stat, fn in EBS_WIDGETS}
    widgets = []
    for widget in body.get("widgets", []):
        properties = dict(widget.get("properties", {}))
        if widget.get("type") == "metric" and properties.get("title") in by_title:
            properties["metrics"] = volume_rows(*by_title[properties["title"]], volume_ids)
        elif widget.get("type") == "text" and str(properties.get("markdown", "")).startswith(
            HEADING
        ):
            properties["markdown"] = heading(cluster, len(volume_ids))
        widgets.append({**widget, "properties": properties})
    return {**body, "widgets": widgets}


def draw_volumes(cloudwatch: Any, name: str, cluster: str, volume_ids: Sequence[str]) -> bool:
    """Writes the cluster's volumes into the deployed dashboard ``name``; False (logged, never
    raised: the findings are the run's product) where it cannot be read or written."""
    try:
        raw = cloudwatch.get_dashboard(DashboardName=name)["DashboardBody"]
        body = with_volumes(json.loads(raw), cluster, volume_ids)
        cloudwatch.put_dashboard(DashboardName=name, DashboardBody=json.dumps(body))
    except (ClientError, BotoCoreError, ValueError, KeyError) as err:
        log.warning("storage dashboard %s not updated: %s", name, err)
        return False
    return True
