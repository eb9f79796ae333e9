"""The report's CSV files against formula injection, as OWASP's CSV-injection guidance says
(https://owasp.org/www-community/attacks/CSV_Injection): a text cell beginning with ``=``,
``+``, ``-``, ``@``, a tab or a carriage return is prefixed with a single quote and quoted;
numbers the code computed stay numbers."""

import csv
import io

import pytest

from lambdas.weekly_report.failures_section import failure_figures, failures_csv
from lambdas.weekly_report.memory_section import memory_csv
from lambdas.weekly_report.spreadsheet import cell, csv_table
from lambdas.weekly_report.waste import waste_csv

H = 3600.0
#: Job names (the emitter takes any printable ASCII) and log lines, as a user could write them.
HOSTILE = [
    '=HYPERLINK("https://evil.example","Open")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A9)",
    "\t=1+1",
    "\r=1+1",
]


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize("value", HOSTILE)
def test_a_cell_that_would_begin_a_formula_is_quote_prefixed_text(value: str) -> None:
    assert cell(value) == "'" + value
    (header, row) = _rows(csv_table(["job"], [{"job": value}]))
    assert (header, row) == (["job"], ["'" + value])


def test_numbers_the_code_wrote_stay_numbers_and_text_is_quoted() -> None:
    text = csv_table(["a", "b", "c", "d", "e"], [{"a": -3.2, "b": 4, "c": "x,y", "d": None}])
    # A negative change of GPU-hours is data: bare, so a spreadsheet reads minus 3.2; every
    # text cell is in double quotes, a separator inside it kept in the cell.
    assert text == 'a,b,c,d,e\n-3.2,4,"x,y","",""\n'
    assert cell(True) == "True"  # a bool is text, not the number 1


def test_a_column_name_that_is_not_the_codes_own_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"\['=bad'\]"):
        csv_table(["ok", "=bad"], [])


def test_failures_csv_neutralises_a_job_name_and_a_log_line() -> None:
    run = {"job": HOSTILE[0], "at": 110 * H, "cause": "application_exception",
           "signature": "-1 + @evil", "nodes": ["n1"], "gpu_hours": 2.0}  # fmt: skip
    text = failures_csv(failure_figures([run], gpu_hour_usd=2.5), cluster="c", week="2026-W48")
    (_, row) = _rows(text)
    assert row[2] == "'" + HOSTILE[0]
    assert row[6] == "'-1 + @evil"
    assert row[7:] == ["2.0", "5.0"]
    assert text.splitlines()[1].endswith(",2.0,5.0")  # numbers bare


def test_gpu_memory_csv_neutralises_a_namespace_and_job() -> None:
    row = {"namespace": "@ns", "job": "=cmd", "gpus": 1, "monthly_saving_usd": None}
    (_, written) = _rows(memory_csv([row], cluster="c", week="w"))
    assert written[2:5] == ["'@ns", "'=cmd", "1"]


def test_report_csv_keeps_a_negative_change_a_number_and_neutralises_a_namespace() -> None:
    namespace = {"namespace": "+ns", "held_gpu_hours": 3.0, "not_working_change_gpu_hours": -30.0}
    waste = {"gpu_hour_usd": 2.0, "namespaces": [namespace]}
    text = waste_csv(waste, cluster="c", week="w")
    (header, row) = _rows(text)
    fields = dict(zip(header, row, strict=True))
    assert (fields["namespace"], fields["held_usd"]) == ("'+ns", "6.0")
    assert fields["not_working_change_gpu_hours"] == "-30.0"
    assert text.splitlines()[1].endswith(",-30.0")
