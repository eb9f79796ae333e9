"""The exporter's side of tests/oracles/sparse.py: a fault gauge is sent only in the clock hours it
is
non-zero, from the alarm period of its first non-zero sample on.

CloudWatch bills a custom metric for the hours it is published ("metrics are prorated by the
hour", https://aws.amazon.com/cloudwatch/pricing/), and a GPU's ECC and throttle gauges are
zero in almost every hour. Zeros are held back until the hour's first non-zero sample; then
the held zeros of that sample's alarm period go out with their own timestamps (EMF takes past
timestamps), and every sample after it, zero or not, to the end of the hour. The result is
``tests.oracles.sparse.published`` computed as the samples arrive
(tests/unit/agent/exporter/test_fault_gate.py).
"""

from dataclasses import dataclass, field

HOUR = 3600


class FaultPeriodError(ValueError):
    """An alarm period the gate cannot keep whole within a clock hour."""


@dataclass
class _Series:
    hour: int = -1
    open: bool = False
    #: Held zeros of the current alarm period: (timestamp, value).
    held: list[tuple[float, float]] = field(default_factory=list)


class FaultGate:
    """Per series (any hashable key), what to send of each new sample."""

    def __init__(self, period_s: int) -> None:
        if not (isinstance(period_s, int) and 0 < period_s <= HOUR and HOUR % period_s == 0):
            raise FaultPeriodError(
                f"fault alarm period {period_s!r} s must be a whole number of seconds that "
                "divides the hour"
            )
        self.period_s = period_s
        self._series: dict[object, _Series] = {}

    def offer(self, key: object, timestamp: float, value: float) -> list[tuple[float, float]]:
        """The samples of ``key`` to send now (oldest first): none while the hour is all zero."""
        state = self._series.setdefault(key, _Series())
        hour = int(timestamp // HOUR)
        if hour != state.hour:
            state.hour, state.open, state.held = hour, False, []
        if state.open:
            return [(timestamp, value)]
        period_start = timestamp - timestamp % self.period_s
        held = [(t, v) for t, v in state.held if t >= period_start]
        if value == 0:
            state.held = [*held, (timestamp, value)]
            return []
        state.open, state.held = True, []
        return [*held, (timestamp, value)]
