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
from lambdas.shared.promql import duration, quote_label

#: Metrics Insights functions and their PromQL aggregation (``<f>`` and ``<f>_over_time``).
FUNCTIONS: Final = {"AVG": "avg", "MAX": "max", "MIN": "min", "SUM": "sum"}
#: ORDER BY and the PromQL that picks the n first in that order.
PICK: Final = {"DESC": "topk", "ASC": "bottomk"}
#: The window the n GPUs drawn are ranked over, ending at the range's end: the dashboards'
#: default range (``"start": "-PT24H"``), so that, as a twin's ORDER BY ranks "within the time
#: range", a GPU that reported in the day is drawn however early it stopped (the lost one).
RANK_WINDOW_S: Final = 24 * 3600


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


# --- The exporter's own series over OTLP (exporter_sink=otlp) -----------------------------------
# Each GPU's series splits by pod (the pod is a resource attribute while a pod holds the GPU:
# lambdas/shared/dcgm.py), so every query aggregates by node and GPU before anything else.


def _gpu_keys(labels: DcgmLabels) -> str:
    return "(" + ", ".join(quote_label(k) for k in (labels.node, labels.gpu)) + ")"


def _cluster_series(metric: str, cluster: str, labels: DcgmLabels) -> str:
    return selector(metric, [(labels.cluster, cluster)])


def gpus_reporting(metric: str, *, cluster: str, period_s: int, labels: DcgmLabels) -> str:
    """How many GPUs sent ``metric`` in each period (one series)."""
    series = _cluster_series(metric, cluster, labels)
    return f"count(count by {_gpu_keys(labels)} (count_over_time({series}[{duration(period_s)}])))"


def gpus_at_zero(metric: str, *, cluster: str, period_s: int, labels: DcgmLabels) -> str:
    """How many GPUs' latest ``metric`` sample of each period is 0 (``gpu_healthy``: lost);
    0, not no data, while none is (``== bool``)."""
    series = _cluster_series(metric, cluster, labels)
    latest = f"min by {_gpu_keys(labels)} (last_over_time({series}[{duration(period_s)}]))"
    return f"sum({latest} == bool 0)"


def fleet_mean(metric: str, *, cluster: str, period_s: int, labels: DcgmLabels) -> str:
    """The mean over GPUs of each GPU's mean ``metric`` in each period (one series): as the
    exporter's cluster-wide EMF copy averages like GPUs' samples."""
    series = f"{_cluster_series(metric, cluster, labels)}[{duration(period_s)}]"
    by = _gpu_keys(labels)
    return f"avg(sum by {by} (sum_over_time({series})) / sum by {by} (count_over_time({series})))"


def counter_steps(
    metric: str,
    *,
    cluster: str,
    keys: Sequence[str],
    limit: int,
    period_s: int,
    node: str | None = None,
    labels: DcgmLabels = CLOUDWATCH,
) -> str:
    """What the exporter's cumulative XID counters (one per GPU and code) counted in each
    period, summed by ``keys``, at most ``limit`` lines: those whose counters changed most in
    the range's last ``RANK_WINDOW_S``. A counter's count in a period is its latest value less
    its latest before the period; all of it where it has none before (born at its first XID,
    which ``increase`` cannot see) or where it fell (the exporter restarted, counting from 0)."""
    matchers = [(labels.cluster, cluster)] + ([(labels.node, node)] if node is not None else [])
    series = selector(metric, matchers)
    counter = "(" + ", ".join(quote_label(k) for k in (labels.node, labels.gpu, labels.xid_code))
    counter += ")"
    window = duration(period_s)
    now = f"max by {counter} (last_over_time({series}[{window}]))"
    before = f"max by {counter} (last_over_time({series}[{window}] offset {window}))"
    steps = f"(({now} - {before}) >= 0) or {now}"
    by = "(" + ", ".join(quote_label(k) for k in keys) + ")"
    ranked = f"sum by {by} (changes({series}[{duration(RANK_WINDOW_S)}] @ end()))"
    return f"(sum by {by} ({steps})) and on {by} topk({limit}, {ranked})"
