"""Metrics Insights queries over the metric contract: what the dashboards' widgets and the alarm
catalog's per-GPU and per-job alarms both ask CloudWatch, written one way."""

from collections.abc import Sequence


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
    sql = f"SELECT {function}({metric}) FROM SCHEMA({columns})"
    if where:
        sql += " WHERE " + " AND ".join(f"{k} = '{v}'" for k, v in where)
    if group_by:
        sql += f" GROUP BY {', '.join(group_by)}"
    if order:
        sql += f" ORDER BY {function}() {order}"
    if limit is not None:
        sql += f" LIMIT {limit}"
    return sql
