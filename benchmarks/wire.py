"""Fakes answered at the HTTP layer, so the benchmark pays what a Lambda pays: botocore
serialises every request and parses every response in the service's real wire format.

A ``before-send`` hook (botocore's last event before the HTTP request leaves) decodes the
request body, asks the fake, and returns an ``AWSResponse`` whose body is encoded as the
service's protocol says: JSON for CloudWatch and CloudWatch Logs, XML for EC2. CloudWatch's
model lists ``["smithy-rpc-v2-cbor", "json", "query"]``; botocore (1.44.8 here) takes the first
of its own ``PRIORITY_ORDERED_SUPPORTED_PROTOCOLS`` (botocore/utils.py: json, rest-json,
rest-xml, smithy-rpc-v2-cbor, query, ec2) that the model lists
(``ServiceModel.resolved_protocol``, botocore/model.py), which is ``json``. Timestamps go
over the wire as epoch seconds, as the JSON protocols send them.

The hook is registered first, so inside moto's ``mock_aws`` (which answers ``before-send``
for every client) these operations still get the fake's answer, and the rest reach moto.
"""

import json
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

import boto3
import botocore.parsers
from botocore.awsrequest import AWSResponse, HTTPHeaders

from lambdas.shared import aws_clients
from lambdas.shared.metric_fetcher import MAX_DATAPOINTS_PER_CALL, MAX_QUERIES_PER_CALL

Respond = Callable[[dict[str, Any]], dict[str, Any]]


class RefusedError(Exception):
    """The service's error answer: HTTP 400 with this ``__type`` and message."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code, self.message = code, message


def metric_data_page(
    params: dict[str, Any], results: Callable[[], list[dict[str, Any]]]
) -> dict[str, Any]:
    """GetMetricData's answer under its limits, as CloudWatch gives it
    (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_GetMetricData.html):
    at most 500 MetricDataQueries a call, refused above that; at most ``MaxDatapoints``
    (default 100,800) datapoints a response, the rest behind ``NextToken`` with the cut
    results' ``StatusCode`` ``PartialData``
    (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricDataResult.html).
    ``results()`` is every result of the call, whole; a page is cut from them."""
    queries = params["MetricDataQueries"]
    if len(queries) > MAX_QUERIES_PER_CALL:
        raise RefusedError(
            "ValidationError",
            f"The collection MetricDataQueries must not have a size greater than "
            f"{MAX_QUERIES_PER_CALL}.",
        )
    limit = int(params.get("MaxDatapoints", MAX_DATAPOINTS_PER_CALL))
    skip = int(params.get("NextToken", 0))
    page, seen, left = [], 0, limit
    for result in results():
        points = len(result["Values"])
        first = max(0, skip - seen)
        seen += points
        if first >= points and points:
            continue
        take = min(points - first, left)
        left -= take
        partial = first + take < points
        page.append(
            {
                **result,
                "Timestamps": result["Timestamps"][first : first + take],
                "Values": result["Values"][first : first + take],
                "StatusCode": "PartialData" if partial else "Complete",
            }
        )
        if partial:
            return {"MetricDataResults": page, "NextToken": str(skip + limit)}
    return {"MetricDataResults": page}


class _Body:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data


def _json_default(value: object) -> float:
    if isinstance(value, datetime):
        return value.timestamp()
    raise TypeError(f"{type(value).__name__} is not JSON")


def client(service: str, *, lambda_session: bool = True) -> Any:
    """The client a handler gets (lambdas/shared/aws_clients.py), or, with ``lambda_session``
    off, a plain boto3 one (botocore's default timestamp parser: today's cost)."""
    kwargs: dict[str, Any] = {
        "aws_access_key_id": "bench",
        "aws_secret_access_key": "bench",
        "region_name": "us-east-1",
    }
    if lambda_session:
        return aws_clients.client(service, session=aws_clients.new_session(**kwargs))
    return boto3.Session(**kwargs).client(service)  # type: ignore[call-overload]


def serve_json(client: Any, answers: dict[str, Respond]) -> None:
    """Operations of a JSON-protocol client, answered from the decoded request."""
    content_type = "application/x-amz-json-1." + (
        "0" if client.meta.service_model.metadata.get("jsonVersion") == "1.0" else "1"
    )

    def send(request: Any, **_: Any) -> AWSResponse | None:
        operation = request.headers["X-Amz-Target"].decode().rsplit(".", 1)[1]
        respond = answers.get(operation)
        if respond is None:
            return None
        status = 200
        try:
            answer = respond(json.loads(request.body))
        except RefusedError as err:
            status, answer = 400, {"__type": err.code, "message": err.message}
        body = json.dumps(answer, default=_json_default).encode()
        headers = HTTPHeaders()
        headers["Content-Type"] = content_type
        headers["x-amzn-RequestId"] = "bench"
        return AWSResponse(request.url, status, headers, _Body(body))

    client.meta.events.register_first("before-send", send)


def serve_xml(client: Any, answers: dict[str, Callable[[dict[str, str]], str]]) -> None:
    """Operations of an EC2/query client: form-encoded request, XML response."""

    def send(request: Any, **_: Any) -> AWSResponse | None:
        body = request.body if isinstance(request.body, str) else request.body.decode()
        params = {k: v[0] for k, v in parse_qs(body).items()}
        respond = answers.get(params["Action"])
        if respond is None:
            return None
        headers = HTTPHeaders()
        headers["Content-Type"] = "text/xml"
        return AWSResponse(request.url, 200, headers, _Body(respond(params).encode()))

    client.meta.events.register_first("before-send", send)


class ParseClock:
    """CPU seconds spent in botocore's response parsers while active."""

    def __init__(self) -> None:
        self.cpu_s = 0.0
        self._original = botocore.parsers.ResponseParser.parse

    def __enter__(self) -> "ParseClock":
        original, clock = self._original, self

        def timed(parser: Any, response: Any, shape: Any) -> Any:
            started = time.process_time()
            try:
                return original(parser, response, shape)
            finally:
                clock.cpu_s += time.process_time() - started

        botocore.parsers.ResponseParser.parse = timed  # type: ignore[method-assign,assignment]
        return self

    def __exit__(self, *_: object) -> None:
        botocore.parsers.ResponseParser.parse = self._original  # type: ignore[method-assign]
