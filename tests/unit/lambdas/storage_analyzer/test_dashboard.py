"""The storage dashboard's EBS widgets rewritten for the cluster's volumes: only those widgets
and the heading change, and a dashboard that cannot be read is logged, never raised."""

import json
import logging
from typing import Any

import boto3
import pytest
from moto import mock_aws

from dashboards.bodies import storage
from lambdas.storage_analyzer.dashboard import (
    EBS_WIDGETS,
    MAX_VOLUMES,
    draw_volumes,
    volume_rows,
    with_volumes,
)


def test_only_the_ebs_widgets_and_the_heading_are_rewritten() -> None:
    before = storage("train", ["data"], "us-east-1")
    after = with_volumes(before, "train", ["vol-b", "vol-a"])
    changed = [
        i for i, (old, new) in enumerate(zip(before["widgets"], after["widgets"], strict=True))
        if old != new
    ]  # fmt: skip
    assert len(changed) == 1 + len(EBS_WIDGETS)  # the heading and the five EBS widgets
    reads = after["widgets"][changed[1]]["properties"]["metrics"]
    assert [row[3] for row in reads[:-1]] == ["vol-a", "vol-b"]  # by ID
    assert after["widgets"][changed[0]]["properties"]["markdown"].startswith(
        "# Storage of train\nThe EBS widgets rank the cluster's 2 volumes"
    )


def test_no_volume_is_no_row_and_the_cap_keeps_the_first_by_id() -> None:
    assert volume_rows("VolumeReadOps", "Sum", "SUM", []) == []
    many = [f"vol-{i:04d}" for i in range(MAX_VOLUMES + 20)]
    rows = volume_rows("VolumeReadOps", "Sum", "SUM", list(reversed(many)))
    assert len(rows) == MAX_VOLUMES + 1
    assert rows[0][3] == "vol-0000"
    assert rows[-2][3] == many[MAX_VOLUMES - 1]


def test_a_dashboard_that_is_not_there_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Whatever another test left the "lambdas" logger at (analyze quiets it to ERROR).
    caplog.set_level(logging.WARNING, logger="lambdas.storage_analyzer.dashboard")
    with mock_aws():
        cloudwatch: Any = boto3.client(
            "cloudwatch", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        assert draw_volumes(cloudwatch, "gpu-insights-train-storage", "train", ["vol-a"]) is False
        assert "gpu-insights-train-storage not updated" in caplog.text
        body = storage("train", [], "us-east-1")
        cloudwatch.put_dashboard(DashboardName="d", DashboardBody=json.dumps(body))
        assert draw_volumes(cloudwatch, "d", "train", ["vol-a"]) is True
        drawn = json.loads(cloudwatch.get_dashboard(DashboardName="d")["DashboardBody"])
        assert "vol-a" in json.dumps(drawn)
