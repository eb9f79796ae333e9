"""A training job alarm's page: the job, where it runs (pods, nodes, GPUs, from the emitter's
own documents in the training log group), the evidence, what to do, and the job's dashboard.

The job alarms' contributors are (ClusterName, JobName) (cdk/alarms/jobs.py); the emitter puts
each rank's pod (``PodName``, from the downward API), node (``NodeName``) and GPUs (``Gpus``,
the ``NVIDIA_VISIBLE_DEVICES`` the device plugin gives the container) in every document it
writes, so the newest document of each rank says where the job is.

In OTel mode with the OTLP sink the job alarms are PromQL alarms whose contributor is the job's
cluster, namespace and ``job_name`` (cdk/alarms/jobs_promql.py), and the emitter writes no
documents: each rank's series carries its ``rank``, pod and node as labels, so the job's ranks
are read from PromQL instead (``promql_placement``). Its GPUs and states are not labels, and
are not named.
"""

import json
import math
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

from botocore.exceptions import BotoCoreError, ClientError

from gpu_insights_agent.contract.metrics import (
    DIM_JOB,
    DIM_NODE,
    OTLP_JOB,
    OTLP_RANK,
    PROP_GPUS,
    PROP_JOB_STATE,
    PROP_POD_NAME,
    PROP_RANK,
    JobState,
    TrainingMetric,
    training_log_group,
)
from gpu_insights_agent.contract.resource_names import dashboard_name
from lambdas.notifier.messages import document_time_ms
from lambdas.notifier.notification import Incident
from lambdas.shared.console_links import TRAINING_DASHBOARD, job_dashboard_url
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels
from lambdas.shared.log_filter import quote_term
from lambdas.shared.promql import PromQLClient, PromQLError, quote_label, quote_string

#: The kinds of alarm whose contributor is a job (cdk/alarms/jobs.py names them ``job-*``).
JOB_KIND_PREFIX: Final = "job-"
#: How far back to read: every rank writes at least one document a minute while it runs.
LOOKBACK_MS: Final = 10 * 60 * 1000
NOT_KNOWN: Final = "not known (the emitter was given none)"
#: OTel mode: the emitter's OTLP series name the rank's pod and node, not its GPUs.
NO_GPU_LABEL: Final = "not named (no label of the job's OTLP series): kubectl describe its pods"


class PlacementLookupError(Exception):
    """The training log group could not be read."""


@dataclass(frozen=True)
class Rank:
    """Where one rank ran and what it said it was doing (its newest document)."""

    rank: str
    pod: str = ""
    node: str = ""
    #: The rank's GPUs as the device plugin listed them (``GPU-a,GPU-b``).
    gpus: str = ""
    #: What the rank was doing (``JobState``), e.g. ``stalled``.
    state: str = ""
    #: Its data wait, percent of its step time, in that document's window (a window with
    #: steps); None without: Classic publishes the share per job, each rank's line its own.
    data_wait_share: float | None = None


@dataclass(frozen=True)
class Placement:
    """Where a job's ranks ran, from their newest documents (rank order)."""

    ranks: tuple[Rank, ...] = ()
    #: What a page says of the GPUs where no rank names them.
    gpus_unknown: str = NOT_KNOWN

    def worst_first(self) -> list[Rank]:
        """The ranks, those in the worst state first (``STATE_ORDER``), rank order within."""
        return sorted(self.ranks, key=lambda r: _state_rank(r.state))

    def each(self, attr: str) -> tuple[str, ...]:
        """One field of every rank, worst first, without repeats or blanks."""
        return tuple(dict.fromkeys(v for r in self.worst_first() if (v := getattr(r, attr))))


#: States from the one to look at first: a stalled rank is what a hung job's page is about.
#: A state the emitter does not write (anything else in a document) comes after these.
STATE_ORDER: Final = (
    JobState.STALLED,
    JobState.ENDED,
    JobState.CHECKPOINTING,
    JobState.EVALUATING,
    JobState.STEPPING,
)
#: A page names this many of a list (pods, nodes, GPUs, ranks) and counts the rest: 1,024
#: ranks listed in full were 330 KiB, past SNS's 256 KiB (lambdas/notifier/limits.py).
FIRST_FEW: Final = 5


def _state_rank(state: str) -> int:
    order = [str(s) for s in STATE_ORDER]
    return order.index(state) if state in order else len(order)


def few(items: tuple[str, ...] | list[str], noun: str | None = None) -> str:
    """``a, b`` or ``a, b, c, d, e and 1,019 more (1,024 pods)`` (no count without ``noun``)."""
    if len(items) <= FIRST_FEW:
        return ", ".join(items)
    shown = ", ".join(items[:FIRST_FEW])
    total = f" ({len(items):,} {noun})" if noun else ""
    return f"{shown} and {len(items) - FIRST_FEW:,} more{total}"


def ranks_summary(placement: Placement) -> str:
    """How many ranks are in each state, worst first, and which ranks are in the worst (unless
    all step): ``1,024 ranks: 24 stalled (rank 3, 17, ...), 1,000 stepping``."""
    ranks = [r for r in placement.worst_first() if r.state]
    counts: dict[str, list[str]] = {}
    for r in ranks:
        counts.setdefault(r.state, []).append(r.rank)
    parts = [f"{len(names):,} {state}" for state, names in counts.items()]
    if parts and ranks[0].state != JobState.STEPPING:
        names = next(iter(counts.values()))
        parts[0] += f" (rank {few(names)})"
    return f"{len(ranks):,} ranks: " + ", ".join(parts)


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
            filterPattern=f"{{ $.{DIM_JOB} = {quote_term(job)} }}",
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
    documents = [newest[r][1] for r in sorted(newest, key=lambda r: (len(r), r))]

    def text(document: dict[str, Any], key: str) -> str:
        return str(document[key]) if document.get(key) else ""

    def share(document: dict[str, Any]) -> float | None:
        value = document.get(str(TrainingMetric.DATA_WAIT_SHARE))
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value) if math.isfinite(value) else None

    return Placement(
        tuple(
            Rank(
                rank=str(d.get(PROP_RANK, "?")),
                pod=text(d, PROP_POD_NAME),
                node=text(d, DIM_NODE),
                gpus=text(d, PROP_GPUS),
                state=text(d, PROP_JOB_STATE),
                data_wait_share=share(d),
            )
            for d in documents
        )
    )


def job_matchers(
    metric: TrainingMetric, cluster: str, namespace: str | None, job: str, labels: DcgmLabels
) -> list[str]:
    """The matchers of one job's series of the emitter's ``metric`` (every rank's)."""
    matchers = [
        f"__name__={quote_string(str(metric))}",
        f"{quote_label(labels.cluster)}={quote_string(cluster)}",
        f"{quote_label(OTLP_JOB)}={quote_string(job)}",
    ]
    if namespace:
        matchers.append(f"{quote_label(labels.namespace)}={quote_string(namespace)}")
    return matchers


def promql_placement(
    client: PromQLClient,
    cluster: str,
    namespace: str | None,
    job: str,
    at_ms: int,
    labels: DcgmLabels = CLOUDWATCH,
) -> Placement:
    """The pods and nodes of the job's ranks in their newest flush before ``at_ms``: the
    heartbeat every rank sends each flush while it runs (``seconds_since_step``), one series
    per rank, its rank, pod and node labels (rank order)."""
    q = quote_label
    matchers = job_matchers(TrainingMetric.SECONDS_SINCE_STEP, cluster, namespace, job, labels)
    by = ", ".join(q(n) for n in (OTLP_RANK, labels.pod, labels.node))
    query = f"max by ({by}) (last_over_time({{{', '.join(matchers)}}}[{LOOKBACK_MS // 60_000}m]))"
    try:
        series = client.query(query, at_ms / 1000)
    except PromQLError as err:
        raise PlacementLookupError(f"reading the ranks of job {job} by PromQL: {err}") from err
    ranks = sorted(
        (
            Rank(
                rank=s.labels.get(OTLP_RANK, "?"),
                pod=s.labels.get(labels.pod, ""),
                node=s.labels.get(labels.node, ""),
            )
            for s in series
        ),
        key=lambda r: (len(r.rank), r.rank),
    )
    return Placement(tuple(ranks), gpus_unknown=NO_GPU_LABEL)


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
    """The alarm's incident, told of the job: its name in the title, where it runs (the worst
    ranks' first, a few named and the rest counted, however many ranks), and the training
    dashboard with the job picked, where every rank is."""
    job = incident.job or "?"
    nodes = few(placement.each("node"), "nodes")
    pods = placement.each("pod")
    where = f" on {nodes}" if nodes else ""
    title = incident.title.split(" on ", 1)[0]
    facts = list(incident.facts)
    if any(r.state for r in placement.ranks):
        facts.append(("Ranks", ranks_summary(placement)))
    return replace(
        incident,
        title=f"{title}: job {job}{where}",
        what=incident.what.replace(f"{title}:", f"{title}: job {job}{where}:", 1),
        node=nodes or NOT_KNOWN,
        gpu=few(placement.each("gpus"), "ranks' GPU sets") or placement.gpus_unknown,
        pods=incident.pods or ((few(pods, "pods"),) if pods else ()),
        facts=tuple(facts),
        dashboard_url=job_dashboard_url(
            region, dashboard_name(incident.cluster, TRAINING_DASHBOARD), job
        ),
    )
