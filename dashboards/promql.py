"""PromQL queries over DCGM's series for the GPU widgets in OTel Container Insights mode, bounded
as their Metrics Insights twins are: a twin's ``GROUP BY ... ORDER BY ... LIMIT n`` is here

    (<f> by (<keys>) (<f>_over_time(<series>[<period>])))
      and on (<keys>) topk(n, <f> by (<keys>) (<f>_over_time(<series>[<rank>] @ end())))

The left side draws each GPU at the widget's period; the right side picks the n GPUs to draw
once, over the day that ends the query's range (``@ end()``, "the end of the range query",
Prometheus "Querying basics", ``@`` modifier, which CloudWatch's engine, "based on the
Prometheus 3.0 specification", has: CloudWatch-PromQL.html). ``and`` keeps only the left
side's series whose keys the right side has, so the widget draws at most n series over its
whole range however many GPUs report, as a ``LIMIT n`` does; a ``topk`` alone would pick n at
each step and draw more over a range in which the ranking changes.

Every query selects its series by metric name ("The expression must select a metric by name",
"QueryMetrics", CloudWatch-PromQL-API-QueryMetrics.html) and the cluster; label names are
written as PromQL 3 writes them (``lambdas.shared.promql.quote_label``).
"""

import json
from collections.abc import Sequence
from typing import Final

from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.promql import quote_label

#: Metrics Insights functions and their PromQL aggregation (``<f>`` and ``<f>_over_time``).
FUNCTIONS: Final = {"AVG": "avg", "MAX": "max", "MIN": "min", "SUM": "sum"}
#: ORDER BY and the PromQL that picks the n first in that order.
PICK: Final = {"DESC": "topk", "ASC": "bottomk"}
#: The window the n GPUs drawn are ranked over, ending at the range's end: the dashboards'
#: default range (``"start": "-PT24H"``), so that, as a twin's ORDER BY ranks "within the time
#: range", a GPU that reported in the day is drawn however early it stopped (the lost one).
RANK_WINDOW_S: Final = 24 * 3600


def duration(seconds: int) -> str:
    """A PromQL duration in whole hours or minutes ("5m", "1h")."""
    if seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0:
        return f"{seconds // 60}m"
    return f"{seconds}s"


def string(value: str) -> str:
    """A PromQL string literal (double-quoted, escaped as Go escapes it)."""
    return json.dumps(value)


def selector(metric: str, matchers: Sequence[tuple[str, str]]) -> str:
    """``{__name__="<metric>", <label>="<value>", ...}``: selected by name, as CloudWatch
    requires (``__name__=`` selects by name in PromQL 2 and 3 alike)."""
    parts = [f"__name__={string(metric)}"] + [f"{quote_label(k)}={string(v)}" for k, v in matchers]
    return "{" + ", ".join(parts) + "}"


def gpu_query(
    metric: str,
    function: str,
    order: str,
    *,
    cluster: str,
    keys: Sequence[str],
    limit: int,
    period_s: int,
    node: str | None = None,
    scale: int = 1,
    labels: DcgmLabels = CLOUDWATCH,
) -> str:
    """The DCGM series ``metric`` of each GPU (``keys``: the label names a line is kept by) in
    ``cluster`` (on ``node``), ``function`` over each ``period_s``, times ``scale``; at most
    ``limit`` lines, the first in ``order`` over the range's last ``RANK_WINDOW_S``."""
    f = FUNCTIONS[function]
    matchers = [(labels.cluster, cluster)] + ([(labels.node, node)] if node is not None else [])
    series = selector(metric, matchers)
    by = "(" + ", ".join(quote_label(k) for k in keys) + ")"

    def over(window_s: int, at: str = "") -> str:
        return f"{f} by {by} ({f}_over_time({series}[{duration(window_s)}]{at}))"

    shown = over(period_s)
    if scale != 1:
        shown = f"{shown} * {scale}"
    ranked = over(RANK_WINDOW_S, " @ end()")
    return f"({shown}) and on {by} {PICK[order]}({limit}, {ranked})"
