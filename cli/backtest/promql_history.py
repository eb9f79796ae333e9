"""OTel mode's metric history: series samples as CloudWatch's PromQL API returns them (docs/
history.md), read for a replay on a local Prometheus (``backtest --history``, ``analyze
training --history``).

CloudWatch's ``/api/v1/query_range`` is Prometheus-compatible ("QueryMetrics", CloudWatch User
Guide, https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-PromQL-API-QueryMetrics.html;
its engine "based on the Prometheus 3.0 specification", CloudWatch-PromQL.html), and answers as
Prometheus's HTTP API does: ``{"status": "success", "data": {"resultType": "matrix", "result":
[{"metric": {"__name__": ..., <label>: <value>, ...}, "values": [[<unix_time>,
"<sample_value>"], ...]}, ...]}}`` ("Range vectors are returned as result type matrix", "Range
vectors", https://prometheus.io/docs/prometheus/latest/querying/api/). Labels keep CloudWatch's
names (``@resource.k8s.pod.name``: "PromQL querying", CloudWatch-PromQL-Querying.html).

A file holds one such response, or several (one a line, as one export query a metric writes
them), or the ``result`` entries alone, one a line. A series that cannot be read is skipped and
named, the others kept: one bad series never costs the replay of the rest.
"""

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from cli.demo.promql import Sample
from lambdas.shared.events import check_epoch

#: Where the metric's name is in a series' labels (Prometheus's HTTP API).
NAME: Final = "__name__"
#: A metric name Prometheus 2 (Debian's, the local engine) stores: its exposition formats'
#: ``[a-zA-Z_:][a-zA-Z0-9_:]*`` ("Metric names and labels", prometheus.io data model).
_LEGACY_NAME: Final = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
#: A skipped series' labels are shown cut to this many characters.
_SHOWN: Final = 160


@dataclass(frozen=True)
class HistorySeries:
    """One series of the file: its metric name, its other labels, its (epoch seconds, value)
    samples in time order."""

    metric: str
    labels: Mapping[str, str]
    points: tuple[tuple[float, float], ...]


@dataclass
class PromQLHistory:
    series: list[HistorySeries] = field(default_factory=list)
    #: Each series (or response) skipped, named with the reason.
    skipped: list[str] = field(default_factory=list)

    @property
    def samples(self) -> int:
        return sum(len(s.points) for s in self.series)

    def span(self) -> tuple[float, float]:
        """The first and last sample's times."""
        times = [t for s in self.series for t, _ in (s.points[0], s.points[-1])]
        return min(times), max(times)

    def as_samples(self) -> Iterator[Sample]:
        """Each sample as the local engine's exposition takes it (cli/demo/promql.py)."""
        for series in self.series:
            for at, value in series.points:
                yield series.metric, series.labels, at, value


def is_promql_record(record: object) -> bool:
    """Whether a JSON value is a query response (``data.resultType``, or an error's
    ``status`` and ``errorType``) or a result entry (``metric`` beside ``values``)."""
    if not isinstance(record, dict):
        return False
    if isinstance(record.get("data"), dict) and "resultType" in record["data"]:
        return True
    # An error answer: Prometheus's HTTP API says "status": "error" with "error" (and
    # "errorType", which a proxy's answer may leave out).
    if record.get("status") == "error" or ("status" in record and "errorType" in record):
        return True
    return "metric" in record and ("values" in record or "histograms" in record)


def _shown(labels: object) -> str:
    text = json.dumps(labels, sort_keys=True, ensure_ascii=True)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _value(raw: object) -> float:
    """A sample value: Prometheus writes it as a string ("NaN", "+Inf" among them)."""
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise ValueError(f"value {raw!r} is not a number written as a string")
    try:
        value = float(raw)
    except ValueError as err:
        raise ValueError(f"value {raw!r} is not a number") from err
    return value


def _series(entry: object) -> HistorySeries:
    """One result entry, or ValueError naming what is wrong with it."""
    if not isinstance(entry, dict):
        raise ValueError("a series must be a JSON object with metric and values")
    labels = entry.get("metric")
    if not isinstance(labels, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        raise ValueError("metric must map label names to string values")
    name = labels.get(NAME)
    if not name:
        raise ValueError(f"no {NAME} label: the metric's name is needed to replay it")
    if not _LEGACY_NAME.fullmatch(name):
        raise ValueError(
            f"metric name {name!r} is not one Prometheus 2 stores ([a-zA-Z_:][a-zA-Z0-9_:]*)"
        )
    if "histograms" in entry and "values" not in entry:
        raise ValueError(
            "native histogram samples: the local engine (Prometheus 2.42) takes float "
            "samples only; export the histogram's classic _bucket series"
        )
    values = entry.get("values")
    if not isinstance(values, list) or not values:
        raise ValueError('values must be a non-empty list of [unix_time, "value"] pairs')
    points: list[tuple[float, float]] = []
    for i, pair in enumerate(values):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ValueError(f'values[{i}] {str(pair)[:40]} is not a [unix_time, "value"] pair')
        at = pair[0]
        if isinstance(at, bool) or not isinstance(at, int | float) or not math.isfinite(at):
            raise ValueError(f"values[{i}] time {at!r} is not unix seconds")
        try:
            points.append((check_epoch(float(at), f"values[{i}] time"), _value(pair[1])))
        except ValueError as err:
            raise ValueError(f"values[{i}]: {err}") from err
    rest = {k: v for k, v in labels.items() if k != NAME}
    return HistorySeries(metric=name, labels=rest, points=tuple(sorted(points)))


def _entries(record: dict[str, Any], where: str, skipped: list[str]) -> list[tuple[str, object]]:
    """The result entries of a record (a response, or one entry), each with where it is."""
    if "data" not in record and "status" not in record:
        return [(where, record)]
    if record.get("status") not in (None, "success"):
        skipped.append(
            f"{where}: a response with status {str(record.get('status'))[:20]!r} "
            f"({str(record.get('error', ''))[:120]}): none of its series read"
        )
        return []
    data = record.get("data")
    data = data if isinstance(data, dict) else {}
    if data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        skipped.append(
            f"{where}: resultType {str(data.get('resultType'))[:20]!r}, not a matrix of "
            "series (export with /api/v1/query_range): none of its series read"
        )
        return []
    return [(f"{where} series {i + 1}", entry) for i, entry in enumerate(data["result"])]


def read_records(records: Iterable[tuple[str, object]]) -> PromQLHistory:
    """The series of ``records`` (each with where it is in the file: "line 3"); a series that
    cannot be read is skipped and named, the rest kept. The same series in two records
    (two exports that overlap) is one series, its samples merged."""
    history = PromQLHistory()
    merged: dict[tuple[str, tuple[tuple[str, str], ...]], dict[float, float]] = {}
    for where, record in records:
        if not isinstance(record, dict):
            history.skipped.append(f"{where}: not a JSON object")
            continue
        for place, entry in _entries(record, where, history.skipped):
            try:
                series = _series(entry)
            except ValueError as err:
                labels = entry.get("metric") if isinstance(entry, dict) else entry
                history.skipped.append(f"{place} {_shown(labels)}: {err}")
                continue
            key = (series.metric, tuple(sorted(series.labels.items())))
            merged.setdefault(key, {}).update(series.points)
    history.series = [
        HistorySeries(metric=metric, labels=dict(labels), points=tuple(sorted(points.items())))
        for (metric, labels), points in sorted(merged.items())
    ]
    return history


def to_response(series: Iterable[HistorySeries]) -> dict[str, Any]:
    """The series as one query_range response, as CloudWatch's API returns them."""
    return {
        "status": "success",
        "data": {
            "resultType": "matrix",
            "result": [
                {
                    "metric": {NAME: s.metric, **dict(sorted(s.labels.items()))},
                    "values": [[at, _number(value)] for at, value in s.points],
                }
                for s in series
            ],
        },
    }


def _number(value: float) -> str:
    """A value as Prometheus writes it (strconv.FormatFloat 'f', -1: "NaN", "+Inf", "1.5")."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value) if value != int(value) else str(int(value))
