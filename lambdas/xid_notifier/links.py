"""Console links in a notification: the alarm, and the GPU dashboard with the node picked."""

from typing import Final
from urllib.parse import quote

#: The GPU dashboard's node picker: a property variable on ``NodeName`` whose id is this
#: (dashboards/bodies.py ``_variable``: the property name, lower case). A test holds the two
#: together.
NODE_VARIABLE_ID: Final = "nodename"


def _console(region: str) -> str:
    return f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}"


def alarm_url(region: str, alarm_name: str) -> str:
    """The alarm's page, as CloudWatch's own notifications link it (``#alarmsV2:alarm/``)."""
    return f"{_console(region)}#alarmsV2:alarm/{quote(alarm_name, safe='')}"


def gpu_dashboard_url(region: str, dashboard: str, node: str) -> str:
    """The GPU dashboard with ``node`` chosen in its node picker: a dashboard variable's value
    rides in the dashboard URL as ``var-<variable id>=<value>``."""
    return (
        f"{_console(region)}#dashboards/dashboard/{quote(dashboard, safe='')}"
        f"?var-{NODE_VARIABLE_ID}={quote(node, safe='')}"
    )
