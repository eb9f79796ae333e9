"""``gpu-insights backtest``: the deployed alarm definitions over a history file or CloudWatch."""

import argparse
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from alarms.backtest import BacktestResult, backtest, history_end, report
from alarms.catalog import gpu_alarms
from alarms.cloudwatch_history import fetch_samples
from alarms.evaluator import Transition
from alarms.history import read_history
from alarms.silence_history import NOTE, derive_silence, has_silence
from cdk.function_configs import silence_config
from cdk.settings import settings_from_context
from cli.settings_args import add_settings_arguments, context_from_args
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
    add_settings_arguments(parser, context_help="a setting, as given to cdk synth (repeatable)")
    parser.add_argument("--region", help="AWS region")
    parser.add_argument("--json", action="store_true", help="print the transitions as JSON")


def _time(raw: str | None, name: str) -> float | None:
    return None if raw is None else parse_utc(raw, f"--{name}").timestamp()


#: CloudWatch keeps metrics for 15 months (455 days): no longer replay is meaningful.
MAX_DAYS = 455


def run(args: argparse.Namespace) -> str:
    settings = settings_from_context(context_from_args(args))
    specs = gpu_alarms(settings.alarm_settings())
    note = ""
    start, end = _time(args.start, "start"), _time(args.end, "end")
    if not 0 < args.hours <= MAX_DAYS * 24:
        raise ValueError(f"--hours {args.hours} must be above 0 up to {MAX_DAYS * 24}")
    if args.history is not None:
        try:
            with args.history.open(encoding="utf-8") as lines:
                samples = read_history(lines, source=str(args.history))
        except OSError as err:
            raise ValueError(f"cannot read {args.history}: {err.strerror}") from err
        except UnicodeDecodeError as err:
            raise ValueError(
                f"--history {args.history} is not UTF-8 text (byte {err.start}): "
                "expected JSON lines"
            ) from err
        if not samples:
            raise ValueError(f"{args.history} holds no samples")
        start = start if start is not None else min(s.timestamp for s in samples)
        end = end if end is not None else history_end(specs, samples)
        if not has_silence(samples):
            # The exporter's documents alone: the silence check's rule, run over them.
            first = min(s.timestamp for s in samples)
            samples += derive_silence(samples, silence_config(settings), start=first, end=end)
            note = f"\n\n{NOTE}"
    else:
        from lambdas.shared.aws_clients import INTERACTIVE, client, new_session

        end = end if end is not None else time.time()
        start = start if start is not None else end - args.hours * 3600
        session = new_session(profile_name=args.profile, region_name=args.region)
        samples = fetch_samples(
            client("cloudwatch", session=session, config=INTERACTIVE), specs, start=start, end=end
        )
    if end <= start:
        raise ValueError(
            f"the replayed range ends ({_iso(end)}) before it starts ({_iso(start)}): "
            "--end must be after --start"
        )
    if end - start > MAX_DAYS * 86_400:
        raise ValueError(
            f"the replayed range must be above 0 up to {MAX_DAYS} days (CloudWatch's retention), "
            f"not {(end - start) / 86_400:,.1f} days"
        )
    results = backtest(specs, samples, start=start, end=end)
    return _as_json(results) if args.json else report(results, start=start, end=end) + note


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _as_json(results: list[BacktestResult]) -> str:
    document: list[dict[str, Any]] = [
        {
            "alarm": r.spec.key,
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
