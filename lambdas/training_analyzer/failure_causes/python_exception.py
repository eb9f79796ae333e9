"""The last exception a Python program printed, with the frame it was raised in."""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from lambdas.training_analyzer.failure_causes.lines import LogLine

#: "  File "/app/train.py", line 51, in main" (indentation may be lost to a stripped prefix).
_FRAME: Final = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
#: "torch.OutOfMemoryError: CUDA out of memory. ..." — a dotted name ending as Python's
#: exception classes do, then ": message" or nothing.
_EXCEPTION: Final = re.compile(
    r"^\s*(?P<type>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt))"
    r"(?::\s*(?P<message>.*))?$"
)
_TRACEBACK: Final = "Traceback (most recent call last):"
#: Launchers that report a child's failure after the child's own traceback; the child's
#: exception is the one that explains it (torch.distributed.elastic's ChildFailedError).
_WRAPPERS: Final = frozenset({"torch.distributed.elastic.multiprocessing.errors.ChildFailedError"})


@dataclass(frozen=True)
class PythonException:
    type: str
    message: str
    line: LogLine
    #: The innermost frame printed before it: where it was raised, or None without a traceback.
    frame: LogLine | None
    function: str


def last_exception(lines: Sequence[LogLine]) -> PythonException | None:
    """The last exception in the log that a launcher did not merely wrap."""
    found: PythonException | None = None
    frame: LogLine | None = None
    function = ""
    for line in lines:
        if _TRACEBACK in line.text:
            frame, function = None, ""
            continue
        framed = _FRAME.match(line.text)
        if framed:
            frame, function = line, framed["func"]
            continue
        raised = _EXCEPTION.match(line.text)
        if raised and raised["type"] not in _WRAPPERS:
            found = PythonException(
                type=raised["type"],
                message=(raised["message"] or "").strip(),
                line=line,
                frame=frame,
                function=function,
            )
            frame, function = None, ""
    return found
