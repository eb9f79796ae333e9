"""What moto lacks, supplied on the real botocore client, never by a wrapper around it.

Each helper registers a botocore event hook for one operation on one client, so the call is
still checked against the service model (botocore validates the parameters before
``before-call``) and the answer is checked against the operation's output shape, as
botocore's ``Stubber`` checks its responses. Every other operation of the client reaches moto.

- ``answer``: the operation never reaches moto (moto does not implement it, or misreads it);
  the hook answers from the caller's own data. moto's IAM check does not see these calls.
- ``fill``: moto answers (and, with IAM enforcement on, authorizes) the call; the hook puts
  in the data moto cannot compute (Logs Insights ``stats``).
- ``logs_insights_stats``: moto answers StartQuery and GetQueryResults; the hooks put in the
  rows of a ``stats`` moto cannot compute, cut and paged as Logs Insights cuts and pages them.
- ``dated_volumes``: moto answers DescribeVolumes; the hook dates the volumes of a world made
  before moto's clock.
- ``percentiles_as_maximum``: moto computes no percentile statistics; the request, once
  validated as sent, asks moto for the maximum instead.
"""

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from botocore.awsrequest import AWSResponse, HTTPHeaders
from botocore.client import BaseClient
from botocore.validate import validate_parameters

from lambdas.shared.metric_fetcher import add_series, sum_terms
from lambdas.training_analyzer.aws import PAGE_MAX_ROWS, QUERY_DEFAULT_ROWS, QUERY_MAX_ROWS

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


def dated_volumes(ec2: BaseClient, dates: Mapping[str, tuple[float, float | None]]) -> None:
    """moto stamps a volume's ``CreateTime``, and an attachment's ``AttachTime``, with its own
    clock as it makes them, and no call makes a volume in the past: for a world whose volumes
    were made before its "now" (the demo's week, a test's fixed day), after moto answers
    DescribeVolumes each volume in ``dates`` gets its (created, attached) epoch seconds."""

    def complete(params: Params, parsed: Params) -> None:
        for volume in parsed.get("Volumes", []):
            created, attached = dates.get(volume["VolumeId"], (None, None))
            if created is not None:
                volume["CreateTime"] = datetime.fromtimestamp(created, UTC)
            for attachment in volume.get("Attachments", []):
                if attached is not None:
                    attachment["AttachTime"] = datetime.fromtimestamp(attached, UTC)

    fill(ec2, "DescribeVolumes", complete)


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


def _periods(first: Any, last: Any, period_s: int) -> list[datetime]:
    """The start of each period of a GetMetricData range, as the results stamp them."""
    start, end = (t.timestamp() if isinstance(t, datetime) else float(t) for t in (first, last))
    return [datetime.fromtimestamp(t, UTC) for t in range(int(start), int(end), period_s)]


def metric_math_sums(cloudwatch: BaseClient) -> None:
    """GetMetricData expressions that add series (``a + b``, ``FILL(a, 0) + FILL(b, 0)``),
    which moto returns empty, are computed from their inputs as CloudWatch does: moto answers
    (and authorizes) the inputs, asked for with ``ReturnData`` on; the hook adds them timestamp
    by timestamp (``metric_fetcher.add_series``) into the expression's result and drops the
    inputs the caller did not ask to see. FILL "fills the missing values of a time series":
    every period of the requested range, so a sum of FILLed inputs has a point in each, the
    periods before a resource existed too (how ``FILL(m, 0)`` draws a sparse metric as a line
    of zeros).
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/using-metric-math.html"""
    event, model = _names(cloudwatch, "GetMetricData")
    sums = "service_answers.sums"
    ranges = "service_answers.ranges"

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
        first, last = params["StartTime"], params["EndTime"]
        context[ranges] = {
            query["Id"]: _periods(first, last, int(query["Period"]))
            for query in queries
            if query["Id"] in wanted
        }

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
                    [(by_id[t]["Timestamps"], by_id[t]["Values"], fill) for t, fill in terms],
                    context[ranges][result["Id"]],
                )
        parsed["MetricDataResults"] = [r for r in results if r["Id"] not in hidden]

    cloudwatch.meta.events.register(f"before-parameter-build.{event}", ask_inputs)
    cloudwatch.meta.events.register(f"after-call.{event}", add)


class LogsInsightsLimitError(ValueError):
    """A query Logs Insights would refuse (a ``limit`` above its maximum)."""


Row = list[dict[str, str]]
_LIMIT = re.compile(r"\|\s*limit\s+(\d+)\s*(?:\||$)", re.IGNORECASE)
#: ``FIELD >= "v"`` and ``FIELD < "v"`` inside a ``filter`` (the rank query's job-name range).
_BOUND = re.compile(r'\b(\w+)\s*(>=|<)\s*"([^"]*)"')


def insights_limit(query: str, limit: int | None = None) -> int:
    """The rows a Logs Insights query returns at most: its ``limit`` command, else StartQuery's
    ``limit``, else the default; "If you omit limit, the query defaults to returning up to
    10,000 log events. You can specify a limit value of up to 100,000." (query syntax,
    ``limit``: https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/CWL_QuerySyntax-Limit.html)."""
    found = _LIMIT.findall(query)
    rows = int(found[-1]) if found else limit or QUERY_DEFAULT_ROWS
    if rows > QUERY_MAX_ROWS:
        raise LogsInsightsLimitError(f"limit {rows} above Logs Insights' {QUERY_MAX_ROWS:,}")
    return rows


def insights_bounds(query: str, rows: list[Row]) -> list[Row]:
    """The rows whose fields meet the query's ``FIELD >= "v"`` and ``FIELD < "v"`` filters, by
    string comparison. Filtering the result rows stands in for filtering the events only for a
    field the query's ``stats`` groups ``by``, which is how the rank query uses them."""
    bounds = _BOUND.findall(query)

    def keep(row: Row) -> bool:
        fields = {cell["field"]: cell["value"] for cell in row}
        return all(
            name in fields and (fields[name] >= v if op == ">=" else fields[name] < v)
            for name, op, v in bounds
        )

    return [row for row in rows if keep(row)] if bounds else rows


def insights_page(rows: list[Row], params: Params) -> Params:
    """One GetQueryResults answer of a completed query's ``rows`` (already cut at its limit):
    "You can retrieve up to 100,000 log event results from a query, if available, by using
    pagination. Use the nextToken returned in the response to request additional pages of
    results, with each page returning up to 10,000 log events." (GetQueryResults,
    https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_GetQueryResults.html)."""
    first = int(params.get("nextToken") or 0)
    size = min(int(params.get("maxItems") or PAGE_MAX_ROWS), PAGE_MAX_ROWS)
    answer: Params = {"status": "Complete", "results": rows[first : first + size]}
    if first + size < len(rows):
        answer["nextToken"] = str(first + size)
    return answer


def logs_insights_stats(logs: BaseClient, rows_of: Callable[[Params], list[Row]]) -> None:
    """moto's Logs Insights runs no ``stats``: after moto answers StartQuery and
    GetQueryResults (and, with IAM enforced, authorizes them), the results are the rows
    ``rows_of(start_query_params)`` computes, filtered by the query's field bounds, cut at its
    limit and served a page at a time, as Logs Insights serves them."""
    started: dict[str, list[Row]] = {}

    def keep(params: Params, parsed: Params) -> None:
        query = params["queryString"]
        limit = insights_limit(query, params.get("limit"))
        started[parsed["queryId"]] = insights_bounds(query, rows_of(params))[:limit]

    def complete(params: Params, parsed: Params) -> None:
        parsed.pop("nextToken", None)
        parsed.update(insights_page(started[params["queryId"]], params))

    fill(logs, "StartQuery", keep)
    fill(logs, "GetQueryResults", complete)
