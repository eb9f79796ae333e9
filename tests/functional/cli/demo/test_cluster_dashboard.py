"""The cluster dashboard on the demo's world (OTel mode, as ``make demo-otel``'s step 11 reads
it): the EKS control plane's vended metrics in CloudWatch (cli/demo/realistic/control_plane.py)
and Kube State Metrics' morning in a real Prometheus (cli/demo/kube_state.py), so every widget
draws: the API requests, latencies and etcd size, the scheduler's queue, the GPU pod pending
and the GPU node not Ready, then cordoned."""

from datetime import UTC, datetime

import pytest
from moto import mock_aws

from cli.demo.command import DASHBOARD_WINDOW, DEMO_REGION
from cli.demo.dashboards import published_samples
from cli.demo.kube_state import morning_samples, pending_window
from cli.demo.promql import serving
from cli.demo.realistic.control_plane import QUIET_MINUTE, put_control_plane
from cli.demo.storage import DEMO_CLUSTER
from lambdas.shared.aws_clients import new_session
from tests.functional.cli.demo.otel_views import otel_views

pytestmark = pytest.mark.promql_engine


def test_every_cluster_dashboard_widget_draws_on_the_demos_world() -> None:
    start, end = DASHBOARD_WINDOW
    pending_hour = int(pending_window()[0] // 3600 * 3600)
    with mock_aws(), serving(morning_samples(DEMO_CLUSTER), DEMO_REGION) as client:
        session = new_session(
            aws_access_key_id="demo", aws_secret_access_key="demo", region_name=DEMO_REGION
        )
        cloudwatch = session.client("cloudwatch")
        written = put_control_plane(cloudwatch, DEMO_CLUSTER, start, end, {pending_hour})
        samples = published_samples(
            cloudwatch,
            start=datetime.fromtimestamp(start, UTC),
            end=datetime.fromtimestamp(end, UTC),
        )
        views = otel_views(client, samples)
    assert written == len(QUIET_MINUTE) * ((end - start) // 3600)
    (cluster,) = [v for v in views if v.name == f"gpu-insights-{DEMO_CLUSTER}-cluster"]
    drawn = {w.title: w.series for w in cluster.widgets}
    assert len(drawn) == 9
    assert [title for title, series in drawn.items() if not series] == []
    shown = {w.title: {line.label: line.value for line in w.lines} for w in cluster.widgets}
    # The morning's GPU pod, pending and unschedulable; the research node not Ready, then
    # cordoned; the scheduler's queue in the pod's hour.
    assert max(shown["GPU pods pending"].values()) == 1
    assert max(shown["GPU nodes not Ready or cordoned"].values()) == 1
