"""Failure causes from logs: read the lines (lines), name what each says (rules, python_exception),
pick the root cause and cite it (classify, causes), and group recurring failures (signature).
Pure logic: no AWS."""

from lambdas.training_analyzer.failure_causes.causes import ADVICE, Advice, Cause
from lambdas.training_analyzer.failure_causes.classify import (
    CitedLine,
    Diagnosis,
    classify_lines,
    classify_text,
)
from lambdas.training_analyzer.failure_causes.lines import LogLine, read_lines
from lambdas.training_analyzer.failure_causes.signature import (
    Occurrence,
    SignatureGroup,
    Suspect,
    group_signatures,
    signature,
)

__all__ = [
    "ADVICE",
    "Advice",
    "Cause",
    "CitedLine",
    "Diagnosis",
    "LogLine",
    "Occurrence",
    "SignatureGroup",
    "Suspect",
    "classify_lines",
    "classify_text",
    "group_signatures",
    "read_lines",
    "signature",
]
