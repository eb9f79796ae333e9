"""Metrics Insights queries over the metric contract: what the dashboards' widgets and the alarm
catalog's per-GPU and per-job alarms both ask CloudWatch, written one way."""

import re
from collections.abc import Sequence

#: What Metrics Insights reads bare; any other identifier (vLLM's ``vllm:num_requests_waiting``)
#: goes in double quotes ("Query components and syntax in CloudWatch Metrics Insights",
#: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-metrics-insights-querylanguage.html).
_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def insights_identifier(name: str) -> str:
    """A metric or dimension name as a query spells it: bare, or in double quotes."""
    return name if _BARE.fullmatch(name) else '"' + name.replace('"', '\\"') + '"'


def insights_sql(
    namespace: str,
    schema: Sequence[str],
    metric: str,
    function: str,
    where: Sequence[tuple[str, str]],
    *,
    group_by: Sequence[str] = (),
    order: str | None = None,
    limit: int | None = None,
) -> str:
    """A Metrics Insights query. With GROUP BY, ORDER BY and LIMIT it returns at most
    ``limit`` series however many GPUs or jobs match: what keeps a widget's size fixed."""
    columns = ", ".join((f'"{namespace}"', *schema))
    sql = f"SELECT {function}({insights_identifier(metric)}) FROM SCHEMA({columns})"
    if where:
        sql += " WHERE " + " AND ".join(f"{k} = '{v}'" for k, v in where)
    if group_by:
        sql += f" GROUP BY {', '.join(group_by)}"
    if order:
        sql += f" ORDER BY {function}() {order}"
    if limit is not None:
        sql += f" LIMIT {limit}"
    return sql
