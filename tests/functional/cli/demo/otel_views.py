"""The demo's dashboards as ``make demo-otel``'s step 11 evaluates them (OTel mode, the exporter's
OTLP sink, the PromQL widgets run on a local Prometheus over the day that ends with the
replay), for the tests that check a dashboard's widgets on the demo's world."""

from collections.abc import Sequence

from cli.backtest.dashboards import PromQLSource
from cli.backtest.history import Sample
from cli.demo.dashboards import DashboardView, dashboard_views
from cli.demo.exporter import NODE, replay_window
from cli.demo.storage import DEMO_CLUSTER
from gpu_insights_agent.contract.metrics import ExporterSink
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.shared.promql import PromQLClient


def otel_views(client: PromQLClient, samples: Sequence[Sample] = ()) -> list[DashboardView]:
    """Every dashboard of the demo's cluster in OTel mode, ``samples`` its CloudWatch metrics."""
    return dashboard_views(
        samples,
        cluster=DEMO_CLUSTER,
        training_cluster=DEMO_CLUSTER,
        node=NODE,
        buckets=[],
        alarm_arns=[],
        exporter_interval_s=60,
        mode=ContainerInsightsMode.OTEL,
        promql=PromQLSource(client, end=replay_window()[1]),
        exporter_sink=ExporterSink.OTLP,
    )
