"""The PromQL client held to CloudWatch's documented API ("QueryMetrics",
CloudWatch-PromQL-API-QueryMetrics.html) and its request signed as botocore signs: each test
sends through an injected opener that records the request and answers as the API does."""

import itertools
import json
import urllib.parse
import urllib.request
from typing import Any

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import NoCredentialsError

from lambdas.shared.promql import (
    MAX_SCAN_S,
    PromQLClient,
    PromQLLimitError,
    PromQLRequestError,
    PromQLTruncatedError,
    endpoint_for,
    pages,
    promql_for,
    quote_label,
    quote_string,
)

CREDENTIALS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "token")


class Recorder:
    def __init__(self, *answers: tuple[int, dict[str, Any]]) -> None:
        self.answers = list(answers)
        self.sent: list[urllib.request.Request] = []

    def __call__(self, request: urllib.request.Request) -> tuple[int, bytes]:
        self.sent.append(request)
        status, body = self.answers.pop(0)
        return status, json.dumps(body).encode()


def _matrix(*labels: dict[str, str], points: int = 2) -> dict[str, Any]:
    return {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {"metric": m, "values": [[1000 + 60 * i, str(i)] for i in range(points)]}
                for m in labels
            ],
        },
    }


def _client(recorder: Recorder) -> PromQLClient:
    return PromQLClient(
        endpoint=endpoint_for("us-east-1"),
        region="us-east-1",
        credentials=CREDENTIALS,
        opener=recorder,
    )


def test_the_request_is_posted_form_encoded_and_signed_as_botocore_signs() -> None:
    recorder = Recorder((200, _matrix({"gpu": "0"})))
    series = _client(recorder).query_range(
        '{__name__="DCGM_FI_DEV_GPU_UTIL"}', 3600, 7200, 3600, lookback_s=3600, limit=10
    )
    assert [(s.labels, s.points) for s in series] == [
        ({"gpu": "0"}, ((1000.0, 0.0), (1060.0, 1.0)))
    ]
    (sent,) = recorder.sent
    assert sent.full_url == "https://monitoring.us-east-1.amazonaws.com/api/v1/query_range"
    assert sent.get_method() == "POST"
    assert isinstance(sent.data, bytes)
    assert urllib.parse.parse_qs(sent.data.decode()) == {
        "query": ['{__name__="DCGM_FI_DEV_GPU_UTIL"}'],
        "start": ["3600.000"],
        "end": ["7200.000"],
        "step": ["3600"],
        "limit": ["10"],
    }
    headers = {k.lower(): v for k, v in sent.header_items()}
    assert headers["content-type"] == "application/x-www-form-urlencoded"
    assert headers["x-amz-security-token"] == "token"
    stamp = headers["x-amz-date"]
    # botocore, given the same request and time, computes the same signature.
    again = AWSRequest(
        method="POST",
        url=sent.full_url,
        data=sent.data,
        headers={"Content-Type": headers["content-type"], "X-Amz-Date": stamp},
    )
    again.context["timestamp"] = stamp
    auth = SigV4Auth(CREDENTIALS, "monitoring", "us-east-1")
    again.headers["X-Amz-Security-Token"] = "token"
    canonical = auth.canonical_request(again)
    signature = auth.signature(auth.string_to_sign(again, canonical), again)
    assert headers["authorization"] == (
        f"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/{stamp[:8]}/us-east-1/monitoring/"
        f"aws4_request, SignedHeaders={auth.signed_headers(auth.headers_to_sign(again))}, "
        f"Signature={signature}"
    )
    assert "host" in auth.signed_headers(auth.headers_to_sign(again)).split(";")


def test_without_credentials_the_request_is_sent_unsigned() -> None:
    recorder = Recorder((200, {"status": "success", "data": {"result": []}}))
    PromQLClient("http://127.0.0.1:9090", "us-east-1", None, recorder).query("up", 5)
    assert "authorization" not in {k.lower() for k, _ in recorder.sent[0].header_items()}


def test_cloudwatchs_api_without_credentials_is_refused_before_a_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Beside a CloudWatch client that found no credentials (the CLI run without any, as every
    reader in OTel mode now is), a query raises what GetMetricData raises then, not a network
    error after an unsigned request."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    recorder = Recorder((200, {"status": "success", "data": {"result": []}}))
    cloudwatch = boto3.Session(region_name="us-east-1").client("cloudwatch")
    client = promql_for(cloudwatch)
    client.opener = recorder
    with pytest.raises(NoCredentialsError):
        client.query("up", 5)
    assert recorder.sent == []


@pytest.mark.parametrize("limit", [0, 501])
def test_a_limit_outside_1_to_500_is_refused_before_it_is_sent(limit: int) -> None:
    """ "Maximum number of unique time series to return, from 1 to 500"."""
    recorder = Recorder()
    with pytest.raises(PromQLLimitError, match=f"limit {limit}: expected 1 to 500"):
        _client(recorder).query("up", 0, limit=limit)
    assert recorder.sent == []


def test_a_response_as_long_as_its_limit_is_refused_as_truncated() -> None:
    """ "A single /api/v1/query or /api/v1/query_range response can return up to 500 unique
    time series", with no page token: a full one may have dropped series."""
    full = _matrix(*({"pod": f"p{i}"} for i in range(3)))
    with pytest.raises(PromQLTruncatedError, match="3 series, the limit of 3 a response"):
        _client(Recorder((200, full))).query_range("q", 0, 60, 60, limit=3)
    # Prometheus's "warnings" beside "data" are said with it.
    warned = {**full, "warnings": ["results truncated"]}
    with pytest.raises(PromQLTruncatedError, match=r"at most 500.*\(results truncated\)"):
        _client(Recorder((200, warned))).query_range("q", 0, 60, 60, limit=3)
    assert len(_client(Recorder((200, full))).query_range("q", 0, 60, 60, limit=4)) == 3


def test_a_request_over_the_api_s_limits_is_refused_before_it_is_sent() -> None:
    """promql_limits (read 2026-12-01): range selectors reach back at most 24 hours, one
    request covers at most 30 days (from 7 on 2026-11-20), 11,000 points a series."""
    client = _client(Recorder())
    with pytest.raises(PromQLLimitError, match=r"range selector of 25 h: .* at most 24 h"):
        client.query_range("q", 0, 3600, 3600, lookback_s=25 * 3600)
    with pytest.raises(PromQLLimitError, match=r"a range of 31 days: .* at most 30 days"):
        client.query_range("q", 0, 31 * 86_400, 86_400)
    with pytest.raises(PromQLLimitError, match="11,001 points per series over 11,000"):
        client.query_range("q", 0, 11_000, 1)
    assert client.requests == 0


def test_an_error_answer_is_named_with_its_status_and_type() -> None:
    """Prometheus's error shape: ``{"status": "error", "errorType": ..., "error": ...}``."""
    answer = {"status": "error", "errorType": "bad_data", "error": "parse error at char 3"}
    with pytest.raises(PromQLRequestError) as err:
        _client(Recorder((400, answer))).query("{{", 0)
    assert str(err.value) == "HTTP 400 bad_data: parse error at char 3"
    assert err.value.status == 400


def test_a_week_is_read_in_pages_that_each_scan_at_most_24_hours() -> None:
    start, end, step, lookback = 3600.0, 7 * 86_400.0, 3600.0, 3600.0
    got = list(pages(start, end, step, lookback))
    assert got[0][0] == start
    assert got[-1][1] == end
    for (_, last), (following, _) in itertools.pairwise(got):
        assert following == last + step
    assert all(last - first + lookback <= MAX_SCAN_S for first, last in got)
    assert len(got) == 7
    # Paged reads merge each series' points in time order.
    recorder = Recorder(*((200, _matrix({"gpu": "0"}, points=1)) for _ in got))
    (series,) = _client(recorder).query_range_paged("q", start, end, step, lookback_s=lookback)
    assert len(recorder.sent) == 7
    assert series.labels == {"gpu": "0"}


@pytest.mark.parametrize(
    ("name", "written"),
    [
        ("gpu", "gpu"),
        ("_x1", "_x1"),
        ("@resource.k8s.pod.name", '"@resource.k8s.pod.name"'),
        ("k8s.node.name", '"k8s.node.name"'),
    ],
)
def test_label_names_with_dots_are_quoted_as_promql_3_writes_them(name: str, written: str) -> None:
    assert quote_label(name) == written


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("llama-7b", '"llama-7b"'),
        ('say "hi"', r'"say \"hi\""'),
        ("C:\\runs", r'"C:\\runs"'),
        ("two\nlines", r'"two\nlines"'),
        ("bell\x07tab\tdel\x7f", r'"bell\x07tab\x09del\x7f"'),
        ("émoji😀", '"émoji😀"'),
        ("rep\ufffdchar", r'"rep\ufffdchar"'),
    ],
    ids=["plain", "quotes", "backslash", "newline", "control", "utf-8", "replacement-char"],
)
def test_a_label_value_is_one_promql_string_whatever_it_holds(value: str, written: str) -> None:
    """A raw newline ends a PromQL string ("unterminated quoted string"), and a surrogate half's
    ``\\u`` escape is refused: tests/functional/lambdas/shared/test_promql.py holds these on a
    real engine."""
    assert quote_string(value) == written


def test_the_promql_client_beside_a_cloudwatch_client_shares_its_endpoint_and_signer() -> None:
    """The training analyzer's OTel reads go where its GetMetricData goes (``AWS_ENDPOINT_URL``
    included), signed with the same credentials."""
    session = boto3.Session(
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="s", region_name="eu-west-1"
    )
    promql = promql_for(session.client("cloudwatch"))
    assert promql.endpoint == "https://monitoring.eu-west-1.amazonaws.com"
    assert promql.region == "eu-west-1"
    assert promql.credentials.access_key == "AKIDEXAMPLE"
    local = session.client("cloudwatch", endpoint_url="http://localhost:5000")
    assert promql_for(local).endpoint == "http://localhost:5000"
