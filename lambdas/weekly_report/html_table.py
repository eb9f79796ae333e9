"""The report's one HTML table: every header and cell escaped (namespaces, jobs, models and
workloads are the cluster's users' names), numeric columns right-aligned by class, and every
cell able to fit the width the report is read at.

A browser lays a table out no narrower than its longest unbreakable word, and to it a job, a
volume ID, an ARN, a node's DNS name or a snake_case kind is one word: a column of them pushed
the columns to its right out of a 900 px window. Each text cell may break after a separator
(``breakable``); numbers and dates never break (``.num``, ``.when``: a date wrapped at its
hyphens reads as two values). The page's style (render.py ``STYLE``) holds the classes."""

import re
from collections.abc import Container, Iterable, Sequence
from html import escape
from typing import Any, Final

#: A separator a cluster's names are built with, followed by a letter or another separator:
#: never inside a number ("71.0", "16:00", "0000:13:00", "$3,139" stay whole).
_SEPARATOR: Final = re.compile(r"([_/.:=,@])(?=[^\s\d])")


def breakable(text: str) -> str:
    """``text`` escaped for HTML, with a line-break opportunity (``<wbr>``) after each
    separator of a name (``_SEPARATOR``). Escaping comes first, so no separator is added
    inside a character reference."""
    return _SEPARATOR.sub(r"\1<wbr>", escape(text))


def text_cell(value: Any, css_class: str | None = None) -> str:
    """A cell of words and names: breakable (``breakable``)."""
    attribute = f' class="{css_class}"' if css_class else ""
    return f"<td{attribute}>{breakable(str(value))}</td>"


def number_cell(value: Any) -> str:
    """A cell of one figure: right-aligned, never broken."""
    return f'<td class="num">{escape(str(value))}</td>'


def when_cell(value: Any) -> str:
    """A cell of a date or a time: each of its words never broken (a date breaks at its
    hyphens otherwise), the cell only between them ("2026-12-06", "16:00")."""
    words = (f'<span class="when">{escape(w)}</span>' for w in str(value).split(" "))
    return f"<td>{' '.join(words)}</td>"


def header_row(headers: Sequence[str], numeric: Container[int] = ()) -> str:
    """The table's head; ``numeric``: the columns whose header is right-aligned."""
    cells = "".join(
        f'<th scope="col" class="num">{escape(h)}</th>'
        if i in numeric
        else f'<th scope="col">{escape(h)}</th>'
        for i, h in enumerate(headers)
    )
    return f"<thead><tr>{cells}</tr></thead>"


def table(headers: Sequence[str], rows: Iterable[str], right: Container[int] = ()) -> str:
    """A table of ``rows`` already made of cells (``<tr>...</tr>``); ``right``: the columns
    whose header is right-aligned."""
    return f"<table>{header_row(headers, right)}<tbody>{''.join(rows)}</tbody></table>"


def html_table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Any]],
    numeric: Container[int] = (),
    when: Container[int] = (),
) -> str:
    """``numeric``: the indexes of the columns that hold numbers; ``when``: of those that hold
    a date or a time."""
    return table(
        headers,
        (
            "<tr>"
            + "".join(
                number_cell(c) if i in numeric else when_cell(c) if i in when else text_cell(c)
                for i, c in enumerate(row)
            )
            + "</tr>"
            for row in rows
        ),
    )
