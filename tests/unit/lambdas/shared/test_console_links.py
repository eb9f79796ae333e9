"""The node dashboard link that alarm notifications and the fleet dashboard use."""

from dashboards.bodies import all_dashboards
from lambdas.shared.console_links import NODE_VARIABLE, node_dashboard_url


def test_the_link_opens_the_deployed_node_dashboard_with_the_node_preselected() -> None:
    url = node_dashboard_url("eu-west-1", "train", "ip-10-0-1-17.eu-west-1.compute.internal")
    assert url == (
        "https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1"
        "#dashboards/dashboard/gpu-insights-train-gpu-node"
        "?var-node=ip-10-0-1-17.eu-west-1.compute.internal"
    )
    name = url.split("#dashboards/dashboard/")[1].split("?")[0]
    body = all_dashboards("train", [], [], "eu-west-1")[name]  # the dashboard the app deploys
    assert [v["id"] for v in body["variables"]] == [NODE_VARIABLE]
    assert node_dashboard_url("eu-west-1", "train", "a b/c").endswith("?var-node=a%20b%2Fc")
    assert "?var-" not in node_dashboard_url("eu-west-1", "train")
