"""``gpu-insights explain-failure``: the cause of a failed job from its log, the lines that
decided it and what to do. Exit status 0 when a cause is named, 1 when none is (the report is
still printed), 2 for a log that cannot be read."""

import argparse
import json
import os
import sys
from pathlib import Path
from typing import BinaryIO, Final

from lambdas.training_analyzer.failure_causes import Cause, Diagnosis, classify_text

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


def _tail(stream: BinaryIO) -> tuple[bytes, int]:
    """The last MAX_BYTES of a stream that cannot seek, and how many bytes it held."""
    kept = bytearray()
    total = 0
    while chunk := stream.read(_CHUNK):
        total += len(chunk)
        kept += chunk
        if len(kept) > MAX_BYTES:
            del kept[: len(kept) - MAX_BYTES]
    return bytes(kept), total


def read_log(where: str) -> tuple[str, int, int]:
    """(text, bytes read, bytes the log holds); ValueError names a log that cannot be read."""
    if where == "-":
        data, total = _tail(sys.stdin.buffer)
    else:
        path = Path(where)
        try:
            total = path.stat().st_size
            with path.open("rb") as stream:
                if total > MAX_BYTES:
                    stream.seek(total - MAX_BYTES, os.SEEK_SET)
                data = stream.read(MAX_BYTES)
        except FileNotFoundError as err:
            raise ValueError(f"--log {where}: no such file") from err
        except IsADirectoryError as err:
            raise ValueError(f"--log {where} is a folder, not a log") from err
        except OSError as err:
            raise ValueError(f"--log {where} cannot be read: {err.strerror}") from err
    if b"\x00" in data:
        raise ValueError(f"--log {where} is binary, not a log (it holds NUL bytes)")
    if len(data) < total:  # start at a whole line
        data = data[data.find(b"\n") + 1 :]
    return data.decode("utf-8", errors="replace"), len(data), total


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
    text, read, total = read_log(args.log)
    diagnosis = classify_text(text)
    truncated = read < total
    if args.json:
        document = diagnosis.to_json()
        document["bytes_read"] = read
        document["bytes_total"] = total
        document["truncated"] = truncated
        output = json.dumps(document, indent=2)
    else:
        note = f" (the last {_mib(read)} of {_mib(total)})" if truncated else ""
        output = _text(diagnosis, note)
    if diagnosis.cause is Cause.UNKNOWN:
        raise NoCauseFoundError(output)
    return output
