"""What moto lacks, supplied on the real botocore client, never by a wrapper around it.

Each helper registers a botocore event hook for one operation on one client, so the call is
still checked against the service model (botocore validates the parameters before
``before-call``) and the answer is checked against the operation's output shape, as
botocore's ``Stubber`` checks its responses. Every other operation of the client reaches moto.

- ``answer``: the operation never reaches moto (moto does not implement it, or misreads it);
  the hook answers from the caller's own data. moto's IAM check does not see these calls.
- ``fill``: moto answers (and, with IAM enforcement on, authorizes) the call; the hook puts
  in the data moto cannot compute (Logs Insights ``stats``).
- ``percentiles_as_maximum``: moto computes no percentile statistics; the request, once
  validated as sent, asks moto for the maximum instead.
"""

from collections.abc import Callable
from typing import Any

from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.client import BaseClient
from botocore.validate import validate_parameters

from lambdas.shared.metric_fetcher import add_series, sum_terms

Params = dict[str, Any]
_PARAMS = "service_answers.params"


def _names(client: BaseClient, operation: str) -> tuple[str, Any]:
    model = client.meta.service_model.operation_model(operation)
    return f"{client.meta.service_model.service_id.hyphenize()}.{operation}", model


def _keep_params(client: BaseClient, event: str) -> None:
    def keep(params: Params, context: dict[str, Any], **_: Any) -> None:
        context[_PARAMS] = dict(params)

    client.meta.events.register(f"before-parameter-build.{event}", keep)


def answer(client: BaseClient, operation: str, respond: Callable[[Params], Params]) -> None:
    """``operation`` on this client is answered by ``respond(params)`` instead of moto."""
    event, model = _names(client, operation)
    _keep_params(client, event)

    def reply(context: dict[str, Any], **_: Any) -> tuple[AWSResponse, Params]:
        response = respond(context[_PARAMS])
        if "Error" in response:  # botocore raises it as a ClientError
            status = response["ResponseMetadata"]["HTTPStatusCode"]
            return AWSResponse("", status, HTTPHeaders(), None), response
        validate_parameters(response, model.output_shape)
        return AWSResponse("", 200, HTTPHeaders(), None), response

    # botocore's stubs type hooks as returning None; before-call hooks may return a response.
    client.meta.events.register(f"before-call.{event}", reply)  # type: ignore[arg-type]


def error(code: str, message: str, status: int) -> Params:
    """An error answer, as botocore parses the service's error responses."""
    return {
        "Error": {"Code": code, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }


def fill(client: BaseClient, operation: str, complete: Callable[[Params, Params], None]) -> None:
    """After moto answers ``operation``, ``complete(params, parsed)`` adds what moto left out,
    in place; the result must still satisfy the output shape."""
    event, model = _names(client, operation)
    _keep_params(client, event)

    def amend(parsed: Params, context: dict[str, Any], **_: Any) -> None:
        if "Error" in parsed:
            return
        complete(context[_PARAMS], parsed)
        validate_parameters(
            {k: v for k, v in parsed.items() if k != "ResponseMetadata"}, model.output_shape
        )

    client.meta.events.register(f"after-call.{event}", amend)


def percentiles_as_maximum(cloudwatch: BaseClient) -> None:
    """GetMetricData's percentile statistics (p99, ...) are asked of moto as ``Maximum``, which
    equals the percentile where the hourly values are constant (as the demo seeds them)."""
    event, model = _names(cloudwatch, "GetMetricData")

    def rewrite(params: Params, **_: Any) -> None:
        validate_parameters(params, model.input_shape)  # as the handler sent them
        for query in params.get("MetricDataQueries", []):
            stat = query.get("MetricStat", {})
            if str(stat.get("Stat", "")).startswith("p"):
                stat["Stat"] = "Maximum"

    cloudwatch.meta.events.register(f"before-parameter-build.{event}", rewrite)


def metric_math_sums(cloudwatch: BaseClient) -> None:
    """GetMetricData expressions that add series (``a + b``, ``FILL(a, 0) + FILL(b, 0)``),
    which moto returns empty, are computed from their inputs as CloudWatch does: moto answers
    (and authorizes) the inputs, asked for with ``ReturnData`` on; the hook adds them timestamp
    by timestamp (``metric_fetcher.add_series``) into the expression's result and drops the
    inputs the caller did not ask to see.
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html"""
    event, model = _names(cloudwatch, "GetMetricData")
    sums = "service_answers.sums"

    def ask_inputs(params: Params, context: dict[str, Any], **_: Any) -> None:
        validate_parameters(params, model.input_shape)  # as the handler sent them
        queries = params.get("MetricDataQueries", [])
        by_id = {q["Id"]: q for q in queries}
        hidden, wanted = set(), {}
        for query in queries:
            terms = sum_terms(query.get("Expression", ""))
            if terms and all(name in by_id for name, _ in terms):
                wanted[query["Id"]] = terms
                for term, _fill in terms:
                    if by_id[term].get("ReturnData") is False:
                        hidden.add(term)
                        by_id[term]["ReturnData"] = True
        context[sums] = (wanted, hidden)

    def add(parsed: Params, context: dict[str, Any], **_: Any) -> None:
        wanted, hidden = context.get(sums, ({}, set()))
        if "Error" in parsed or not wanted:
            return
        results = parsed["MetricDataResults"]
        by_id = {r["Id"]: r for r in results}
        for result in results:
            terms = wanted.get(result["Id"])
            if terms:
                result["Timestamps"], result["Values"] = add_series(
                    [(by_id[t]["Timestamps"], by_id[t]["Values"], fill) for t, fill in terms]
                )
        parsed["MetricDataResults"] = [r for r in results if r["Id"] not in hidden]

    cloudwatch.meta.events.register(f"before-parameter-build.{event}", ask_inputs)
    cloudwatch.meta.events.register(f"after-call.{event}", add)
