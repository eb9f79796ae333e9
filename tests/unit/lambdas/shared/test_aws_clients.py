"""The guard: only botocore clients reach a handler, in tests and in the demo alike."""

import logging
from datetime import UTC, datetime

import boto3
import botocore.loaders
import botocore.session
import pytest
from botocore.utils import parse_timestamp

from benchmarks import wire
from lambdas.shared.aws_clients import (
    ClientCache,
    NotABotocoreClientError,
    UnlistedServiceError,
    epoch_timestamp,
    warn_if_slow_protocol,
)


class Wrapper:
    def __init__(self, client: object) -> None:
        self._client = client

    def __getattr__(self, name: str) -> object:
        return getattr(self._client, name)


def test_a_wrapped_client_is_refused_however_it_is_put_in() -> None:
    real = boto3.client("s3", region_name="us-east-1")
    cache = ClientCache()
    with pytest.raises(NotABotocoreClientError, match="the s3 client is a Wrapper"):
        cache["s3"] = Wrapper(real)
    with pytest.raises(NotABotocoreClientError):
        cache.update(s3=Wrapper(real))
    with pytest.raises(NotABotocoreClientError):
        cache.update({"s3": Wrapper(real)})
    with pytest.raises(NotABotocoreClientError):
        cache.setdefault("s3", Wrapper(real))
    assert cache == {}
    cache.update(s3=real)
    assert cache("s3") is real


def test_a_service_outside_the_layer_is_refused_by_name() -> None:
    """The layer holds botocore's models for HANDLER_SERVICES only: a handler that asked for
    another client would pass the tests and fail in Lambda, so the cache refuses it."""
    cache = ClientCache()
    with pytest.raises(UnlistedServiceError, match="no handler may use the iam client"):
        cache("iam")
    with pytest.raises(UnlistedServiceError, match="the kms client"):
        cache["kms"] = boto3.client("kms", region_name="us-east-1")
    assert cache == {}


def test_a_handler_client_parses_epoch_timestamps_to_the_same_utc_datetimes() -> None:
    """CloudWatch's JSON protocol sends GetMetricData timestamps as epoch seconds; the
    handler's client turns them into the datetimes botocore's own parser gives, quickly
    (botocore's hook: ResponseParserFactory.set_parser_defaults, botocore/parsers.py)."""
    assert epoch_timestamp(1764288000) == parse_timestamp(1764288000)  # type: ignore[arg-type]
    assert epoch_timestamp(1764288000.5).utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    assert epoch_timestamp("2025-11-28T00:00:00Z") == datetime(2025, 11, 28, tzinfo=UTC)
    answer = {"MetricDataResults": [{"Id": "q0", "Timestamps": [1764288000], "Values": [2.5]}]}
    for lambda_session in (True, False):
        cloudwatch = wire.client("cloudwatch", lambda_session=lambda_session)
        wire.serve_json(cloudwatch, {"GetMetricData": lambda _: answer})
        (result,) = cloudwatch.get_metric_data(
            MetricDataQueries=[{"Id": "q0", "Expression": "1"}],
            StartTime=datetime(2025, 11, 27, tzinfo=UTC),
            EndTime=datetime(2025, 11, 28, tzinfo=UTC),
        )["MetricDataResults"]
        assert result["Timestamps"] == [datetime(2025, 11, 28, tzinfo=UTC)]
        assert result["Values"] == [2.5]


def test_cloudwatch_speaks_json_here_and_a_query_speaking_botocore_is_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """botocore moved CloudWatch from Query to JSON in 1.42.7 (getmoto/moto PR #9562); the
    analyzers' CPU goals are measured in JSON. A client made from a model that lists only
    query, as an older botocore's does, is warned about at the handler's first use."""
    cloudwatch = boto3.client("cloudwatch", region_name="us-east-1")
    assert warn_if_slow_protocol(cloudwatch) == "json"
    assert not caplog.records
    loader = botocore.loaders.Loader()
    model = loader.load_service_model("cloudwatch", "service-2")
    model["metadata"]["protocols"] = ["query"]
    model["metadata"]["protocol"] = "query"
    session = botocore.session.get_session()
    data_loader = session.get_component("data_loader")
    load = data_loader.load_service_model

    def query_only(service: str, type_name: str, api_version: object = None) -> object:
        return model if type_name == "service-2" else load(service, type_name, api_version)

    data_loader.load_service_model = query_only
    old = session.create_client("cloudwatch", region_name="us-east-1")
    # The module's own logger: `gpu-insights analyze` quiets the lambdas loggers to ERROR.
    with caplog.at_level(logging.WARNING, logger="lambdas.shared.aws_clients"):
        assert warn_if_slow_protocol(old) == "query"
    assert "speaks query to CloudWatch" in caplog.text
