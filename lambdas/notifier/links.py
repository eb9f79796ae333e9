"""Console links in a notification: the alarm, and the node dashboard with the node picked
(the URL is built by lambdas/shared/console_links.py, the one place that knows the dashboards'
variables)."""

from urllib.parse import quote

from lambdas.shared.console_links import dashboard_url


def _console(region: str) -> str:
    return f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}"


def alarm_url(region: str, alarm_name: str) -> str:
    """The alarm's page, as CloudWatch's own notifications link it (``#alarmsV2:alarm/``)."""
    return f"{_console(region)}#alarmsV2:alarm/{quote(alarm_name, safe='')}"


def gpu_dashboard_url(region: str, dashboard: str, node: str) -> str:
    """The node dashboard (its name from the deployment) with ``node`` chosen in its picker."""
    return dashboard_url(region, dashboard, node)
