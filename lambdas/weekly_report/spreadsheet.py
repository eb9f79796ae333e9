"""The one CSV writer of the report (report.csv, gpu-memory.csv, failures.csv, serving.csv): its
files are opened in spreadsheets, and their text cells carry what the cluster's users wrote (job
names, model names, log lines), so no text cell may be read as a formula.

The rule, OWASP's "CSV Injection" guidance (https://owasp.org/www-community/attacks/CSV_Injection):
a text cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is prefixed
with a single quote, and every text cell is quoted (double quotes inside doubled), so neither a
separator nor a line break inside a value starts a new cell. Numbers the code computed (``int``
and ``float`` values, a negative change of GPU-hours among them) are data, not formulae: they
are written bare, so a spreadsheet reads ``-3.2`` as minus 3.2. Any other value is written as
its text, by the text rule: a job named ``-1`` is text, and stays text.
"""

import csv
import io
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

#: The first characters that make a spreadsheet read a cell as a formula (OWASP, above).
FORMULA_STARTS: Final = ("=", "+", "-", "@", "\t", "\r")
_COLUMN: Final = re.compile(r"[a-z][a-z0-9_]*")


def cell(value: object) -> str | int | float:
    """What is written for ``value``: a number as itself, None as an empty cell, anything else
    as its text, quote-prefixed where it would begin a formula."""
    if value is None:
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_table(columns: Sequence[str], rows: Iterable[Mapping[str, object]]) -> str:
    """A header of ``columns`` (the code's own names, written bare) and one line per row, each
    row's values read by column (a missing one an empty cell), every text cell quoted."""
    bad = [c for c in columns if not _COLUMN.fullmatch(c)]
    if bad:
        raise ValueError(f"CSV column names must be snake_case identifiers, not {bad}")
    out = io.StringIO()
    out.write(",".join(columns) + "\n")
    writer = csv.writer(out, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
    for row in rows:
        writer.writerow([cell(row.get(c)) for c in columns])
    return out.getvalue()
