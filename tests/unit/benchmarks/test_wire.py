"""``benchmarks/wire.py``, the wire formats the benchmarks answer in: a GetMetricData page
through a real botocore client (tests/unit/lambdas/shared/test_metric_fetcher.py holds more)."""

from benchmarks import wire


def test_a_client_is_answered_in_cloudwatchs_wire_format() -> None:
    client = wire.client("cloudwatch")
    assert client.meta.service_model.service_name == "cloudwatch"
