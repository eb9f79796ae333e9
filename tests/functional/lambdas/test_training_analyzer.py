"""The training analyzer's real handler against moto, fed by the real emitter."""

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cli.demo_storage import REPORT_BUCKET
from cli.demo_training import JOBS, run_training_analyzer, seed


@pytest.fixture
def clients() -> Iterator[dict[str, Any]]:
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        made: dict[str, Any] = {
            s: session.client(s) for s in ("s3", "cloudwatch", "events", "logs")
        }
        made["s3"].create_bucket(Bucket=REPORT_BUCKET)
        yield made


def test_the_five_simulated_jobs_get_exactly_their_findings(clients: dict[str, Any]) -> None:
    documents = seed(clients)
    assert documents > 0
    summary, findings = run_training_analyzer(clients)
    assert summary["jobs"] == len(JOBS)
    assert summary["skipped"] == []
    assert summary["gpu_hours"] == 4 * (8 + 8 + 8 + 8 + 6)  # four ranks; the flaky job ran 6 h
    found = sorted((f["resource"], f["kind"]) for f in findings)
    assert found == [
        ("job/bert-data-bound", "training_data_bound"),
        ("job/gpt-regressing", "training_throughput_regression"),
        ("job/llama-slow-checkpoint", "training_slow_checkpoint"),
        ("job/vit-flaky", "training_job_failures"),
    ]
    by_kind = {f["kind"]: f for f in findings}
    bound = by_kind["training_data_bound"]["evidence"]
    assert bound["data_wait_share"] == pytest.approx(0.4, abs=0.01)
    assert by_kind["training_job_failures"]["evidence"]["failures"] == 2.0
    drop = by_kind["training_throughput_regression"]["evidence"]["drop"]
    assert drop == pytest.approx(1 - 2.0 / 3.0, abs=0.02)  # steps went from 2 s to 3 s
    assert by_kind["training_slow_checkpoint"]["evidence"]["mean_checkpoint_save_seconds"] == 420.0
