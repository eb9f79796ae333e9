"""Every excerpt of the real-line corpus is classified as its source says, citing its own lines."""

from collections import Counter

import pytest

from lambdas.training_analyzer.failure_causes import Cause, classify_text
from tests.unit.reference_data import FailureLogSample, failure_log_corpus

CORPUS = failure_log_corpus()


@pytest.mark.parametrize("sample", CORPUS, ids=[s.id for s in CORPUS])
def test_each_sample_is_classified_as_its_source_says(sample: FailureLogSample) -> None:
    diagnosis = classify_text(sample.text)
    assert diagnosis.cause.value == sample.cause
    if diagnosis.cause is Cause.UNKNOWN:
        assert diagnosis.lines == []
        assert diagnosis.lines_read == len(sample.lines)
        return
    assert diagnosis.lines, "a named cause cites the lines that decided it"
    for cited in diagnosis.lines:
        assert cited.text in sample.lines[cited.number - 1]
    assert diagnosis.signature


def test_corpus_covers_every_cause_several_times_with_sources() -> None:
    counts = Counter(s.cause for s in CORPUS)
    assert set(counts) == {c.value for c in Cause}
    assert min(counts.values()) >= 4
    assert len(CORPUS) >= 40
    assert len({s.id for s in CORPUS}) == len(CORPUS)
    for sample in CORPUS:
        assert "https://" in sample.source, sample.id
