"""The pods on a GPU an alarm names: the exporter writes the pods it sees on each GPU into its
EMF documents (``Pods``, namespace/name, where it can name them; ``PodUids`` always), so the
newest document of that node and GPU says who held it. With its OTLP sink (OTel mode) the pods
ride on its series instead, read back with PromQL (``pods_seen_by_promql``).
"""

import json
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from gpu_insights_agent.contract.metrics import (
    DIM_GPU_INDEX,
    DIM_NODE,
    PROP_POD_UIDS,
    PROP_PODS,
    GpuMetric,
)
from lambdas.notifier.messages import document_time_ms
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.log_filter import quote_term
from lambdas.shared.promql import PromQLClient, PromQLError, quote_label, quote_string

#: How far back to look: the exporter writes every GPU's document many times in this window.
LOOKBACK_MS: Final = 10 * 60 * 1000


class PodLookupError(Exception):
    """The exporter's log could not be read."""


def pods_on_gpu(logs: Any, log_group: str, node: str, gpu: str, at_ms: int) -> tuple[str, ...]:
    """The pods of the newest exporter document for this node and GPU before ``at_ms`` (newest
    by the document's own ``_aws.Timestamp``, its log event's where it has none), as the page
    names them: ``namespace/name`` where the document has them, else ``<uid> (pod UID)``."""
    pattern = (
        f"{{ ($.{DIM_NODE} = {quote_term(node)}) && ($.{DIM_GPU_INDEX} = {quote_term(gpu)}) }}"
    )
    try:
        response = logs.filter_log_events(
            logGroupName=log_group,
            startTime=at_ms - LOOKBACK_MS,
            endTime=at_ms + 60_000,
            filterPattern=pattern,
        )
    except (ClientError, BotoCoreError) as err:
        raise PodLookupError(f"reading {log_group} for {node} GPU {gpu}: {err}") from err
    newest: tuple[int, tuple[str, ...]] = (-1, ())
    for event in response.get("events", []):
        try:
            document = json.loads(event["message"])
        except (ValueError, KeyError):
            continue
        if not isinstance(document, dict):
            continue
        same = str(document.get(DIM_NODE)) == node and str(document.get(DIM_GPU_INDEX)) == gpu
        uids, names = document.get(PROP_POD_UIDS), document.get(PROP_PODS)
        when = document_time_ms(document, int(event.get("timestamp", 0)))
        if not same or not isinstance(uids, list) or not uids or when <= newest[0]:
            continue
        if isinstance(names, list) and names:
            newest = (when, tuple(str(n) for n in names))
        else:
            newest = (when, tuple(f"{u} (pod UID)" for u in uids))
    return newest[1]


#: OTel mode with the exporter's OTLP sink: how far back a PromQL alarm's GPU or node is read
#: for its pods. A silent node pages when its exporter has sent nothing for its alarm's ten
#: minutes and five more pending (cdk/alarms/promql.py ``SILENT_RANGE_S``,
#: ``SILENT_PENDING_S``), so its last reading is 15 minutes old: twice that.
PROMQL_LOOKBACK_S: Final = 30 * 60
#: One step a minute, the exporter's cycle; each step reads the readings of the minute before
#: it, a second short of it so that no reading is in two steps' ranges (a range holds both its
#: ends): the newest step that names a pod is its last reading, to the step.
PROMQL_STEP_S: Final = 60


def pods_seen_by_promql(
    client: PromQLClient,
    cluster: str,
    node: str,
    gpu: str | None,
    at_s: float,
    labels: DcgmLabels = CLOUDWATCH,
) -> tuple[tuple[str, ...], float | None]:
    """The pods the exporter's ``gpu_healthy`` series (every GPU, every cycle, the pod that
    holds the GPU on its resource: exporter/otlp_sink.py) named on this node's GPU, or any
    of the node's GPUs (``gpu`` None), at its newest reading that named one in the
    ``PROMQL_LOOKBACK_S`` before ``at_s``; and that reading's time (None: none named). A GPU
    off the bus answers no process, a silent node sends nothing: their pods are the last
    the exporter saw, as the XID page names them from its log (``pods_on_gpu``)."""
    q = quote_label
    matchers = [
        f"__name__={quote_string(str(GpuMetric.HEALTHY))}",
        f"{q(labels.cluster)}={quote_string(cluster)}",
        f"{q(labels.node)}={quote_string(node)}",
        f'{q(labels.pod)}!=""',
    ]
    if gpu is not None:
        matchers.append(f"{q(labels.gpu)}={quote_string(gpu)}")
    by = ", ".join(q(n) for n in (labels.namespace, labels.pod))
    window = f"{PROMQL_STEP_S - 1}s"
    query = f"max by ({by}) (last_over_time({{{', '.join(matchers)}}}[{window}]))"
    try:
        series = client.query_range(
            query, at_s - PROMQL_LOOKBACK_S, at_s, PROMQL_STEP_S, lookback_s=PROMQL_STEP_S
        )
    except PromQLError as err:
        where = f"{node} GPU {gpu}" if gpu is not None else node
        raise PodLookupError(f"reading the pods on {where} by PromQL: {err}") from err
    last = [(s.labels, max(t for t, _ in s.points)) for s in series if s.points]
    newest = max((t for _, t in last), default=None)
    named = sorted(
        f"{names[labels.namespace]}/{names[labels.pod]}"
        if names.get(labels.namespace)
        else names.get(labels.pod, "")
        for names, t in last
        if t == newest
    )
    return tuple(named), newest
