"""Failure signatures: the deciding line with what differs between occurrences masked, so the
same failure groups across jobs, nodes and days; and what a group points at."""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final

#: Applied in order; each replaces what changes between two occurrences of one failure.
_MASKS: Final = tuple(
    (re.compile(p), r)
    for p, r in (
        # kubectl get events: namespace and age columns before the type.
        (r"^.*?\b(Normal|Warning)\s+", r"\1 "),
        # NCCL's "host:pid:tid [device]" prefix.
        (r"^\S+:\d+:\d+ \[\d+\]", "<host:pid:tid> [<dev>]"),
        (r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?", "<time>"),
        (r"\b\d{2}:\d{2}:\d{2}(?:\.\d+)?\b", "<time>"),
        (
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
            "<id>",
        ),
        (r"\b[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?\b", "<pci>"),
        (r"\b0x[0-9a-fA-F]+\b", "<hex>"),
        (r"\b[0-9a-f]{16,}\b", "<hex>"),
        (r"\bi-[0-9a-f]{8,17}\b", "<instance>"),
        (r"\bip-\d+-\d+-\d+-\d+(?:\.[\w.-]+)?", "<host>"),
        (r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?(?:<\d+>)?", "<ip>"),
        (r"(?:(?<=\s)|(?<=^)|(?<=[\"'(=]))(?:/[\w.@+-]+){2,}/?", "<path>"),
        # Pods of a Deployment or Job: name-<replicaset hash>-<5 chars>, name-<5 chars>.
        (r"\b([a-z0-9]+(?:-[a-z0-9]+)*?)-[a-z0-9]{8,10}-[a-z0-9]{5}\b", r"\1-<pod>"),
        (r"\[(?:[Rr]ank|default) ?\d+\]", "[rank]"),
        (r"\b[Rr]ank \d+\b", "rank <n>"),
        (r"\d+(?:\.\d+)?", "<n>"),
    )
)
_SPACES: Final = re.compile(r"\s+")
#: Long lines (an OOM's memory summary) group by their start; the rest is detail.
_MAX_CHARS: Final = 240
#: What is masked of a line: masks shorten it, so this much fills the signature.
_READ_CHARS: Final = 4 * _MAX_CHARS


def signature(text: str) -> str:
    """The line with times, ids, addresses, paths, ranks, pod hashes and numbers masked."""
    text = text[:_READ_CHARS]
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return _SPACES.sub(" ", text).strip()[:_MAX_CHARS]


class Suspect(StrEnum):
    #: One occurrence (or one job on one node): nothing to say yet.
    NONE = "none"
    #: The same failure on one node across jobs: the node.
    NODE = "node"
    #: The same failure across nodes: the code or the data the jobs share.
    CODE_OR_DATA = "code_or_data"


@dataclass(frozen=True)
class Occurrence:
    signature: str
    cause: str
    job: str
    node: str
    at: datetime


@dataclass(frozen=True)
class SignatureGroup:
    signature: str
    cause: str
    jobs: tuple[str, ...]
    nodes: tuple[str, ...]
    first_seen: datetime
    last_seen: datetime
    count: int

    @property
    def suspect(self) -> Suspect:
        if len(self.nodes) > 1:
            return Suspect.CODE_OR_DATA
        if len(self.jobs) > 1:
            return Suspect.NODE
        return Suspect.NONE


def group_signatures(occurrences: Iterable[Occurrence]) -> list[SignatureGroup]:
    """One group per signature, the most frequent first (then the most recent)."""
    by_signature: dict[tuple[str, str], list[Occurrence]] = {}
    for occurrence in occurrences:
        by_signature.setdefault((occurrence.signature, occurrence.cause), []).append(occurrence)
    groups = [
        SignatureGroup(
            signature=sig,
            cause=cause,
            jobs=tuple(sorted({o.job for o in seen})),
            nodes=tuple(sorted({o.node for o in seen if o.node})),
            first_seen=min(o.at for o in seen),
            last_seen=max(o.at for o in seen),
            count=len(seen),
        )
        for (sig, cause), seen in by_signature.items()
    ]
    return sorted(groups, key=lambda g: (-g.count, -g.last_seen.timestamp(), g.signature))
