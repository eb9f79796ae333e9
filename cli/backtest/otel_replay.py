"""OTel mode's PromQL alarms replayed over a history file (cli/backtest/promql_history.py) on a
local Prometheus (Debian's package: cli/demo/promql.py backfills the file's samples into a TSDB
with ``promtool tsdb create-blocks-from openmetrics`` and serves it), each alarm evaluated as
CloudWatch evaluates it (cli/backtest/promql_alarm.py), and each ALARM's page as the notifier
would send it (cli/backtest/promql_pages.py), the exporter's XID log lines' pages beside them.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from cdk.alarms.catalog import AlarmSettings, promql_alarms
from cdk.alarms.model import AlarmSpec
from cdk.alarms.promql import PromQLQuery
from cdk.alarms.serving_promql import latency_slo_query
from cdk.settings import Settings
from cli.backtest import promql_alarm
from cli.backtest.promql_alarm import ALARM, Transition, replay_range
from cli.backtest.promql_history import PromQLHistory
from cli.backtest.promql_pages import (
    Page,
    alarm_page,
    as_json,
    page_lines,
    replay_config,
    xid_pages,
)
from cli.demo.promql import serving
from gpu_insights_agent.contract.serving import HistogramForm, Signal
from gpu_insights_agent.emf.document import EmfDocument
from lambdas.notifier.config import NotifierConfig
from lambdas.shared.dcgm import CLOUDWATCH
from lambdas.shared.promql import PromQLClient

#: The serving latency alarms and the histogram each reads.
LATENCY_ALARMS: Final = {"serving-ttft-p99": Signal.TTFT, "serving-e2e-p99": Signal.E2E}


def classic_histograms(spec: AlarmSpec, settings: AlarmSettings) -> AlarmSpec:
    """``spec`` as the local Prometheus can answer it: a serving latency alarm reads CloudWatch's
    native histograms by the metric's name, which a Prometheus 2.42 holds as classic
    ``_bucket`` series (contract/serving.py ``HistogramForm``), so its query is rebuilt in that
    form, the same models and targets (cdk/alarms/serving_promql.py ``latency_slo_query``);
    every other alarm as deployed."""
    signal = LATENCY_ALARMS.get(spec.key)
    if signal is None or settings.serving is None:
        return spec
    serving_settings = settings.serving
    default, targets = (
        (serving_settings.ttft_p99_seconds, serving_settings.ttft_p99_targets)
        if signal is Signal.TTFT
        else (serving_settings.e2e_p99_seconds, serving_settings.e2e_p99_targets)
    )
    query = latency_slo_query(
        signal, settings.cluster_name, default, targets, form=HistogramForm.CLASSIC
    )
    assert query is not None  # the deployed alarm exists: some model has a target
    return replace(spec, metric=query)


def replayed_alarms(settings: Settings) -> list[AlarmSpec]:
    """Every PromQL alarm the app deploys with ``settings``, as the local engine answers it."""
    alarm_settings = settings.alarm_settings()
    return [classic_histograms(s, alarm_settings) for s in promql_alarms(alarm_settings)]


@dataclass(frozen=True)
class AlarmReplay:
    spec: AlarmSpec
    transitions: list[Transition]
    #: Each ALARM transition's page, by (time, contributor).
    pages: dict[tuple[float, Any], Page] = field(default_factory=dict)


@dataclass
class OtelReplay:
    alarms: list[AlarmReplay] = field(default_factory=list)
    #: The pages of the exporter's XID log lines (the notifier's log subscription).
    xid_pages: list[Page] = field(default_factory=list)


def of_cluster(history: PromQLHistory, cluster: str) -> bool:
    """Whether any series of the history is of ``cluster`` (its resource's cluster label)."""
    return any(s.labels.get(CLOUDWATCH.cluster) == cluster for s in history.series)


def clusters(history: PromQLHistory) -> list[str]:
    return sorted({c for s in history.series if (c := s.labels.get(CLOUDWATCH.cluster))})


def replay_alarms(
    specs: Sequence[AlarmSpec],
    settings: Settings,
    region: str,
    history: PromQLHistory,
    log_lines: Sequence[EmfDocument],
    start: float,
    end: float,
) -> OtelReplay:
    """Each alarm over ``start``-``end`` on a local Prometheus holding the history, each
    ALARM paged (its placement read from the same engine); raises
    ``cli.demo.promql.PrometheusMissingError`` where Prometheus is not installed."""
    config = replay_config(settings, region)
    with serving(history.as_samples(), region) as client:
        return replay_on(client, specs, config, log_lines, start, end)


def replay_on(
    client: PromQLClient,
    specs: Sequence[AlarmSpec],
    config: NotifierConfig,
    log_lines: Sequence[EmfDocument],
    start: float,
    end: float,
) -> OtelReplay:
    """Each alarm over ``start``-``end`` on the engine behind ``client``, each ALARM paged
    with ``config`` (its placement read from the same engine), and the XID log lines'
    pages."""
    replay = OtelReplay(xid_pages=xid_pages(log_lines, config))
    for spec in specs:
        assert isinstance(spec.metric, PromQLQuery)
        transitions = replay_range(client, spec.metric, start, end)
        pages = {
            (t.at, t.contributor): alarm_page(spec, t, config, client)
            for t in transitions
            if t.state == ALARM
        }
        replay.alarms.append(AlarmReplay(spec, transitions, pages))
    return replay


def report(replay: OtelReplay) -> str:
    """Each alarm's section (its contributors' transitions, each ALARM's page under it), then
    the XID log lines' pages."""
    sections = [
        promql_alarm.report(
            a.spec,
            a.transitions,
            {key: page_lines(page) for key, page in a.pages.items()},
        )
        for a in replay.alarms
    ]
    if replay.xid_pages:
        lines = [
            f"xid-log: the exporter's XID log lines, as the notifier's log subscription pages "
            f"them: {sum(1 for p in replay.xid_pages if p.subject)} page(s)"
        ]
        for page in replay.xid_pages:
            lines.append(f"    {promql_alarm.when(page.at)}")
            lines += page_lines(page)
        sections.append("\n".join(lines))
    return "\n\n".join(sections)


def as_json_document(replay: OtelReplay) -> list[dict[str, Any]]:
    document = []
    for a in replay.alarms:
        entry = promql_alarm.as_json(a.spec, a.transitions)
        entry["pages"] = [as_json(p) for p in a.pages.values()]
        document.append(entry)
    if replay.xid_pages:
        document.append({"alarm": "xid-log", "pages": [as_json(p) for p in replay.xid_pages]})
    return document
