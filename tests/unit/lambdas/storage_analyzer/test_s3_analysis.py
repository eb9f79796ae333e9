import pytest

from lambdas.shared.findings import Kind, Severity
from lambdas.storage_analyzer.s3_analysis import (
    BucketMetrics,
    analyze_bucket,
    request_metrics_disabled,
)


def metrics(p99: list[float], requests: float = 100_000, errors: float = 0) -> BucketMetrics:
    hours = len(p99)
    return BucketMetrics(
        bucket="train-data",
        filter_id="EntireBucket",
        first_byte_p99_ms=p99,
        requests=[requests / hours] * hours,
        errors_5xx=[errors / hours] * hours,
        errors_4xx=[0.0] * hours,
    )


def test_latency_edge_is_a_quarter_of_hours_over_200_ms() -> None:
    quarter = [250.0] * 25 + [50.0] * 75
    (finding,) = analyze_bucket(metrics(quarter))
    assert finding.kind is Kind.S3_HIGH_LATENCY
    assert finding.evidence["slow_hours"] == 25
    assert analyze_bucket(metrics([250.0] * 24 + [50.0] * 76)) == []
    assert analyze_bucket(metrics([200.0] * 100)) == []  # at the threshold is not above it


def test_error_rate_edge_and_the_advice_it_implies() -> None:
    (finding,) = analyze_bucket(metrics([10.0] * 24, requests=100_000, errors=1001))
    assert finding.kind is Kind.S3_HIGH_ERROR_RATE
    assert finding.severity is Severity.WARNING
    assert "3,500 writes and 5,500 reads" in finding.recommendation
    assert analyze_bucket(metrics([10.0] * 24, requests=100_000, errors=1000)) == []
    (worse,) = analyze_bucket(metrics([10.0] * 24, requests=100_000, errors=20_000))
    assert worse.severity is Severity.CRITICAL


def test_too_few_requests_say_nothing_and_no_data_is_no_finding() -> None:
    assert analyze_bucket(metrics([10.0] * 24, requests=999, errors=500)) == []
    assert analyze_bucket(BucketMetrics(bucket="b", filter_id="f")) == []


def test_disabled_request_metrics_names_the_bucket() -> None:
    finding = request_metrics_disabled("train-data")
    assert finding.resource == "arn:aws:s3:::train-data"
    assert finding.kind is Kind.S3_REQUEST_METRICS_DISABLED


@pytest.mark.parametrize("filter_id", ["EntireBucket", "datasets"])
def test_filter_is_named_in_the_summary(filter_id: str) -> None:
    m = metrics([300.0] * 10)
    m.filter_id = filter_id
    (finding,) = analyze_bucket(m)
    assert ("(datasets)" in finding.summary) is (filter_id == "datasets")
