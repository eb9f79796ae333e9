"""XID errors as events: a thread blocks on NVML's event set and hands each XID on at once.

Polling would find an XID only at the next cycle (10 s later) and could miss a burst; NVML's
event set wakes the thread within milliseconds of the driver seeing the error.
"""

import contextlib
import ctypes
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from gpu_insights_agent.exporter.device_source import XidEvent

log = logging.getLogger(__name__)


__all__ = ["XidEvent", "XidWatcher"]


def _handle_key(handle: Any) -> object:
    """A key equal for two handles of the same GPU. pynvml returns a new pointer object per
    call, so compare addresses; asking NVML for the index could fail on a GPU that just fell
    off the bus, which is exactly when the XID matters."""
    try:
        return ("address", ctypes.cast(handle, ctypes.c_void_p).value)
    except (TypeError, ctypes.ArgumentError):
        return ("object", handle)


class XidWatcher:
    """Registers every GPU for XID critical-error events and waits on them."""

    def __init__(
        self,
        nvml: Any,
        handles: dict[int, Any],
        on_event: Callable[[XidEvent], None],
        *,
        clock: Callable[[], float] = time.time,
        wait_ms: int = 500,
    ) -> None:
        self._nvml = nvml
        self._on_event = on_event
        self._clock = clock
        self._wait_ms = wait_ms
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.event_set = nvml.nvmlEventSetCreate()
        self.registered: list[int] = []
        self._index_by_handle = {_handle_key(handle): index for index, handle in handles.items()}
        for index, handle in handles.items():
            try:
                nvml.nvmlDeviceRegisterEvents(
                    handle, nvml.nvmlEventTypeXidCriticalError, self.event_set
                )
                self.registered.append(index)
            except nvml.NVMLError as err:
                log.warning("GPU %d: XID events unavailable (%s); only polling sees it", index, err)

    def poll(self, timeout_ms: int) -> bool:
        """Wait up to timeout_ms for one event; True when one was handed on."""
        nvml = self._nvml
        try:
            data = nvml.nvmlEventSetWait_v2(self.event_set, timeout_ms)
        except nvml.NVMLError as err:
            if err.value != nvml.NVML_ERROR_TIMEOUT:
                log.warning("waiting for XID events failed: %s", err)
                self._stop.wait(timeout_ms / 1000)
            return False
        if not data.eventType & nvml.nvmlEventTypeXidCriticalError:
            return False
        index = self._index_by_handle.get(_handle_key(data.device))
        if index is None:
            try:
                index = int(nvml.nvmlDeviceGetIndex(data.device))
            except nvml.NVMLError:
                index = -1
        self._on_event(XidEvent(gpu_index=index, code=int(data.eventData), time=self._clock()))
        return True

    def drain(self) -> int:
        """Hand on every event already due, without waiting (the demo's fast replay)."""
        count = 0
        while self.poll(0):
            count += 1
        return count

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="xid-watcher", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.poll(self._wait_ms)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self._wait_ms / 1000 + 1)
        with contextlib.suppress(self._nvml.NVMLError):
            self._nvml.nvmlEventSetFree(self.event_set)
