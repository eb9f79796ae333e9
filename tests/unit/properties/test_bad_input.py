"""Bad input, generated: every parser either reads it or refuses it with its own named error;
nothing crashes with an unrelated exception."""

import json
import string
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.emf import EmfError, parse_emf_line
from agent.xid import XidLineError, parse_kernel_xid_line, scan_kernel_log
from alarms.history import HistoryError, read_history
from cdk.settings import SETTING_KEYS, SettingsError, settings_from_context
from lambdas.weekly_report.figures import read_findings

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
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


@RELAXED
@given(st.lists(st.text(max_size=200) | json_values.map(json.dumps), max_size=8))
def test_finding_files_never_fail_a_report(lines: list[str]) -> None:
    files = read_findings(["\n".join(lines)])
    assert files.malformed + len(files.findings) == sum(
        1 for line in "\n".join(lines).splitlines() if line.strip()
    )
