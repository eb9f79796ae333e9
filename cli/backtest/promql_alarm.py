"""A PromQL alarm replayed as CloudWatch documents it, against a real PromQL engine.

"A PromQL alarm evaluates a PromQL instant query on a recurring schedule defined by the
EvaluationInterval. The query returns only the time series that satisfy the condition. Each
returned time series is a contributor, identified by its unique set of attributes."
"When a contributor is returned by the query, it is considered breaching. If the contributor
continues breaching for the duration specified by PendingPeriod, the contributor transitions to
ALARM state." "When a contributor stops being returned by the query, it is considered
recovering. If the contributor remains absent for the duration specified by RecoveryPeriod, the
contributor transitions back to OK state." "The alarm is in ALARM state when at least one
contributor has been breaching for longer than the pending period. The alarm returns to OK
state when all contributors have recovered." PendingPeriod "is equivalent to the Prometheus
alert rule's for duration", RecoveryPeriod to its ``keep_firing_for`` ("PromQL alarms",
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-promql.html).

``ContributorStates`` is that state machine, pure; ``replay`` runs the alarm's instant query at
each evaluation time through the Prometheus query API (lambdas.shared.promql) and feeds it.
A contributor that is breaching but not yet past its pending period is not tracked once it is
absent: its breach was not continuous, and its next breach starts a new pending period.
"""

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

from cdk.alarms.model import AlarmSpec
from cdk.alarms.promql import PromQLQuery
from lambdas.shared.promql import PromQLClient

ALARM: Final = "ALARM"
OK: Final = "OK"
State = Literal["ALARM", "OK"]
#: A contributor: its series' labels, sorted (its "unique set of attributes").
Contributor = tuple[tuple[str, str], ...]


def contributor(labels: Mapping[str, str]) -> Contributor:
    return tuple(sorted(labels.items()))


@dataclass(frozen=True)
class Transition:
    """A contributor's change of state at evaluation time ``at`` (epoch seconds)."""

    at: float
    contributor: Contributor
    state: State

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.contributor)


@dataclass
class _Tracked:
    breaching_since: float
    state: State = OK
    absent_since: float | None = None


@dataclass
class ContributorStates:
    """The contributors of one PromQL alarm, evaluated one instant query result at a time."""

    pending_period_s: int
    recovery_period_s: int
    _tracked: dict[Contributor, _Tracked] = field(default_factory=dict)

    def evaluate(self, at: float, returned: Iterable[Contributor]) -> list[Transition]:
        """The transitions of the evaluation at ``at`` whose query returned ``returned``."""
        now = set(returned)
        changes: list[Transition] = []
        for key in sorted(now):
            tracked = self._tracked.setdefault(key, _Tracked(breaching_since=at))
            tracked.absent_since = None
            if tracked.state == OK and at - tracked.breaching_since >= self.pending_period_s:
                tracked.state = ALARM
                changes.append(Transition(at, key, ALARM))
        for key in sorted(set(self._tracked) - now):
            tracked = self._tracked[key]
            if tracked.state == OK:  # pending, and the breach stopped: it starts again
                del self._tracked[key]
                continue
            if tracked.absent_since is None:
                tracked.absent_since = at
            if at - tracked.absent_since >= self.recovery_period_s:
                del self._tracked[key]
                changes.append(Transition(at, key, OK))
        return changes

    @property
    def alarm_state(self) -> State:
        """ALARM while any contributor is."""
        return ALARM if any(t.state == ALARM for t in self._tracked.values()) else OK

    def in_alarm(self) -> list[Contributor]:
        return sorted(k for k, t in self._tracked.items() if t.state == ALARM)


def evaluation_times(start: float, end: float, interval_s: int) -> Iterator[float]:
    """Every ``interval_s`` from ``start`` (inclusive) to ``end`` (exclusive)."""
    at = start
    while at < end:
        yield at
        at += interval_s


def replay(client: PromQLClient, query: PromQLQuery, start: float, end: float) -> list[Transition]:
    """Every contributor transition of the alarm from ``start`` to ``end``: its instant query
    run at each evaluation time by the engine behind ``client``."""
    states = ContributorStates(query.pending_period_s, query.recovery_period_s)
    transitions: list[Transition] = []
    for at in evaluation_times(start, end, query.evaluation_interval_s):
        returned = [contributor(s.labels) for s in client.query(query.query, at)]
        transitions += states.evaluate(at, returned)
    return transitions


def replay_range(
    client: PromQLClient, query: PromQLQuery, start: float, end: float
) -> list[Transition]:
    """``replay`` in a few requests: a range query at a step of the evaluation interval is the
    instant query at each step ("an expression that is evaluated at each step of the range",
    Prometheus' HTTP API, "Range queries"), a series' point at a step being its return there.
    Paged to the API's 24-hour scan window and 11,000 points (lambdas.shared.promql)."""
    times = list(evaluation_times(start, end, query.evaluation_interval_s))
    if not times:
        return []
    returned: dict[float, list[Contributor]] = {round(at, 3): [] for at in times}
    series = client.query_range_paged(
        query.query, times[0], times[-1], query.evaluation_interval_s, lookback_s=query.lookback_s
    )
    for found in series:
        key = contributor(found.labels)
        for at, _ in found.points:
            if round(at, 3) in returned:
                returned[round(at, 3)].append(key)
    states = ContributorStates(query.pending_period_s, query.recovery_period_s)
    transitions: list[Transition] = []
    for at in times:
        transitions += states.evaluate(at, returned[round(at, 3)])
    return transitions


def when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M")


def report(
    spec: AlarmSpec,
    transitions: Sequence[Transition],
    pages: Mapping[tuple[float, Contributor], Sequence[str]] | None = None,
) -> str:
    """One PromQL alarm's replay as the text report's section: its evaluation, each
    contributor that went into ALARM and when it did and recovered; ``pages``: lines shown
    under a transition (the page it sent), by its time and contributor."""
    pages = pages or {}
    query = spec.metric
    assert isinstance(query, PromQLQuery)
    raised = [t for t in transitions if t.state == ALARM]
    lines = [
        f"{spec.key} [{spec.severity}] {spec.title} (PromQL, every "
        f"{query.evaluation_interval_s} s, pending {query.pending_period_s} s, recovery "
        f"{query.recovery_period_s} s): {len(raised)} contributor(s) went into ALARM"
    ]
    for key in sorted({t.contributor for t in transitions}):
        named = ", ".join(f"{k}={v}" for k, v in key)
        lines.append(f"    contributor {named}:")
        for t in transitions:
            if t.contributor == key:
                lines.append(f"      {when(t.at)}  -> {t.state}")
                lines += pages.get((t.at, key), ())
    return "\n".join(lines)


def as_json(spec: AlarmSpec, transitions: Sequence[Transition]) -> dict[str, Any]:
    query = spec.metric
    assert isinstance(query, PromQLQuery)
    return {
        "alarm": spec.key,
        "severity": str(spec.severity),
        "promql": query.query,
        "contributors": [
            {
                "attributes": dict(key),
                "transitions": [
                    {"time": t.at, "to": t.state} for t in transitions if t.contributor == key
                ],
            }
            for key in sorted({t.contributor for t in transitions})
        ],
    }
