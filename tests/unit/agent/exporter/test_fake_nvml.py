import inspect

import pynvml
import pytest

from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from gpu_insights_agent.exporter.gpu_sampler import NVML_FUNCTIONS_USED
from tests.unit.agent.exporter.nvml_trace import Clock, trace_lines


@pytest.mark.parametrize("name", NVML_FUNCTIONS_USED)
def test_fake_matches_pynvml_signature(name: str) -> None:
    real = inspect.signature(getattr(pynvml, name))
    fake = inspect.signature(getattr(FakeNvml([], clock=Clock()), name))
    assert [(p.name, p.kind, p.default) for p in fake.parameters.values()] == [
        (p.name, p.kind, p.default) for p in real.parameters.values()
    ]


def test_constants_are_pynvmls() -> None:
    for name in dir(FakeNvml):
        if name.startswith(("NVML_", "nvmlEventType", "nvmlClocksEventReason")):
            assert getattr(FakeNvml, name) == getattr(pynvml, name), name


def test_malformed_trace_lines_are_counted_not_raised() -> None:
    fake = FakeNvml(
        trace_lines(["{not json", '{"kind": "sample", "t": 1, "index": 9}', '{"kind": "x"}']),
        clock=Clock(),
    )
    assert fake.malformed_lines == 3
    fake.nvmlInit()
    assert fake.nvmlDeviceGetCount() == 3


def test_a_negative_reading_is_a_malformed_line_not_a_negative_nvml_value() -> None:
    """NVML's readings are unsigned (nvml.h): a trace line with ``power_w`` -1 read back -1000
    mW from ``nvmlDeviceGetPowerUsage`` (found by tests/unit/properties/test_bad_input.py)."""
    negative = '{"kind": "sample", "t": 0, "index": 0, "power_w": -1}'
    fake = FakeNvml(trace_lines([negative]), clock=Clock())
    assert fake.malformed_lines == 1


def test_lost_gpu_raises_pynvmls_own_error() -> None:
    clock = Clock(25)
    fake = FakeNvml(trace_lines(), clock=clock)
    fake.nvmlInit()
    handle = fake.nvmlDeviceGetHandleByIndex(2)
    with pytest.raises(pynvml.NVMLError_GpuIsLost):
        fake.nvmlDeviceGetPowerUsage(handle)
