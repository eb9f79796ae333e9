"""Log lines as people have them: ``kubectl logs`` (with ``--timestamps`` or ``--prefix``),
``journalctl -k``, ``dmesg`` (with or without ``-T``), torchrun's rank prefixes, CloudWatch Logs
exports (a timestamp before each message, or the JSON of ``aws logs filter-log-events``), and
Container Insights' Fluent Bit records: JSON events whose text is in ``log`` (application log
group) or ``message`` (host and dataplane log groups), per the Container Insights Fluent Bit
manifest (aws-samples/amazon-cloudwatch-container-insights,
k8s-deployment-manifest-templates/deployment-mode/daemonset/container-insights-monitoring/
fluent-bit/fluent-bit.yaml: the kubernetes filter on ``application.*``, ``Key message`` for
/var/log/dmesg, the syslog parser's ``message``, and the dataplane's ``MESSAGE`` renamed
``message``). Each line is reduced to the text its program printed, keeping where it came
from, with no terminal escape sequence (a coloured traceback reads as the plain one)."""

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final


@dataclass(frozen=True)
class LogLine:
    #: 1-based line number in what was read (an event's number in a JSON export).
    number: int
    #: The line as read.
    raw: str
    #: The text its program printed, prefixes and envelope removed.
    text: str
    #: The node the line came from, where its envelope says (Fluent Bit's kubernetes.host,
    #: the syslog parser's host, the dataplane's hostname).
    node: str = ""


# Prefixes, removed one after another from the start of a line. Each is the form the named
# tool prints; examples are in tests/data/failure_logs/corpus.json.
_PREFIX_FORMS: Final = (
    # The CloudWatch console's rows copied as text: "  | 2024-11-28T07:42:11.527Z | ..."
    r"^\s*\|\s+",
    # CloudWatch Logs export / kubectl logs --timestamps: RFC 3339 time, then a space or tab.
    r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?[ \t|]+",
    # kubectl logs --prefix: [pod/NAME/CONTAINER]
    r"^\[pod/[^\]\s]+\]\s+",
    # journalctl / syslog: "Mar 30 08:24:00 host ident[pid]: "
    r"^[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \S+ [\w./-]+(?:\[\d+\])?: ",
    # dmesg -T: "[Sun Mar 30 08:24:00 2025] "
    r"^\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}\] ?",
    # dmesg: "[ 1843.308145] "
    r"^\[\s*\d+\.\d+\] ?",
    # torchrun / accelerate rank prefixes: "[rank0]:", "[default0]:", "0: "
    r"^\[(?:rank|default)\d+\]:\s?",
    # PyTorch's glog prefix on watchdog lines: "[E321 02:07:08.408271257 File.cpp:607] "
    r"^\[[EWIF]\d{3,4} \d{2}:\d{2}:\d{2}\.\d+ [\w./]+:\d+\] ",
)
#: One pattern for all of them, so that a line costs one match per prefix it has.
_PREFIX: Final = re.compile("|".join(f"(?:{form})" for form in _PREFIX_FORMS))
_MAX_PREFIXES: Final = 6


#: Terminal escape sequences (ECMA-48, the standard xterm and its kin follow): CSI (ESC [ or
#: 0x9B, parameters, intermediates, a final byte: colours, cursor moves), the string controls
#: OSC, DCS, SOS, PM and APC (ESC ] P X ^ _ or 0x9D 0x90 0x98 0x9E 0x9F, ended by BEL or ST:
#: OSC 8 hyperlinks, window titles), and ESC with intermediates and a final byte.
_ESCAPES: Final = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]"
)
#: What is left of the C0 and C1 control characters (a lone ESC, a carriage return that would
#: overwrite the line, a backspace), but tab.
_CONTROLS: Final = "".join(chr(c) for c in (*range(0x00, 0x20), *range(0x7F, 0xA0)) if c != 9)
_ANY_CONTROL: Final = re.compile(f"[{re.escape(_CONTROLS)}]")


def strip_terminal_escapes(text: str, *, keep: str = "") -> str:
    """The text with terminal escape sequences and control characters removed (but tab and
    the characters in ``keep``): a log line printed to a terminal cannot recolour, move the
    cursor, retitle the window or hide a link behind other text."""
    if not _ANY_CONTROL.search(text):  # most lines: nothing to remove
        return text
    text = _ESCAPES.sub("", text)
    return text.translate({ord(c): None for c in _CONTROLS if c not in keep})


def strip_prefixes(text: str) -> str:
    for _ in range(_MAX_PREFIXES):
        stripped = _PREFIX.sub("", text, count=1)
        if stripped == text:
            break
        text = stripped
    return text


def _envelope(raw: str) -> tuple[str, str] | None:
    """(text, node) of a Fluent Bit JSON record, or None for a line that is not one."""
    start = raw.find("{")
    if start < 0 or not raw.rstrip().endswith("}"):
        return None
    try:
        record = json.loads(raw[start:])
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the stack: a line
        return None
    if not isinstance(record, dict):
        return None
    for key in ("log", "message", "MESSAGE"):
        value = record.get(key)
        if isinstance(value, str):
            return value.rstrip("\n"), _node(record)
    return None


def _node(record: dict[str, Any]) -> str:
    kubernetes = record.get("kubernetes")
    if isinstance(kubernetes, dict) and isinstance(kubernetes.get("host"), str):
        return str(kubernetes["host"])
    for key in ("host", "hostname"):
        if isinstance(record.get(key), str):
            return str(record[key])
    return ""


def _export_events(text: str) -> list[str] | None:
    """The messages of ``aws logs filter-log-events`` / ``get-log-events`` JSON output."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the stack: lines
        return None
    events = document.get("events") if isinstance(document, dict) else None
    if not isinstance(events, list):
        return None
    return [str(e.get("message", "")) for e in events if isinstance(e, dict)]


def read_lines(text: str) -> list[LogLine]:
    """Every line of a log, each reduced to what its program printed."""
    exported = _export_events(text)
    raws: Iterable[str] = exported if exported is not None else text.splitlines()
    return list(_parse(raws))


def _parse(raws: Iterable[str]) -> Iterator[LogLine]:
    for number, raw in enumerate(raws, start=1):
        body = strip_prefixes(strip_terminal_escapes(raw))
        node = ""
        envelope = _envelope(body)
        if envelope is not None:  # JSON's escapes (\u001b) decode to what was stripped above
            body, node = envelope
            body, node = strip_terminal_escapes(body, keep="\n"), strip_terminal_escapes(node)
        # A record's text may hold several lines (a multiline traceback joined by Fluent Bit).
        parts = body.split("\n")
        for part in parts:
            text = strip_prefixes(part.rstrip("\r"))
            yield LogLine(number=number, raw=raw, text=text, node=node)
