"""The serving query builders shared by the alarms and the dashboards."""

from cdk.alarms.promql import RANGE_S
from gpu_insights_agent.contract.serving import QUALITY_METRIC, QUALITY_MODEL_LABEL, HistogramForm
from lambdas.shared.serving_queries import RATE_RANGE_S, minutes_of, quality_buckets
from tests.docs_text import DOCS


def test_serving_rates_read_the_gpu_alarms_five_minutes() -> None:
    assert RATE_RANGE_S == RANGE_S == 300


def test_a_window_is_written_in_minutes_where_it_is_whole_minutes() -> None:
    assert minutes_of(300) == "5m"
    assert minutes_of(90) == "90s"


def test_the_quality_histogram_is_read_native_under_its_own_name_in_cloudwatch() -> None:
    """CloudWatch stores an OTLP histogram as an exponential one, read as a native histogram
    under the metric's name: no ``_bucket`` series, no ``le`` (metrics-otel-histograms.html)."""
    query = quality_buckets("inference", range_s=3600)
    assert query == (
        'sum by ("@resource.k8s.cluster.name", "@resource.k8s.namespace.name", '
        f'"@resource.k8s.deployment.name", {QUALITY_MODEL_LABEL}) '
        f'(increase({{__name__="{QUALITY_METRIC}", '
        '"@resource.k8s.cluster.name"="inference"}[60m]))'
    )
    classic = quality_buckets("inference", range_s=600, form=HistogramForm.CLASSIC)
    assert f'__name__="{QUALITY_METRIC}_bucket"' in classic
    assert classic.startswith("sum by (le, ")


def test_the_quality_proxy_page_shows_the_query_the_builder_writes() -> None:
    text = (DOCS / "quality-proxy.md").read_text()
    assert quality_buckets("my-serving-cluster", range_s=3600) in text
