"""A training job alarm's page: the job, where it runs (pods, nodes, GPUs, from the emitter's
own documents in the training log group), the evidence, what to do, and the job's dashboard.

The job alarms' contributors are (ClusterName, JobName) (cdk/alarms/jobs.py); the emitter puts
each rank's pod (``PodName``, from the downward API), node (``NodeName``) and GPUs (``Gpus``,
the ``NVIDIA_VISIBLE_DEVICES`` the device plugin gives the container) in every document it
writes, so the newest document of each rank says where the job is.
"""

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from gpu_insights_agent.contract.metrics import (
    DIM_JOB,
    DIM_NODE,
    PROP_GPUS,
    PROP_JOB_STATE,
    PROP_POD_NAME,
    PROP_RANK,
    training_log_group,
)
from gpu_insights_agent.contract.resource_names import dashboard_name
from lambdas.notifier.messages import document_time_ms
from lambdas.notifier.notification import Incident
from lambdas.shared.console_links import TRAINING_DASHBOARD, job_dashboard_url

#: The kinds of alarm whose contributor is a job (cdk/alarms/jobs.py names them ``job-*``).
JOB_KIND_PREFIX: Final = "job-"
#: How far back to read: every rank writes at least one document a minute while it runs.
LOOKBACK_MS: Final = 10 * 60 * 1000
NOT_KNOWN: Final = "not known (the emitter was given none)"


class PlacementLookupError(Exception):
    """The training log group could not be read."""


@dataclass(frozen=True)
class Placement:
    """Where a job's ranks ran, from their newest documents (rank order)."""

    pods: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()
    #: What each rank said it was doing (JobState), e.g. ``0: stalled``.
    states: tuple[str, ...] = ()


def is_job_kind(kind: str) -> bool:
    return kind.startswith(JOB_KIND_PREFIX)


def job_placement(logs: Any, cluster: str, job: str, at_ms: int) -> Placement:
    """The pods, nodes and GPUs of the job's ranks in their newest documents before ``at_ms``."""
    group = training_log_group(cluster)
    try:
        response = logs.filter_log_events(
            logGroupName=group,
            startTime=at_ms - LOOKBACK_MS,
            endTime=at_ms + 60_000,
            filterPattern=f'{{ $.{DIM_JOB} = "{job}" }}',
        )
    except (ClientError, BotoCoreError) as err:
        raise PlacementLookupError(f"reading {group} for job {job}: {err}") from err
    newest: dict[str, tuple[int, dict[str, Any]]] = {}
    for event in response.get("events", []):
        try:
            document = json.loads(event["message"])
        except (ValueError, KeyError):
            continue
        if not isinstance(document, dict) or str(document.get(DIM_JOB)) != job:
            continue
        rank = str(document.get(PROP_RANK, "?"))
        when = document_time_ms(document, int(event.get("timestamp", 0)))
        if when >= newest.get(rank, (-1, {}))[0]:
            newest[rank] = (when, document)
    ranks = [newest[r][1] for r in sorted(newest, key=lambda r: (len(r), r))]

    def each(key: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(str(d[key]) for d in ranks if d.get(key)))

    states = tuple(
        f"rank {d.get(PROP_RANK, '?')}: {d[PROP_JOB_STATE]}" for d in ranks if PROP_JOB_STATE in d
    )
    return Placement(
        pods=each(PROP_POD_NAME), nodes=each(DIM_NODE), gpus=each(PROP_GPUS), states=states
    )


def alarm_time_ms(incident: Incident, default_ms: int) -> int:
    """When the contributor went into ALARM (its state's timestamp), so the placement read is
    the job's at that time even when the event comes late; ``default_ms`` where unreadable."""
    if not incident.when:
        return default_ms
    text = incident.when.replace("Z", "+00:00").replace("+0000", "+00:00")
    try:
        return int(datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError:
        return default_ms


def job_incident(incident: Incident, region: str, placement: Placement) -> Incident:
    """The alarm's incident, told of the job: its name in the title, where it runs, and the
    training dashboard with the job picked."""
    job = incident.job or "?"
    where = (" on " + ", ".join(placement.nodes)) if placement.nodes else ""
    title = incident.title.split(" on ", 1)[0]
    facts = list(incident.facts)
    if placement.states:
        facts.append(("Ranks", "; ".join(placement.states)))
    return replace(
        incident,
        title=f"{title}: job {job}{where}",
        what=incident.what.replace(f"{title}:", f"{title}: job {job}{where}:", 1),
        node=", ".join(placement.nodes) or NOT_KNOWN,
        gpu=", ".join(placement.gpus) or NOT_KNOWN,
        pods=incident.pods or placement.pods,
        facts=tuple(facts),
        dashboard_url=job_dashboard_url(
            region, dashboard_name(incident.cluster, TRAINING_DASHBOARD), job
        ),
    )
