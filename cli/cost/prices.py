"""The list prices `gpu-insights cost-estimate` multiplies by: the one table of them.

Each price is us-east-1's, with the AWS pricing page it is from and the day it was read. Other
Regions differ; so may your bill (free tiers, savings plans and private pricing are left out).
Where only a page that quotes AWS's page could be read, ``note`` says so: check those first.
"""

from dataclasses import dataclass
from typing import Final

CLOUDWATCH_PRICING: Final = "https://aws.amazon.com/cloudwatch/pricing/"
LAMBDA_PRICING: Final = "https://aws.amazon.com/lambda/pricing/"
STEP_FUNCTIONS_PRICING: Final = "https://aws.amazon.com/step-functions/pricing/"
#: "Request metrics ... are billed at the same rate as CloudWatch custom metrics" (Amazon S3
#: User Guide, Monitoring metrics with Amazon CloudWatch).
S3_REQUEST_METRICS: Final = (
    "https://docs.aws.amazon.com/AmazonS3/latest/userguide/cloudwatch-monitoring.html"
)
READ: Final = "2026-12-01"


@dataclass(frozen=True)
class Price:
    usd: float
    #: What one ``usd`` buys: "metric-month", "GB", "million observations" ...
    unit: str
    source: str
    read: str = READ
    note: str = ""

    def label(self) -> str:
        return f"${self.usd:g} per {self.unit}"


#: Custom metrics per metric-month, by tier: (metrics in the tier, price). The pricing page's
#: Metrics tab: first 10,000 $0.30, next 240,000 $0.10, next 750,000 $0.05, over 1,000,000
#: $0.02 (the same tiers quoted from that page in nishinoshake/aws-rough issue 37). "All custom
#: metrics charges are prorated by the hour and metered only when you send metrics".
CUSTOM_METRIC_TIERS: Final[tuple[tuple[float, float], ...]] = (
    (10_000, 0.30),
    (240_000, 0.10),
    (750_000, 0.05),
    (float("inf"), 0.02),
)
CUSTOM_METRIC: Final = Price(
    0.30,
    "metric-month (first 10,000; then $0.10, $0.05, $0.02 by tier)",
    CLOUDWATCH_PRICING,
)
#: Standard logs ingestion (the pricing page's Logs tab; the EMF lines and container logs).
LOGS_INGESTION: Final = Price(0.50, "GB ingested", CLOUDWATCH_PRICING)
#: Container Insights with enhanced observability for EKS, per observation (one metric value).
ENHANCED_CI: Final = Price(
    0.21,
    "million observations",
    CLOUDWATCH_PRICING,
    note="the first tier (2026-10-02); larger volumes are priced lower, so an upper bound",
)
#: OpenTelemetry metrics sent over OTLP (the exporter's, with exporter_sink=otlp): "a per-GB
#: ingestion model with included storage and query access. There are no per-metric, per-API-call,
#: or separate storage charges" ("OTel metrics pricing and storage", OTEL_METRICS_PRICING). The
#: figure per GB is the one quoted from the pricing page in the decision record above.
OTEL_METRICS_PRICING: Final = (
    "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/metrics-otel-pricing.html"
)
OTLP_METRICS: Final = Price(
    0.08,
    "GB of OTLP metrics ingested",
    OTEL_METRICS_PRICING,
    note="per GB, no per-metric charge; the per-GB figure of 2026-10-02: confirm it on the "
    "pricing page (OTLP ingestion is free of charge while in preview: CloudWatch-PromQL.html)",
)
#: Container Insights with OpenTelemetry metrics, the add-on's own series (DCGM's GPU series
#: among them): "available in public preview at no additional charge in US East (N. Virginia),
#: US West (Oregon), Europe (Ireland), Asia Pacific (Singapore), and Asia Pacific (Sydney)"
#: ("Container Insights with OpenTelemetry metrics for Amazon EKS", OTEL_CI_PREVIEW). No price
#: after the preview is published there; OTLP_METRICS' model is the likely one.
OTEL_CI_PREVIEW: Final = "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/container-insights-otel-metrics.html"
OTEL_CI: Final = Price(
    0.0,
    "million datapoints (preview)",
    OTEL_CI_PREVIEW,
    note="at no additional charge in preview, five Regions; no later price published",
)
#: PromQL sent to the Prometheus-compatible query API (the GPU-hour attribution's reads in OTel
#: mode): "OTLP metrics ingestion, PromQL querying, OTel enrichment of vended AWS metrics, and
#: Query Studio are in public preview release, are free of charge, and subject to change"
#: ("Query metrics with PromQL", PROMQL_PREVIEW). The model after it: "Console queries free —
#: PromQL queries in the CloudWatch console (Query Studio, dashboards) are free"; "API queries
#: charged per sample — Programmatic PromQL queries are charged per million samples scanned"
#: (OTEL_METRICS_PRICING); the pages read give no figure per sample.
PROMQL_PREVIEW: Final = (
    "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-PromQL.html"
)
PROMQL_QUERIES: Final = Price(
    0.0,
    "million samples scanned (preview)",
    PROMQL_PREVIEW,
    note="free of charge in public preview; after it, query API reads per million samples "
    "scanned (console and dashboard queries stay free), at no figure published on the pages read",
)
#: A PromQL alarm: "PromQL alarms" (alarm-promql.html) and the pricing pages read
#: (CLOUDWATCH_PRICING, OTEL_METRICS_PRICING) publish no figure for one, and PromQL
#: is "free of charge" in the preview (PROMQL_PREVIEW). Priced at no figure; the estimate
#: prints the alarms and the samples their evaluations scan, so they can be priced.
PROMQL_ALARM: Final = Price(
    0.0,
    "million samples scanned by alarm evaluations (preview)",
    PROMQL_PREVIEW,
    note="no price for PromQL alarms published on the pages read; the samples their "
    "evaluations scan are printed",
)
#: A standard-resolution alarm, per metric it lists ("Alarm metrics", the page's free tier:
#: "only applicable to Standard resolution alarms that list metrics directly and don't use a
#: Metrics Insights query").
STANDARD_ALARM: Final = Price(0.10, "alarm metric-month", CLOUDWATCH_PRICING)
#: A Metrics Insights query alarm, per metric the query analyzes.
INSIGHTS_ALARM: Final = Price(
    0.10,
    "metric analyzed-month",
    CLOUDWATCH_PRICING,
    note="per metric analyzed: confirm it on the pricing page's Alarms tab",
)
#: Logs Insights queries, per GB of log data scanned (the pricing page's Logs tab). The training
#: analyzer reads failed jobs' logs with GetLogEvents instead, which has no per-GB charge.
LOGS_INSIGHTS: Final = Price(
    0.005,
    "GB scanned",
    CLOUDWATCH_PRICING,
    note="per GB scanned (2026): confirm it on the pricing page's Logs tab",
)
COMPOSITE_ALARM: Final = Price(0.50, "composite alarm-month", CLOUDWATCH_PRICING)
DASHBOARD: Final = Price(3.00, "dashboard-month", CLOUDWATCH_PRICING)
#: GetMetricData: "$0.01 per 1,000 metrics requested", never in the free tier ("not including
#: GetMetricData, GetInsightRuleReport and GetMetricWidgetImage: these 3 operations are
#: always charged").
GET_METRIC_DATA: Final = Price(0.01, "1,000 metrics requested", CLOUDWATCH_PRICING)
#: Lambda, x86 (the functions' architecture), first tier of GB-seconds, and requests.
LAMBDA_GB_SECOND: Final = Price(
    0.0000166667,
    "GB-second (x86)",
    LAMBDA_PRICING,
    note="x86, first tier: confirm it on the pricing page",
)
LAMBDA_REQUESTS: Final = Price(0.20, "million requests", LAMBDA_PRICING)
#: Step Functions Standard Workflows: "$0.025 per 1,000 state transitions" (US East (N.
#: Virginia) $0.0250).
STATE_TRANSITIONS: Final = Price(0.025, "1,000 state transitions", STEP_FUNCTIONS_PRICING)
#: S3 request metrics are custom metrics: one per metric and bucket filter.
S3_REQUEST_METRIC: Final = Price(
    0.30, "metric-month, as custom metrics (tiered with them)", S3_REQUEST_METRICS
)

#: Every price above, as `cost-estimate --json` lists them.
PRICES: Final[dict[str, Price]] = {
    "custom_metric": CUSTOM_METRIC,
    "logs_ingestion": LOGS_INGESTION,
    "logs_insights_scanned": LOGS_INSIGHTS,
    "enhanced_container_insights": ENHANCED_CI,
    "otel_container_insights": OTEL_CI,
    "otlp_metrics": OTLP_METRICS,
    "promql_queries": PROMQL_QUERIES,
    "standard_alarm": STANDARD_ALARM,
    "metrics_insights_alarm": INSIGHTS_ALARM,
    "composite_alarm": COMPOSITE_ALARM,
    "dashboard": DASHBOARD,
    "get_metric_data": GET_METRIC_DATA,
    "lambda_gb_second": LAMBDA_GB_SECOND,
    "lambda_requests": LAMBDA_REQUESTS,
    "step_functions_transitions": STATE_TRANSITIONS,
    "s3_request_metric": S3_REQUEST_METRIC,
}


def tiered_metric_cost(metrics: float) -> float:
    """Custom metrics' monthly price: each metric at its tier's price."""
    remaining, total = float(metrics), 0.0
    for size, price in CUSTOM_METRIC_TIERS:
        used = min(remaining, size)
        total += used * price
        remaining -= used
        if remaining <= 0:
            break
    return total
