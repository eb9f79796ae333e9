"""The root cause of a failure from its log lines, with the lines that decided it."""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from lambdas.training_analyzer.failure_causes.causes import ADVICE, Cause, precedence
from lambdas.training_analyzer.failure_causes.lines import LogLine, read_lines
from lambdas.training_analyzer.failure_causes.python_exception import (
    PythonException,
    last_exception,
)
from lambdas.training_analyzer.failure_causes.rules import Match, match_line
from lambdas.training_analyzer.failure_causes.signature import signature

#: Lines cited for the cause: enough to show it, few enough to read.
MAX_CITED: Final = 5


@dataclass(frozen=True)
class CitedLine:
    number: int
    text: str


@dataclass(frozen=True)
class Diagnosis:
    cause: Cause
    title: str
    recommendation: str
    lines: list[CitedLine]
    signature: str
    lines_read: int
    #: Specifics: an XID's code, bus and meaning; an exception's type and last frame.
    detail: dict[str, str] = field(default_factory=dict)
    #: Other causes the lines named, nearest the root first (what the root cause explains).
    also_seen: list[Cause] = field(default_factory=list)
    #: Nodes named by the cited lines' envelopes (Container Insights records).
    nodes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "cause": self.cause.value,
            "title": self.title,
            "recommendation": self.recommendation,
            "lines": [{"number": c.number, "text": c.text} for c in self.lines],
            "signature": self.signature,
            "detail": self.detail,
            "also_seen": [c.value for c in self.also_seen],
            "nodes": self.nodes,
            "lines_read": self.lines_read,
        }


def _rank(match: Match) -> int:
    return precedence(match.cause, fatal=match.fatal)


def _cite(lines: Sequence[LogLine]) -> list[CitedLine]:
    cited: dict[int, CitedLine] = {}
    for line in lines:
        if len(cited) == MAX_CITED:
            break
        cited.setdefault(line.number, CitedLine(line.number, line.text.strip()))
    return list(cited.values())


#: "NVRM: The NVIDIA GPU 0000:b3:00.0" opens the driver's multi-line bus-loss message, whose
#: third line says "fallen off the bus" (NVIDIA/NVSentinel#155).
_GPU_NAMED: Final = re.compile(
    r"NVRM: (?:The NVIDIA )?GPU (?:at PCI:)?"
    r"(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?)"
)
#: Lines back from a bus-loss line to look for the GPU it names.
_BUS_LOOKBACK: Final = 3


def _matches(lines: Sequence[LogLine]) -> list[Match]:
    """Each line's cause; an XID printed without its bus takes it from the lines before."""
    matches: list[Match] = []
    for index, line in enumerate(lines):
        match = match_line(line)
        if match is None:
            continue
        if match.cause is Cause.GPU_XID and not match.detail["pci_bus_id"]:
            for before in reversed(lines[max(0, index - _BUS_LOOKBACK) : index]):
                named = _GPU_NAMED.search(before.text)
                if named:
                    detail = {**match.detail, "pci_bus_id": named["pci"].lower()}
                    match = Match(match.cause, line, match.fatal, detail)
                    break
        matches.append(match)
    return matches


def classify_lines(lines: Sequence[LogLine]) -> Diagnosis:
    """The cause nearest the root among those the lines name (see causes.precedence)."""
    matches = _matches(lines)
    exception = last_exception(lines)
    read = len({line.number for line in lines})
    if not matches and exception is None:
        advice = ADVICE[Cause.UNKNOWN]
        return Diagnosis(Cause.UNKNOWN, advice.title, advice.what_to_do, [], "", read)
    ranks = [_rank(m) for m in matches]
    best = min(ranks, default=precedence(Cause.APPLICATION_EXCEPTION))
    seen = sorted({(rank, m.cause) for rank, m in zip(ranks, matches, strict=True)})
    also = list(dict.fromkeys(cause for rank, cause in seen if rank != best))
    if best >= precedence(Cause.APPLICATION_EXCEPTION) and exception is not None:
        return _exception_diagnosis(exception, read, also)
    deciding = [m for rank, m in zip(ranks, matches, strict=True) if rank == best]
    cause = deciding[0].cause
    advice = ADVICE[cause]
    detail = dict(deciding[0].detail)
    recommendation = advice.what_to_do
    title = advice.title
    if cause is Cause.GPU_XID:
        bus = detail["pci_bus_id"] or "(bus not printed)"
        title = f"XID {detail['xid']} on GPU {bus}: {detail['meaning']}"
        if detail["nvidia_action"]:
            recommendation += (
                f" NVIDIA's action for XID {detail['xid']}: {detail['nvidia_action']}."
            )
    elif "cuda_error" in detail:
        title = f"{title}: {detail['cuda_message']} ({detail['cuda_error']}, {detail['cuda_code']})"
    if exception is not None and cause is not Cause.APPLICATION_EXCEPTION:
        detail.setdefault("exception", exception.type)
    cited = _cite([m.line for m in deciding])
    return Diagnosis(
        cause=cause,
        title=title,
        recommendation=recommendation,
        lines=cited,
        signature=signature(cited[0].text),
        lines_read=read,
        detail=detail,
        also_seen=[c for c in also if c is not cause],
        nodes=sorted({m.line.node for m in deciding if m.line.node}),
    )


def _exception_diagnosis(exception: PythonException, read: int, also: list[Cause]) -> Diagnosis:
    advice = ADVICE[Cause.APPLICATION_EXCEPTION]
    frame = exception.frame
    cited = _cite([exception.line] + ([frame] if frame is not None else []))
    cited.sort(key=lambda c: c.number)
    detail = {"exception": exception.type, "message": exception.message}
    where = ""
    if frame is not None:
        detail["last_frame"] = frame.text.strip()
        where = f" in {exception.function}"
    return Diagnosis(
        cause=Cause.APPLICATION_EXCEPTION,
        title=f"{advice.title}: {exception.type}{where}",
        recommendation=advice.what_to_do,
        lines=cited,
        signature=signature(f"{exception.type}: {exception.message}{where}"),
        lines_read=read,
        detail=detail,
        also_seen=[c for c in also if c is not Cause.APPLICATION_EXCEPTION],
        nodes=sorted({exception.line.node} - {""}),
    )


def classify_text(text: str) -> Diagnosis:
    """Classify a whole log as read from a file, stdin or a CloudWatch Logs export."""
    return classify_lines(read_lines(text))
