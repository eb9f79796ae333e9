"""Metric history for the backtest: samples of named series, from a file or from CloudWatch.

OTel mode's history is series as CloudWatch's PromQL API returns them (cli/backtest/
promql_history.py, docs/history.md): a file of them, or lines of them among the lines below,
is read by ``read_history_file``. Classic's (and the EMF sink's), one JSON object per line: an
EMF document as the exporter writes it, or a sample of one series at one time:

    {"namespace": "GpuInsights", "metric": "gpu_allocated_power_utilization",
     "dimensions": {"ClusterName": "train", "NodeName": "n1", "GpuIndex": "0"},
     "timestamp": "2025-11-28T12:00:00Z", "value": 12.5}

An EMF document with no metric directive (``CloudWatchMetrics`` empty) is a log line and no
metric: the exporter's XID event line in OTel mode (exporter/xid_event_log.py), which the
notifier pages from the log; it is kept as such (``History.log_lines``).

``timestamp`` is ISO 8601 with a zone, or seconds since the epoch. Gaps are simply missing
data, which each alarm treats as its definition says. A malformed line (bad JSON, an
interrupted export's last line, numbers no float holds, JSON nested past Python's recursion
limit) is named, never silently dropped: in a file (``read_history_file``) it is skipped and
named in ``History.skipped`` beside the PromQL series skipped, the rest read, since one bad
line must not cost a user the others; ``read_history`` (the demo's own lines) refuses it.
"""

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cli.backtest.promql_history import PromQLHistory, is_promql_record, read_records
from gpu_insights_agent.emf.document import EmfDocument, metric_data, parse_emf_line
from lambdas.shared.events import check_epoch, parse_utc

Dimensions = frozenset[tuple[str, str]]


@dataclass(frozen=True, slots=True)
class Sample:
    namespace: str
    metric: str
    dimensions: Dimensions
    timestamp: float
    value: float


class HistoryError(ValueError):
    """A history line that cannot be read; the message names the line and the problem."""


def _timestamp(raw: object) -> float:
    if isinstance(raw, bool):
        raise ValueError("timestamp must be ISO 8601 or epoch seconds")
    if isinstance(raw, int | float):
        return check_epoch(float(raw), "timestamp")
    if isinstance(raw, str):
        return parse_utc(raw, "timestamp").timestamp()
    raise ValueError("timestamp must be ISO 8601 or epoch seconds")


def _sample(record: Any) -> Sample:
    if not isinstance(record, dict):
        raise ValueError("each line must be a JSON object")
    missing = [k for k in ("namespace", "metric", "timestamp", "value") if k not in record]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    dimensions = record.get("dimensions", {})
    if not isinstance(dimensions, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in dimensions.items()
    ):
        raise ValueError("dimensions must map names to string values")
    value = record["value"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"value {value!r} is not a finite number")
    if not isinstance(record["namespace"], str) or not isinstance(record["metric"], str):
        raise ValueError("namespace and metric must be strings")
    return Sample(
        namespace=record["namespace"],
        metric=record["metric"],
        dimensions=frozenset(dimensions.items()),
        timestamp=_timestamp(record["timestamp"]),
        value=float(value),
    )


#: Digits of the largest finite float (about 1.8e308): a longer integer is no metric value.
_MAX_INT_DIGITS = 309


def _bounded_int(text: str) -> int:
    """A JSON integer, or ValueError naming its size: Python refuses over 4,300 digits with
    advice for programmers, and one of 310 to 4,300 digits fits no float a sample holds."""
    digits = len(text.lstrip("-"))
    if digits > _MAX_INT_DIGITS:
        raise ValueError(f"an integer of {digits} digits is too large for a metric value")
    return int(text)


@dataclass
class History:
    """What a history file holds: CloudWatch metric samples, PromQL series, and log lines."""

    samples: list[Sample] = field(default_factory=list)
    promql: PromQLHistory = field(default_factory=PromQLHistory)
    #: EMF documents with no metric directive (the exporter's XID lines in OTel mode).
    log_lines: list[EmfDocument] = field(default_factory=list)
    #: Each line that could not be read, named with the reason (a file's, not refused).
    bad_lines: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.samples or self.promql.series or self.log_lines)

    @property
    def skipped(self) -> list[str]:
        """Every line and series skipped, each named with the reason."""
        return [*self.bad_lines, *self.promql.skipped]


def read_history(lines: Iterable[str], *, source: str = "history") -> list[Sample]:
    """Sample lines, or EMF lines as the exporter writes them (``--sink stdout``), or both."""
    return _read_lines(lines, source, strict=True).samples


def read_history_file(text: str, *, source: str = "history") -> History:
    """A whole history file: one PromQL response (or a JSON array of its series), pretty
    printed or not, or JSON lines of samples, EMF documents and PromQL responses or series.
    A byte order mark (an editor's UTF-8 with BOM) is no part of the JSON."""
    text = text.removeprefix("\ufeff")
    if text.lstrip()[:1] in ("{", "["):
        try:
            whole = json.loads(text, parse_int=_bounded_int)
        except (ValueError, RecursionError):
            whole = None  # JSON lines (or bad JSON: each line says where)
        if isinstance(whole, list):
            records = [(f"{source} item {i + 1}", entry) for i, entry in enumerate(whole)]
            return History(promql=read_records(records))
        if is_promql_record(whole):
            return History(promql=read_records([(source, whole)]))
    return _read_lines(text.splitlines(), source, strict=False)


def _read_lines(lines: Iterable[str], source: str, *, strict: bool) -> History:
    """The lines' samples, series and log lines; a bad line raises ``HistoryError`` where
    ``strict``, else is named in ``History.bad_lines`` and the rest read."""
    history = History()
    promql: list[tuple[str, object]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            _read_line(line, f"{source} line {number}", history, promql)
        except HistoryError as err:
            if strict:
                raise
            history.bad_lines.append(str(err))
    history.promql = read_records(promql)
    return history


def _read_line(line: str, where: str, history: History, promql: list[tuple[str, object]]) -> None:
    """One line into ``history`` (a PromQL record into ``promql``), or ``HistoryError`` that
    names it and its problem."""
    try:
        record = json.loads(line, parse_int=_bounded_int)
        if is_promql_record(record):
            promql.append((where, record))
        elif isinstance(record, dict) and _log_line(record):
            history.log_lines.append(record)
        elif isinstance(record, dict) and "_aws" in record:
            history.samples.extend(_checked(s) for s in samples_from_emf([parse_emf_line(line)]))
        else:
            history.samples.append(_sample(record))
    except (ValueError, TypeError) as err:
        raise HistoryError(f"{where}: {err}") from err
    except OverflowError as err:  # an integer past a float's range (10**400)
        raise HistoryError(f"{where}: a number is too large for a float ({err})") from err
    except RecursionError as err:  # JSON arrays or objects nested thousands deep
        raise HistoryError(
            f"{where}: JSON nested too deeply to be a sample or EMF document"
        ) from err


def _log_line(record: dict[str, Any]) -> bool:
    """An EMF document whose ``CloudWatchMetrics`` is empty: valid EMF (the array has no
    minimum length, ../shared/reference/cloudwatch-emf.schema.json) and a log line only, with
    its ``_aws.Timestamp`` held to a sample's rules."""
    aws = record.get("_aws")
    if not isinstance(aws, dict) or aws.get("CloudWatchMetrics") != []:
        return False
    stamp = aws.get("Timestamp")
    if isinstance(stamp, bool) or not isinstance(stamp, int):
        raise ValueError(f"_aws.Timestamp {stamp!r} is not an integer of milliseconds")
    check_epoch(stamp / 1000, "_aws.Timestamp (as seconds)")
    return True


def _checked(sample: Sample) -> Sample:
    """An EMF line's sample held to a sample line's rules: a time in range, a finite value
    (CloudWatch refuses NaN and infinity, MetricDatum)."""
    check_epoch(sample.timestamp, "_aws.Timestamp (as seconds)")
    if not math.isfinite(sample.value):
        raise ValueError(f"{sample.metric} {sample.value!r} is not a finite number")
    return sample


def samples_from_emf(documents: Iterable[EmfDocument]) -> list[Sample]:
    """What CloudWatch would store from these EMF documents (one sample per dimension set)."""
    samples = []
    for document in documents:
        namespace = document["_aws"]["CloudWatchMetrics"][0]["Namespace"]
        for datum in metric_data(document):
            samples.append(
                Sample(
                    namespace=namespace,
                    metric=datum["MetricName"],
                    dimensions=frozenset((d["Name"], d["Value"]) for d in datum["Dimensions"]),
                    timestamp=float(datum["Timestamp"]),
                    value=float(datum["Value"]),
                )
            )
    return samples


def to_json_line(sample: Sample) -> str:
    return json.dumps(
        {
            "namespace": sample.namespace,
            "metric": sample.metric,
            "dimensions": dict(sorted(sample.dimensions)),
            "timestamp": datetime.fromtimestamp(sample.timestamp, UTC).isoformat(),
            "value": sample.value,
        }
    )
