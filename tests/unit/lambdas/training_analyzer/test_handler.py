"""The training analyzer's link to the day's storage findings, against a real S3 client.

S3 answers a missing key with 404 only to a caller allowed s3:ListBucket for it, with 403 to
any other (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html, Permissions):
a day without storage analysis links nothing, a refusal is raised rather than read as "none".
"""

import io
import json
from datetime import date
from typing import Any

import boto3
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber

from lambdas.shared.aws_clients import client
from lambdas.training_analyzer.handler import StorageFindingsError, related_storage

DAY = date(2026, 11, 30)
KEY = "findings/cluster=train/date=2026-11-30/storage.jsonl"


def _s3() -> Any:
    session = boto3.Session(
        region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )
    return client("s3", session=session)


def test_storage_findings_about_the_jobs_sources_are_linked() -> None:
    s3 = _s3()
    lines = [
        {"kind": "s3_high_latency", "resource": "arn:aws:s3:::train-data"},
        {"kind": "ebs_idle_volume", "resource": "vol-0a"},  # not a cause of waiting on data
        {"kind": "s3_high_error_rate", "resource": "arn:aws:s3:::other"},  # not a source
    ]
    body = "\n".join(json.dumps(line) for line in lines).encode()
    with Stubber(s3) as stubber:
        stubber.add_response(
            "get_object",
            {"Body": StreamingBody(io.BytesIO(body), len(body))},
            {"Bucket": "report", "Key": KEY},
        )
        linked = related_storage(s3, "report", "train", DAY, ["train-data"])
    assert linked == ("s3_high_latency arn:aws:s3:::train-data",)


def test_sources_match_buckets_and_volumes_exactly_not_by_suffix() -> None:
    s3 = _s3()
    lines: list[object] = [
        {"kind": "s3_high_latency", "resource": "arn:aws:s3:::other-team-data"},
        {"kind": "s3_high_latency", "resource": "arn:aws:s3:::data"},
        {"kind": "ebs_throughput_saturated", "resource": "vol-0abc"},
        {"kind": "ebs_throughput_saturated", "resource": "vol-0abcd"},
        ["not", "a", "finding"],
    ]
    body = "\n".join(json.dumps(line) for line in lines).encode()
    with Stubber(s3) as stubber:
        stubber.add_response(
            "get_object",
            {"Body": StreamingBody(io.BytesIO(body), len(body))},
            {"Bucket": "report", "Key": KEY},
        )
        linked = related_storage(s3, "report", "train", DAY, ["data", "vol-0abc"])
    assert linked == ("ebs_throughput_saturated vol-0abc", "s3_high_latency arn:aws:s3:::data")


def test_a_day_without_storage_analysis_links_nothing() -> None:
    s3 = _s3()
    with Stubber(s3) as stubber:
        stubber.add_client_error("get_object", service_error_code="NoSuchKey", http_status_code=404)
        assert related_storage(s3, "report", "train", DAY, ["train-data"]) == ()


def test_a_refused_read_is_raised_with_the_key_not_read_as_none() -> None:
    s3 = _s3()
    with Stubber(s3) as stubber:
        stubber.add_client_error(
            "get_object", service_error_code="AccessDenied", http_status_code=403
        )
        with pytest.raises(StorageFindingsError, match=r"storage\.jsonl.*s3:ListBucket"):
            related_storage(s3, "report", "train", DAY, ["train-data"])
