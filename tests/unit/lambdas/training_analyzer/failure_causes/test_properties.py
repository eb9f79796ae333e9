"""Any text at all (random lines, mixed with lines the rules name) gets a diagnosis whose
citations are lines of that text, and never an exception."""

from hypothesis import given, settings
from hypothesis import strategies as st

from lambdas.training_analyzer.failure_causes import Cause, classify_text, read_lines
from tests.unit.reference_data import failure_log_corpus

REAL = [line for s in failure_log_corpus() for line in s.lines]
LINES = st.lists(
    st.one_of(st.text(max_size=200), st.sampled_from(REAL)),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(LINES)
def test_every_citation_is_a_line_of_the_text_and_nothing_raises(lines: list[str]) -> None:
    text = "\n".join(lines)
    diagnosis = classify_text(text)
    read: dict[int, list[str]] = {}
    for line in read_lines(text):
        read.setdefault(line.number, []).append(line.text.strip())
    assert diagnosis.lines_read == len(read)
    assert (diagnosis.cause is Cause.UNKNOWN) == (not diagnosis.lines)
    for cited in diagnosis.lines:
        assert cited.text in read[cited.number]
