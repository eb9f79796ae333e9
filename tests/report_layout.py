"""The weekly report as headless Chromium lays it out at a width: every table cell that ends
outside the page (or whose content overflows it), every date (a cell's leading YYYY-MM-DD)
broken over lines, and the stroke colour of every line of every chart. Read from the browser's
layout (cli/demo/report.py ``laid_out``), not from the HTML's text."""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli.demo.report import laid_out

#: Run in the page: a JSON document of what is out of place, section by section (the nearest
#: heading before each table, the column's header for each cell).
_ORACLE = """JSON.stringify((() => {
  const width = document.documentElement.clientWidth;
  const found = {width: width, scrollWidth: document.documentElement.scrollWidth,
                 outside: [], broken: [], charts: []};
  let section = "";
  for (const el of document.querySelectorAll("h2, h3, table, svg.chart")) {
    if (el.tagName === "H2" || el.tagName === "H3") { section = el.textContent; continue; }
    if (el.tagName === "TABLE") {
      const headers = [...el.querySelectorAll("thead th")].map(th => th.textContent);
      for (const row of el.querySelectorAll("tr")) {
        [...row.children].forEach((cell, i) => {
          const box = cell.getBoundingClientRect();
          if (box.left < -0.5 || box.right > width + 0.5 || cell.scrollWidth > cell.clientWidth + 1)
            found.outside.push([section, headers[i] || "", cell.textContent.slice(0, 60)]);
        });
      }
      for (const cell of el.querySelectorAll("td")) {
        const text = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT).nextNode();
        if (!text || !/^\\d{4}-\\d{2}-\\d{2}/.test(text.data)) continue;
        const date = document.createRange();
        date.setStart(text, 0);
        date.setEnd(text, 10);
        const lines = new Set([...date.getClientRects()].map(r => Math.round(r.bottom)));
        if (lines.size > 1) found.broken.push([section, cell.textContent]);
      }
      continue;
    }
    const strokes = [...el.querySelectorAll("polyline")].map(p => p.getAttribute("stroke"));
    if (strokes.length) found.charts.push([el.getAttribute("aria-label"), strokes]);
  }
  return found;
})())"""


@dataclass(frozen=True)
class Layout:
    width: int
    scroll_width: int
    #: (section, column, the cell's first 60 characters) of each cell not inside the page.
    outside: list[tuple[str, str, str]]
    #: (section, the cell's text) of each date broken over lines.
    broken: list[tuple[str, str]]
    #: (chart, the stroke colour of each of its lines).
    charts: list[tuple[str, list[str]]]


def layout(browser: str, page: Path, width: int) -> Layout:
    found: dict[str, Any] = json.loads(laid_out(browser, page, width, _ORACLE))
    return Layout(
        width=found["width"],
        scroll_width=found["scrollWidth"],
        outside=[tuple(c) for c in found["outside"]],
        broken=[tuple(b) for b in found["broken"]],
        charts=[(name, strokes) for name, strokes in found["charts"]],
    )
