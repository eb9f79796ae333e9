"""``gpu-insights explain-failure``: the cause of a failed job from its log, the lines that
decided it and what to do. Exit status 0 when a cause is named, 1 when none is (the report is
still printed), 2 for a log that cannot be read."""

import argparse
import json
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO, Final

from lambdas.training_analyzer.failure_causes import Cause, Diagnosis, classify_text
from lambdas.training_analyzer.failure_causes.lines import strip_terminal_escapes

#: The most of a log read: its end, where a failure is printed. 32 MiB is some 200,000 lines of
#: the longest kind in the corpus (an OOM killer's report), far past any one failure's.
MAX_BYTES: Final = 32 * 1024 * 1024
_CHUNK: Final = 1024 * 1024


class NoCauseFoundError(Exception):
    """No cause in the lines read; ``output`` is still printed, and the exit status is 1."""

    def __init__(self, output: str) -> None:
        super().__init__("no cause found")
        self.output = output


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log",
        required=True,
        metavar="FILE",
        help="the log: kubectl logs, journalctl -k, dmesg or a CloudWatch Logs export "
        "(- reads standard input)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object")


@dataclass(frozen=True)
class Log:
    """The end of a log as read: its text, and where it lies in the whole log."""

    text: str
    #: Bytes read, and bytes the log holds.
    read: int
    total: int
    #: Lines of the log before the text: the text's line 1 is the log's line ``lines_before + 1``.
    lines_before: int


def _tail(stream: BinaryIO, limit: int) -> tuple[bytes, int, int]:
    """The last ``limit`` bytes of a stream that cannot seek, how many bytes it held, and the
    lines ended in what was dropped before them."""
    kept = bytearray()
    total = dropped_lines = 0
    while chunk := stream.read(_CHUNK):
        total += len(chunk)
        kept += chunk
        if len(kept) > limit:
            dropped_lines += kept.count(b"\n", 0, len(kept) - limit)
            del kept[: len(kept) - limit]
    return bytes(kept), total, dropped_lines


def _lines_in(stream: BinaryIO, size: int) -> int:
    """Lines ended in the first ``size`` bytes of a seekable stream, read in chunks."""
    stream.seek(0, os.SEEK_SET)
    lines = 0
    while size > 0 and (chunk := stream.read(min(_CHUNK, size))):
        lines += chunk.count(b"\n")
        size -= len(chunk)
    return lines


def read_log(where: str) -> Log:
    """The last MAX_BYTES of a log, from a whole line; ValueError names a log that cannot be
    read. Its lines are numbered as the whole log numbers them, however much was skipped."""
    limit = MAX_BYTES
    if where == "-":
        data, total, before = _tail(sys.stdin.buffer, limit)
    else:
        path = Path(where)
        try:
            total = path.stat().st_size
            with path.open("rb") as stream:
                before = _lines_in(stream, total - limit) if total > limit else 0
                stream.seek(max(0, total - limit), os.SEEK_SET)
                data = stream.read(limit)
        except FileNotFoundError as err:
            raise ValueError(f"--log {where}: no such file") from err
        except IsADirectoryError as err:
            raise ValueError(f"--log {where} is a folder, not a log") from err
        except OSError as err:
            raise ValueError(f"--log {where} cannot be read: {err.strerror}") from err
    if b"\x00" in data:
        raise ValueError(f"--log {where} is binary, not a log (it holds NUL bytes)")
    if len(data) < total:  # start at a whole line: the cut one's end is a line before it
        cut = data.find(b"\n") + 1
        before += 1 if cut else 0
        data = data[cut:]
    return Log(data.decode("utf-8", errors="replace"), len(data), total, before)


def numbered_from(diagnosis: Diagnosis, lines_before: int) -> Diagnosis:
    """The diagnosis with its cited lines numbered as the whole log numbers them."""
    if not lines_before:
        return diagnosis
    lines = [replace(c, number=c.number + lines_before) for c in diagnosis.lines]
    return replace(diagnosis, lines=lines)


def _mib(n: int) -> str:
    return f"{n / 1024 / 1024:,.1f} MiB"


def _text(diagnosis: Diagnosis, note: str) -> str:
    out = [f"Cause: {diagnosis.title} ({diagnosis.cause.value})"]
    if diagnosis.lines:
        out.append("Lines that decided it:")
        out += [f"  {c.number}: {c.text}" for c in diagnosis.lines]
    if diagnosis.also_seen:
        out.append("Also in the log: " + ", ".join(c.value for c in diagnosis.also_seen))
    if diagnosis.nodes:
        out.append("Node: " + ", ".join(diagnosis.nodes))
    out.append(f"What to do: {diagnosis.recommendation}")
    if diagnosis.signature:
        out.append(f"Signature: {diagnosis.signature}")
    lines = "line" if diagnosis.lines_read == 1 else "lines"
    out.append(f"Read {diagnosis.lines_read:,} {lines}{note}.")
    return "\n".join(out)


def run(args: argparse.Namespace) -> str:
    log = read_log(args.log)
    diagnosis = numbered_from(classify_text(log.text), log.lines_before)
    read, total = log.read, log.total
    truncated = read < total
    if args.json:
        document = diagnosis.to_json()
        document["bytes_read"] = read
        document["bytes_total"] = total
        document["truncated"] = truncated
        output = json.dumps(document, indent=2)
    else:
        note = f" (the last {_mib(read)} of {_mib(total)})" if truncated else ""
        # Log text reaches a terminal: no escape sequence in it may move, colour or link.
        output = strip_terminal_escapes(_text(diagnosis, note), keep="\n")
    if diagnosis.cause is Cause.UNKNOWN:
        raise NoCauseFoundError(output)
    return output
