"""A day of inference serving, per model and the workload that serves it: the table the training
analyzer leaves in the report bucket each day and the weekly report reads the week's seven of
(its serving section: cost per million output tokens, week on week). One layout for the function
that writes and the one that reads.

A row is one model served by one workload (a Deployment, a KServe InferenceService, a Ray
Serve application of a RayService) in one namespace, for one UTC day. Where a workload serves
more than one model, its GPU-hours are split between them by their generated tokens, so the
rows' GPU-hours add up to the workload's.
"""

import json
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from datetime import date
from typing import Any, Final, get_args

#: Characters of a bad value a skipped row's reason shows: the reason goes into the report's
#: HTML and JSON, and a value may be anything the bucket's writer put there.
SHOWN_CHARS: Final = 60

#: Each day's serving table, keyed by the UTC day it covers.
SERVING_KEY: Final = "reports/cluster={cluster}/date={day}/serving.json"


def serving_key(cluster: str, day: date) -> str:
    return SERVING_KEY.format(cluster=cluster, day=day.isoformat())


class ServingTableError(ValueError):
    """A serving table that cannot be read: names the row and the field."""


@dataclass(frozen=True, kw_only=True)
class ServingRow:
    namespace: str
    #: The workload's name: the Deployment's, the InferenceService's or the RayService's.
    workload: str
    #: ``Deployment``, ``InferenceService`` or ``RayService`` (workloads.serving_controller).
    kind: str
    #: The served model's name as the server labels it (vLLM's ``model_name``).
    model: str
    #: Most replicas (pods) seen at once in the day.
    replicas: int
    #: GPU-hours its pods held in the day (the GPU-hour attribution's, all classes but lost).
    gpu_hours: float
    #: What those GPU-hours cost at the settings' price.
    cost_usd: float
    requests: float
    prompt_tokens: float
    generation_tokens: float
    #: Its GPUs' mean power as percent of their enforced limit, over the hours held.
    mean_power_percent: float | None
    #: Mean KV-cache use in percent (vLLM sends a 0-1 fraction).
    mean_kv_cache_percent: float | None
    #: The most requests waiting at once.
    max_waiting: float | None
    preemptions: float
    #: The day's p99 time to first token, seconds, where the server sends it.
    ttft_p99_s: float | None

    @property
    def usd_per_million_output_tokens(self) -> float | None:
        return usd_per_million(self.cost_usd, self.generation_tokens, self.gpu_hours)


def usd_per_million(cost_usd: float, tokens: float, gpu_hours: float) -> float | None:
    """Dollars per million output tokens; None where nothing was generated (a price per token
    of nothing is not a number), or where no GPU-hour was attributed to the tokens (their
    GPUs' series unread): unknown, not free."""
    if tokens <= 0 or gpu_hours <= 0:
        return None
    return cost_usd / tokens * 1e6


_NUMBERS: Final = tuple(
    f.name for f in fields(ServingRow) if f.name not in ("namespace", "workload", "kind", "model")
)
#: The figures a day may lack, read from the row's own annotations (``float | None``).
_OPTIONAL: Final = frozenset(f.name for f in fields(ServingRow) if type(None) in get_args(f.type))


def encode(day: date, rows: Iterable[ServingRow]) -> str:
    return json.dumps({"day": day.isoformat(), "rows": [asdict(row) for row in rows]})


def _shown(value: object) -> str:
    """``repr(value)``, cut to its first :data:`SHOWN_CHARS` characters where longer."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"


def _row(index: int, record: Any) -> ServingRow:
    if not isinstance(record, dict):
        raise ServingTableError(f"row {index} is not an object")
    values: dict[str, Any] = {}
    for name in ("namespace", "workload", "kind", "model"):
        value = record.get(name)
        if not isinstance(value, str) or not value:
            raise ServingTableError(f"row {index}: {name} is not a name: {_shown(value)}")
        values[name] = value
    for name in _NUMBERS:
        value = record.get(name)
        if value is None and name in _OPTIONAL:
            values[name] = None
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise ServingTableError(f"row {index}: {name} is not a number: {_shown(value)}")
        if value < 0:
            raise ServingTableError(f"row {index}: {name} is negative: {_shown(value)}")
        values[name] = int(value) if name == "replicas" else float(value)
    return ServingRow(**values)


@dataclass(frozen=True)
class ServingTable:
    day: date
    rows: list[ServingRow]
    #: Each row that could not be read, named with why ("row 3: gpu_hours is negative: -1"):
    #: skipped, the day's other rows kept.
    skipped: list[str]


def decode(text: str | bytes) -> ServingTable:
    """The day, its rows, and each row that could not be read, named: one bad row costs only
    itself. A document that is no table at all raises ``ServingTableError``."""
    try:
        document = json.loads(text)
        day = date.fromisoformat(document["day"])
        records = document["rows"]
    except (ValueError, KeyError, TypeError) as error:
        raise ServingTableError(f"not a serving table: {error}") from error
    if not isinstance(records, list):
        raise ServingTableError("rows is not a list")
    rows, skipped = [], []
    for index, record in enumerate(records):
        try:
            rows.append(_row(index, record))
        except ServingTableError as error:
            skipped.append(str(error))
    return ServingTable(day, rows, skipped)
