"""Console links to the dashboards, for the fleet dashboard and alarm notifications.

The node dashboard's picker is a pattern variable with the id ``node``; a link preselects a
node by naming the variable's value in the dashboard URL (``?var-node=<node>`` after the
dashboard's name in the console fragment), as the console writes it when a variable changes.
"""

from typing import Final
from urllib.parse import quote

from gpu_insights_agent.contract.resource_names import dashboard_name

#: What the node and job pattern variables replace in the bodies' queries.
NODE_PATTERN: Final = "NODE_TO_SHOW"
JOB_PATTERN: Final = "JOB_TO_SHOW"
#: The node dashboard's variable id (what a URL names to preselect a node).
NODE_VARIABLE: Final = "node"
NODE_DASHBOARD: Final = "gpu-node"
#: The training jobs dashboard and its job variable's id (a job alarm's page links it).
TRAINING_DASHBOARD: Final = "training"
#: The storage dashboard, whose EBS widgets the storage analyzer fills with the cluster's volumes.
STORAGE_DASHBOARD: Final = "storage"
JOB_VARIABLE: Final = "job"


def dashboard_url(region: str, dashboard: str, node: str | None = None) -> str:
    """The console URL of a dashboard, with ``node`` preselected in its node variable."""
    url = (
        f"https://{region}.console.aws.amazon.com/cloudwatch/home?region={region}"
        f"#dashboards/dashboard/{quote(dashboard, safe='')}"
    )
    if node:
        url += f"?var-{NODE_VARIABLE}={quote(node, safe='')}"
    return url


def node_dashboard_url(region: str, cluster: str, node: str | None = None) -> str:
    """The console URL of the node dashboard, with ``node`` preselected when given."""
    return dashboard_url(region, dashboard_name(cluster, NODE_DASHBOARD), node)


def job_dashboard_url(region: str, dashboard: str, job: str) -> str:
    """The training jobs dashboard with ``job`` preselected in its job variable."""
    url = dashboard_url(region, dashboard)
    return f"{url}?var-{JOB_VARIABLE}={quote(job, safe='')}"
