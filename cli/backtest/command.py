"""``gpu-insights backtest``: the deployed alarm definitions over a history file or CloudWatch."""

import argparse
import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from cdk.alarms.catalog import SILENT_ALARM, gpu_alarms, promql_alarms
from cdk.alarms.cluster import CLUSTER_ALARM_KINDS, NAMESPACE_EKS
from cdk.alarms.model import AlarmSpec
from cdk.alarms.promql import PromQLQuery
from cdk.function_configs import silence_config
from cdk.settings import Settings
from cli.backtest.cloudwatch_history import HistoryFetchError, fetch_samples
from cli.backtest.engine import BacktestResult, backtest, history_end, report
from cli.backtest.evaluator import Transition
from cli.backtest.history import History, Sample, read_history_file
from cli.backtest.otel_replay import (
    OtelReplay,
    clusters,
    of_cluster,
    replay_alarms,
    replayed_alarms,
)
from cli.backtest.otel_replay import as_json_document as otel_json
from cli.backtest.otel_replay import report as otel_report
from cli.backtest.promql_alarm import Transition as PromQLTransition
from cli.backtest.promql_alarm import as_json as promql_json
from cli.backtest.promql_alarm import replay_range
from cli.backtest.promql_alarm import report as promql_report
from cli.backtest.silence_history import NOTE, derive_silence, has_silence
from cli.demo.promql import PrometheusMissingError
from cli.failures import AwsFailureError, ToolMissingError
from cli.settings_args import add_settings_arguments, placed_settings, said, session_for
from gpu_insights_agent.contract.metrics import DIM_CLUSTER
from lambdas.shared.events import parse_utc


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--history", type=Path, help="a metric history file (JSON lines)")
    source.add_argument(
        "--cloudwatch", action="store_true", help="read the history from CloudWatch (read-only)"
    )
    parser.add_argument("--start", help="ISO 8601 start (default: the history's first sample)")
    parser.add_argument(
        "--end",
        help="ISO 8601 end (default: the end of the period holding the history's last sample, "
        "or now)",
    )
    parser.add_argument(
        "--hours", type=float, default=168.0, help="with --cloudwatch and no --start: hours back"
    )
    add_settings_arguments(parser, aws=True)
    parser.add_argument("--json", action="store_true", help="print the transitions as JSON")


def _time(raw: str | None, name: str) -> float | None:
    return None if raw is None else parse_utc(raw, f"--{name}").timestamp()


#: CloudWatch keeps metrics for 15 months (455 days): no longer replay is meaningful.
MAX_DAYS = 455
#: The most of a history file read: 15 months of one 8-GPU node's exporter lines at 10 s are
#: about 40 GB, far more than a replay holds in memory; a larger file is refused, not read.
MAX_HISTORY_BYTES = 1024**3
_CHUNK = 1024**2


def _bounded_bytes(path: Path) -> bytes:
    """The file's bytes, read a chunk at a time: a file over ``MAX_HISTORY_BYTES`` (or endless,
    like /dev/zero) or one with a NUL byte (binary, not JSON lines) is refused as soon as it
    shows itself, before it fills memory."""
    chunks, size = [], 0
    with path.open("rb") as raw:
        while chunk := raw.read(_CHUNK):
            if b"\0" in chunk:
                raise ValueError(
                    f"--history {path} holds a NUL byte (at byte {size + chunk.index(0)}): "
                    "expected JSON lines"
                )
            size += len(chunk)
            if size > MAX_HISTORY_BYTES:
                raise ValueError(
                    f"--history {path} is over {MAX_HISTORY_BYTES / 1024**3:g} GiB (read no "
                    "further): replay a shorter part of it"
                )
            chunks.append(chunk)
    return b"".join(chunks)


def read_file(path: Path) -> History:
    """The history file's samples, series and log lines; an unreadable or empty one is
    refused by name."""
    try:
        data = _bounded_bytes(path)
        history = read_history_file(data.decode("utf-8"), source=str(path))
    except OSError as err:
        raise ValueError(f"cannot read {path}: {err.strerror}") from err
    except UnicodeDecodeError as err:
        raise ValueError(
            f"--history {path} is not UTF-8 text (byte {err.start}): expected JSON lines"
        ) from err
    if not history:
        skipped = "; ".join(history.skipped[:3])
        raise ValueError(f"{path} holds no samples" + (f" ({skipped})" if skipped else ""))
    return history


def _of_cluster(history: History, cluster: str, path: Path) -> list[Sample]:
    """The samples of ``cluster``, whose alarms are replayed; a file with none of them and no
    PromQL series of it (another cluster's history) is refused by name rather than replayed as
    every alarm raised 0."""
    samples = history.samples
    mine = [s for s in samples if (DIM_CLUSTER, cluster) in s.dimensions or _no_cluster(s)]
    # The exporter's XID log lines of another cluster: not this deployment's to page.
    logged = {str(d.get(DIM_CLUSTER)) for d in history.log_lines}
    history.log_lines = [d for d in history.log_lines if d.get(DIM_CLUSTER) == cluster]
    if not mine and not of_cluster(history.promql, cluster) and not history.log_lines:
        others = sorted(
            {v for s in samples for k, v in s.dimensions if k == DIM_CLUSTER}
            | set(clusters(history.promql))
            | logged
        )
        raise other_cluster(path, cluster, others)
    return mine


def other_cluster(path: Path, cluster: str, others: list[str]) -> ValueError:
    """The error of a history file with no sample of ``cluster``, naming those it holds."""
    return ValueError(
        f"--history {path}: no sample is of cluster {cluster!r} (the cluster_name setting); "
        f"it holds {', '.join(repr(o) for o in others[:5])}"
        + (f" and {len(others) - 5} more" if len(others) > 5 else "")
    )


def _no_cluster(sample: Sample) -> bool:
    """A series no cluster names (the host-log XID count is in a namespace of its own)."""
    return not any(k == DIM_CLUSTER for k, _ in sample.dimensions)


#: A history file of CloudWatch metrics (GpuInsights, ContainerInsights: what the EMF sink and
#: Classic write) feeds no PromQL alarm: in OTel mode with the OTLP sink, the default, every GPU
#: and job alarm reads PromQL, and the control plane's metric alarms read AWS/EKS, so a file
#: without PromQL series or AWS/EKS series has nothing to replay: said, with the ways that do
#: replay, rather than an empty report that reads as "no alarm would have fired".
_ALL_PROMQL: Final = (
    "--history: every GPU and job alarm of these settings is a PromQL alarm (OTel mode with "
    "exporter_sink=otlp, the default), and the file holds no PromQL series (series as "
    "CloudWatch's PromQL API returns them) and no AWS/EKS series for the control plane's "
    "alarms: export the window's series as docs/history.md says, or "
    "replay with --cloudwatch, or replay the file's GpuInsights series as the EMF sink's "
    "alarms with -c exporter_sink=emf (or -c container_insights_mode=classic)"
)
#: The Region a replay's pages name in their console links where neither --region nor the
#: region setting gives one (a file's series name no Region).
REPLAY_REGION: Final = "us-east-1"
#: The window a PromQL replay evaluates past the history's last sample: the evaluation at it.
_LAST_EVALUATION_S: Final = 60


def _nothing_to_replay(specs: list[AlarmSpec], history: History) -> bool:
    """Every metric alarm a file could feed is the control plane's (cdk/alarms/cluster.py),
    the file holds none of their AWS/EKS series, and nothing for the PromQL alarms."""
    if history.promql.series or history.log_lines:
        return False
    if any(spec.kind not in CLUSTER_ALARM_KINDS for spec in specs):
        return False
    return not any(sample.namespace == NAMESPACE_EKS for sample in history.samples)


@dataclass
class _Replay:
    """What a backtest replays and what it found beside the metric alarms' results."""

    specs: list[AlarmSpec]
    samples: list[Sample]
    start: float
    end: float
    notes: dict[str, str] = field(default_factory=dict)
    #: Replayed with --cloudwatch, through CloudWatch's PromQL API.
    promql: list[tuple[AlarmSpec, list[PromQLTransition]]] = field(default_factory=list)
    #: A history file's PromQL series, replayed on a local Prometheus.
    otel: OtelReplay | None = None
    skipped: list[str] = field(default_factory=list)


def run(args: argparse.Namespace) -> str:
    placed = placed_settings(args)
    settings, line = placed.settings, placed.line()
    if not 0 < args.hours <= MAX_DAYS * 24:
        raise ValueError(f"--hours {args.hours} must be above 0 up to {MAX_DAYS * 24}")
    start, end = _time(args.start, "start"), _time(args.end, "end")
    if args.history is not None:
        replay = _from_history(args, settings, start, end)
    else:
        replay = _from_cloudwatch(args, settings, start, end)
    results = backtest(replay.specs, replay.samples, start=replay.start, end=replay.end)
    if args.json:
        document = json.loads(_as_json(results, replay.notes))
        document += [promql_json(spec, transitions) for spec, transitions in replay.promql]
        document += otel_json(replay.otel) if replay.otel is not None else []
        document += [{"skipped": replay.skipped}] if replay.skipped else []
        return said(args, line, json.dumps(document, indent=2))
    return said(
        args,
        line,
        report(results, start=replay.start, end=replay.end)
        + "".join(f"\n\n{promql_report(s, transitions)}" for s, transitions in replay.promql)
        + (f"\n\n{otel_report(replay.otel)}" if replay.otel is not None else "")
        + "".join(f"\n\n{n}" for n in replay.notes.values())
        + "".join(f"\n\nskipped: {skip}" for skip in replay.skipped),
    )


def _check_range(start: float, end: float, origin: dict[str, str]) -> None:
    """``origin``: where each end of the range came from, for an error that names it."""
    if end <= start:
        raise ValueError(
            f"the replayed range ends ({_iso(end)}, {origin['end']}) before it starts "
            f"({_iso(start)}, {origin['start']}): the end must be after the start"
        )
    if end - start > MAX_DAYS * 86_400:
        raise ValueError(
            f"the replayed range must be above 0 up to {MAX_DAYS} days (CloudWatch's retention), "
            f"not {(end - start) / 86_400:,.1f} days"
        )


def _from_history(
    args: argparse.Namespace, settings: Settings, start: float | None, end: float | None
) -> _Replay:
    """The file's CloudWatch samples for the metric alarms, and its PromQL series and XID log
    lines replayed on a local Prometheus for OTel mode's alarms."""
    specs = gpu_alarms(settings.alarm_settings())
    origin = {"start": "--start", "end": "--end"}
    history = read_file(args.history)
    samples = _of_cluster(history, settings.cluster_name, args.history)
    if _nothing_to_replay(specs, history):
        raise ValueError(_ALL_PROMQL)
    otel_input = bool(history.promql.series or history.log_lines)
    first, last = _span(history)
    if start is None:
        start, origin["start"] = first, "the history's first sample"
    if end is None:
        end = history_end(specs, samples) if samples else last
        end = max(end, last + _LAST_EVALUATION_S) if otel_input else end
        origin["end"] = "the history's last sample"
    _check_range(start, end, origin)
    replay = _Replay(specs, samples, start, end, skipped=history.skipped)
    if history.promql.series and not promql_alarms(settings.alarm_settings()):
        # Classic deploys no PromQL alarm: the file's series are read by none, and said so.
        replay.notes["promql-series"] = (
            f"{len(history.promql.series):,} PromQL series of the file are read by no alarm: "
            f"this deployment is {settings.container_insights_mode.value} "
            f"(Region {settings.region}), which deploys no PromQL alarm; replay them as OTel "
            "mode does with --region in an OTel Region (or -c container_insights_mode=otel "
            "where AWS offers it)"
        )
    if otel_input:
        replay.otel = _replay_history(settings, args, history, start, end)
    else:
        replay.notes |= {
            spec.key: f"{spec.key} is a PromQL alarm: the file holds no PromQL series "
            "(series as CloudWatch's PromQL API returns them, docs/history.md); export "
            "them, or replay it with --cloudwatch"
            for spec in promql_alarms(settings.alarm_settings())
        }
    if not samples:
        replay.specs = []  # no CloudWatch metric in the file: no metric alarm replayed
    elif settings.alarm_settings().silence_check and not has_silence(samples):
        # The exporter's documents alone: the silence check's rule, run over them.
        earliest = min(s.timestamp for s in samples)
        samples += derive_silence(samples, silence_config(settings), start=earliest, end=end)
        replay.notes[SILENT_ALARM] = NOTE
        if args.end is None:
            replay.notes[SILENT_ALARM] += (
                f"; the range ends at the history's last sample ({_iso(end)}), so a "
                "silence after it is not seen: pass --end to replay past it"
            )
    return replay


def _from_cloudwatch(
    args: argparse.Namespace, settings: Settings, start: float | None, end: float | None
) -> _Replay:
    from lambdas.shared.aws_clients import INTERACTIVE, client

    specs = gpu_alarms(settings.alarm_settings())
    end = end if end is not None else time.time()
    start = start if start is not None else end - args.hours * 3600
    _check_range(start, end, {"start": "--start", "end": "--end"})
    # --region, else the deployment's region setting, else the standard chain's.
    session, _ = session_for(args, settings)
    cloudwatch = client("cloudwatch", session=session, config=INTERACTIVE)
    try:
        samples = fetch_samples(cloudwatch, specs, start=start, end=end)
    except HistoryFetchError as err:  # an AWS error: one line, exit 1
        raise AwsFailureError(str(err)) from err
    replay = _Replay(specs, samples, start, end)
    # OTel mode's PromQL alarms, through CloudWatch's PromQL API.
    replay.promql = _replay_promql(cloudwatch, promql_alarms(settings.alarm_settings()), start, end)
    return replay


def _span(history: History) -> tuple[float, float]:
    """The first and last time of the history's samples, series and log lines."""
    times = [s.timestamp for s in history.samples]
    times += history.promql.span() if history.promql.series else []
    times += [int(d["_aws"]["Timestamp"]) / 1000 for d in history.log_lines]
    return min(times), max(times)


def _replay_history(
    settings: Settings, args: argparse.Namespace, history: History, start: float, end: float
) -> OtelReplay:
    """Every PromQL alarm the settings deploy, replayed over the file's series on a local
    Prometheus, and each ALARM's page; Prometheus not installed: one line, exit status 4."""
    region = args.region or settings.region or REPLAY_REGION
    try:
        return replay_alarms(
            replayed_alarms(settings), settings, region, history.promql, history.log_lines,
            start, end,
        )  # fmt: skip
    except PrometheusMissingError as err:
        said = f"--history replays OTel mode's alarms on Prometheus: {err}"
        raise ToolMissingError(said) from err


def _replay_promql(
    cloudwatch: Any, specs: list[AlarmSpec], start: float, end: float
) -> list[tuple[AlarmSpec, list[PromQLTransition]]]:
    """Each PromQL alarm replayed by CloudWatch's PromQL API (its range queries, signed as the
    CloudWatch client's calls are)."""
    from lambdas.shared.promql import promql_for

    if not specs or end <= start:
        return []
    engine = promql_for(cloudwatch)
    out = []
    for spec in specs:
        assert isinstance(spec.metric, PromQLQuery)
        out.append((spec, replay_range(engine, spec.metric, start, end)))
    return out


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _as_json(results: list[BacktestResult], notes: dict[str, str]) -> str:
    """One object an alarm; what the replay assumed for an alarm is its ``note``."""
    document: list[dict[str, Any]] = [
        {
            "alarm": r.spec.key,
            **({"note": notes[r.spec.key]} if r.spec.key in notes else {}),
            "severity": str(r.spec.severity),
            "datapoints": r.datapoints,
            "transitions": [_transition(t) for t in r.transitions],
            **(
                {
                    "series_evaluated": r.evaluated,
                    "partial_data_evaluations": r.partial_evaluations,
                    "contributors": [
                        {
                            "attributes": dict(zip(r.contributor_names, group, strict=True)),
                            "transitions": [_transition(t) for t in r.contributors[group]],
                        }
                        for group in sorted(r.contributors)
                    ],
                }
                if r.spec.multi_series
                else {}
            ),
        }
        for r in results
    ]
    return json.dumps(document, indent=2)


def _transition(t: Transition) -> dict[str, Any]:
    return {"time": t.time, "from": str(t.old), "to": str(t.new), "reason": t.reason}
