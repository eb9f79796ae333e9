"""The pods each GPU had in the last cycle that could read them, for an XID on a GPU that can
no longer be asked.

A GPU that has fallen off the bus (XID 79) answers no NVML call, so at its XID the exporter
cannot learn which processes ran on it, yet that is the first thing the person paged needs.
Each cycle that reads a GPU's processes records its pods here; an XID on a GPU that cannot be
asked names them as *last seen*, with the time they were read.

Bounded, so that it never names a job that has left the GPU: a cycle that reads no pods on
a GPU forgets that GPU's (the job ended before the GPU failed; a cycle whose process list
NVML did not answer reads nothing and forgets nothing), and pods read more than
``MAX_AGE_CYCLES`` cycles ago are not recalled. While a GPU answers, its pods are read every
cycle, so at the moment it is found lost they are at most one cycle old; the driver's own
XID 79 can reach the exporter a little after the cycle that found the GPU lost, hence a few
cycles, not one. Past that the GPU has been silent long enough for its pods to have been
rescheduled, and a page naming them would send someone to the wrong job. It holds one entry
per GPU of the node at most.
"""

import threading
from dataclasses import dataclass
from typing import Final

#: Cycles after which remembered pods are too old to name (see the module's docstring).
MAX_AGE_CYCLES: Final = 3


@dataclass(frozen=True)
class SeenPods:
    #: The pods' UIDs, as ``pod_attribution.pod_uids`` read them.
    uids: tuple[str, ...]
    #: When they were read (the exporter's clock, seconds since the epoch).
    at: float


class LastSeenPods:
    """Each GPU's pods from its last cycle that read them; the cycle and the XID watcher's
    thread both use it."""

    def __init__(self, interval_s: float) -> None:
        self.max_age_s = MAX_AGE_CYCLES * interval_s
        self._seen: dict[int, SeenPods] = {}
        self._lock = threading.Lock()

    def observe(self, index: int, uids: list[str], now: float) -> None:
        """A cycle read GPU ``index``'s pods at ``now``: remember them, or forget the GPU's
        if it has none."""
        with self._lock:
            if uids:
                self._seen[index] = SeenPods(uids=tuple(uids), at=now)
            else:
                self._seen.pop(index, None)

    def recall(self, index: int, now: float) -> SeenPods | None:
        """GPU ``index``'s pods as last read, unless they are older than ``max_age_s``."""
        with self._lock:
            seen = self._seen.get(index)
            if seen is not None and now - seen.at > self.max_age_s:
                del self._seen[index]
                return None
            return seen
