"""The limits of CloudWatch's Prometheus-compatible query API, the one table every PromQL reader
follows (lambdas/shared/promql.py enforces them; the analyzers, `gpu-insights status`, the
backtest and `cost-estimate` read them from here). Read 2026-12-01; AWS changed them on
2026-11-20. Where a figure is not AWS's own, its line says whose it is.

- Series a response may hold: "Maximum number of unique time series to return, from 1 to 500";
  "A single /api/v1/query or /api/v1/query_range response can return up to 500 unique time
  series" ("QueryMetrics", "Result limit",
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-PromQL-API-QueryMetrics.html).
- Range a request may cover: 30 days. "Amazon CloudWatch was updated to extend the PromQL query
  range for OpenTelemetry metrics from 7 days to 30 days" on 2026-11-20 (What's New,
  https://aws.amazon.com/about-aws/whats-new/2026/11/cloudwatch-promql-query-30days/, as
  quoted and tried through the API in "Trying Out the 30-Day Range Queries Supported by PromQL
  in Amazon CloudWatch", https://dev.classmethod.jp/en/articles/cloudwatch-promql-30day-query-window/:
  "query_range returns 30 days in one request").
- Range selectors: "range selectors max out at 24 hours" (the same article); the
  limits every request is held to include "24-hour scan windows" ("Prometheus-compatible
  APIs", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-PromQL-APIs.html).
  A ``[25h]`` selector is refused before it is sent.
- Points per series: 11,000, Prometheus's own query_range limit ("exceeded maximum resolution
  of 11,000 points per timeseries", prometheus/prometheus web/api/v1/api.go), to which
  CloudWatch's engine, "based on the Prometheus 3.0 specification" (CloudWatch-PromQL.html),
  is held here too: AWS's pages read give no figure of their own.
- How a truncated answer is signalled: the pages read say a response holds "up to" ``limit``
  series and give no page token or truncation flag; a response that holds exactly ``limit``
  series may have dropped others, so it is refused as truncated (``PromQLTruncatedError``),
  naming the limit, and the reader narrows its query (by node, say). A Prometheus
  ``warnings`` list in the response is carried into that error too.
"""

from dataclasses import dataclass
from typing import Final

READ: Final = "2026-12-01"
QUERY_METRICS: Final = "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-PromQL-API-QueryMetrics.html"
RANGE_CHANGE: Final = (
    "https://aws.amazon.com/about-aws/whats-new/2026/11/cloudwatch-promql-query-30days/"
)


@dataclass(frozen=True)
class PromQLLimits:
    """One request's limits, in series and seconds."""

    #: Unique series one response may hold (``limit`` 1 to this).
    max_series: int
    #: Seconds from ``start`` to ``end`` of one range query.
    max_range_s: int
    #: Seconds a range selector (``[1h]``) may reach back.
    max_selector_s: int
    #: Evaluation points per series one range query may return.
    max_points_per_series: int
    read: str = READ


LIMITS: Final = PromQLLimits(
    max_series=500,
    max_range_s=30 * 86_400,
    max_selector_s=24 * 3600,
    max_points_per_series=11_000,
)
