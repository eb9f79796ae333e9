"""The report's one HTML table: every header and cell escaped (namespaces, jobs, models and
workloads are the cluster's users' names), numeric columns right-aligned by class."""

from collections.abc import Container, Iterable, Sequence
from html import escape
from typing import Any


def html_table(
    headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Container[int] = ()
) -> str:
    """``numeric``: the indexes of the columns that hold numbers."""
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{escape(str(c))}</td>'
            if i in numeric
            else f"<td>{escape(str(c))}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
