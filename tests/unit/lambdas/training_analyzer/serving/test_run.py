"""A serving day that cannot be read is skipped and named, never raised: the training findings
the same run already made must still be published."""

from datetime import date

from lambdas.shared.findings import Kind
from lambdas.shared.promql import PromQLClient
from lambdas.training_analyzer.serving.run import analyze_serving


def test_no_credentials_skips_the_day_and_names_it() -> None:
    # What promql_for builds when boto3 finds no credentials: signed, credentials None.
    promql = PromQLClient(
        endpoint="https://monitoring.us-east-1.amazonaws.com",
        region="us-east-1",
        credentials=None,
        signed=True,
    )
    run = analyze_serving(promql, "c", start=0.0, end=86_400.0, day=date(2026, 11, 30),
                          workloads={}, gpu_hour_usd=6.88)  # fmt: skip
    assert not run.read
    assert run.rows == []
    # The skip is itself a finding, so the daily publish says the serving day is missing.
    assert [(f.kind, f.resource) for f in run.findings] == [(Kind.ANALYSIS_ERROR, "serving of c")]
    assert run.skipped == ["serving of c"]
    assert "Unable to locate credentials" in run.findings[0].summary
