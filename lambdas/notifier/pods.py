"""The pods on a GPU an alarm names: the exporter writes the pods it sees on each GPU into its
EMF documents (``Pods``, namespace/name, where it can name them; ``PodUids`` always), so the
newest document of that node and GPU says who held it.
"""

import json
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from gpu_insights_agent.contract.metrics import DIM_GPU_INDEX, DIM_NODE, PROP_POD_UIDS, PROP_PODS
from lambdas.notifier.messages import document_time_ms
from lambdas.shared.log_filter import quote_term

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
