"""Bad input, generated: every parser either reads it or refuses it with its own named error;
only the project's own error may escape (a test fails on any other exception)."""

import json
import string
from typing import Any

import pynvml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdk.settings import SETTING_KEYS, SettingsError, settings_from_context
from cli.backtest.history import HistoryError, read_history, read_history_file
from gpu_insights_agent.contract.xid import XidLineError, parse_kernel_xid_line, scan_kernel_log
from gpu_insights_agent.emf.document import EmfError, parse_emf_line
from gpu_insights_agent.exporter.fake_nvml import FakeNvml
from lambdas.weekly_report.figures import read_findings, read_job_costs, week_figures

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.sampled_from([1e18, -1e18, 253402318800.0])
    | st.text(max_size=20)
    | st.sampled_from(["9999-12-31T23:00:00-05:00", "1970-01-01T00:00:00Z", "Infinity"]),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=10,
)
RELAXED = settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)


@RELAXED
@given(
    st.dictionaries(
        st.sampled_from(sorted(SETTING_KEYS)), json_values | st.text(max_size=30), max_size=6
    )
)
def test_settings_are_read_or_refused_by_name(context: dict[str, Any]) -> None:
    try:
        settings_from_context(context)
    except SettingsError as err:
        assert "setting " in str(err) or "unknown setting" in str(err)


@RELAXED
@given(st.text(max_size=300) | json_values.map(json.dumps))
def test_emf_lines_are_read_or_refused(line: str) -> None:
    try:
        document = parse_emf_line(line)
    except EmfError:
        return
    assert isinstance(document["_aws"]["Timestamp"], int)


@RELAXED
@given(st.text(alphabet=string.printable, max_size=200))
def test_kernel_lines_are_read_refused_or_ignored(tail: str) -> None:
    for line in (tail, f"NVRM: Xid {tail}", f"[ 1.0] NVRM: Xid (PCI:0000:53:00): {tail}"):
        try:
            parsed = parse_kernel_xid_line(line)
        except XidLineError:
            continue
        assert parsed is None or parsed.code >= 0
    assert scan_kernel_log([tail, "NVRM: Xid " + tail]).malformed <= 2


@RELAXED
@given(st.lists(st.text(max_size=120) | json_values.map(json.dumps), max_size=6))
def test_history_files_are_read_or_refused_by_line(lines: list[str]) -> None:
    try:
        samples = read_history(lines, source="h")
    except HistoryError as err:
        assert str(err).startswith("h line ")
        return
    assert all(isinstance(s.value, float) for s in samples)


finding_like = st.fixed_dictionaries(
    {"kind": st.sampled_from(["ebs_idle_volume", "training_data_bound"]) | json_values},
    optional={
        "resource": json_values,
        "severity": json_values,
        "estimated_monthly_waste_usd": json_values,
        "evidence": json_values
        | st.dictionaries(st.just("waste_in_lookback_usd"), json_values, max_size=1),
        "detected_at": json_values,
    },
).map(json.dumps)


@RELAXED
@given(st.lists(st.text(max_size=200) | json_values.map(json.dumps) | finding_like, max_size=8))
def test_finding_files_never_fail_a_report(lines: list[str]) -> None:
    files = read_findings(["\n".join(lines)])
    assert files.malformed + len(files.findings) == sum(
        1 for line in "\n".join(lines).splitlines() if line.strip()
    )
    figures = week_figures(
        cluster="c",
        week="2026-W48",
        gpu_days=[],
        xids=[],
        alarms=[],
        files=files,
        job_costs={},
        throughput={},
    )
    assert figures.malformed_finding_lines == files.malformed


@RELAXED
@given(st.binary(max_size=100) | json_values.map(lambda v: json.dumps({"job": v}).encode()))
def test_job_cost_files_are_read_or_counted(body: bytes) -> None:
    costs = read_job_costs(body)
    assert all(isinstance(v, float) for job in costs.costs.values() for v in job.values())


@RELAXED
@given(
    st.lists(
        st.text(max_size=80)
        | st.fixed_dictionaries(
            {"kind": st.just("sample"), "index": st.just(0), "t": json_values},
            optional={"power_w": json_values, "throttle": json_values},
        ).map(json.dumps),
        max_size=5,
    )
)
def test_trace_lines_are_loaded_or_counted(lines: list[str]) -> None:
    gpu = json.dumps({"kind": "gpu", "index": 0, "power_limit_w": 700})
    nvml = FakeNvml([gpu, *lines], clock=lambda: 1e9)
    assert nvml.malformed_lines <= len(lines)
    nvml.nvmlInit()
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    try:  # what the exporter reads mid-run: a value, or NVML's own error (no sample yet)
        assert nvml.nvmlDeviceGetPowerUsage(handle) >= 0
        assert nvml.nvmlDeviceGetCurrentClocksEventReasons(handle) >= 0
    except pynvml.NVMLError:
        pass


@RELAXED
@given(
    st.lists(
        json_values
        | st.fixed_dictionaries(
            {
                "metric": json_values
                | st.dictionaries(st.sampled_from(["__name__", "gpu"]), json_values, max_size=2),
                "values": json_values | st.lists(st.lists(json_values, max_size=3), max_size=3),
            }
        ),
        max_size=4,
    )
)
def test_a_promql_history_reads_each_series_or_skips_it_by_name(result: list[Any]) -> None:
    """A history response of arbitrary series (docs/history.md): each is read or skipped and
    named, never an exception, and one bad series leaves a good one beside it read."""
    good = {"metric": {"__name__": "gpu_healthy", "gpu": "good"}, "values": [[1764504000, "1"]]}
    text = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": [
        *result, good]}})  # fmt: skip
    history = read_history_file(text)
    assert any(s.labels.get("gpu") == "good" for s in history.promql.series)
    assert all(s.points for s in history.promql.series)
