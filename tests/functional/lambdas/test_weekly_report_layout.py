"""The weekly report at the width it is read: headless Chromium lays out the report of
``make demo-otel``'s week (tests/data/weekly-report-demo-otel-week.json, the run's
out/report.json: its figures, rendered again by today's code) at the demo's 900 px
screenshot and at 1,400 px, and every table column is inside the page, no date breaks over
lines, and every line of a chart has its own colour."""

import dataclasses
import json
from pathlib import Path
from typing import Final

import pytest

from cli.demo.report import chromium
from lambdas.weekly_report.figures import WeekFigures
from lambdas.weekly_report.render import html_report
from tests.report_layout import layout

WEEK: Final = Path(__file__).parents[2] / "data" / "weekly-report-demo-otel-week.json"

pytestmark = pytest.mark.skipif(
    chromium() is None, reason="Chromium is not installed (Debian: apt-get install chromium)"
)


def _page(folder: Path) -> Path:
    """The demo week's report, rendered from its figures."""
    document = json.loads(WEEK.read_text(encoding="utf-8"))
    names = {f.name for f in dataclasses.fields(WeekFigures)}
    page = folder / "report.html"
    page.write_text(html_report(WeekFigures(**{k: v for k, v in document.items() if k in names})))
    return page


@pytest.mark.parametrize("width", [900, 1400])
def test_every_column_is_inside_the_page_and_no_date_breaks(tmp_path: Path, width: int) -> None:
    page = _page(tmp_path)
    text = page.read_text()
    # The wide tables are there to be laid out: ten findings, the failures' recurring
    # signatures (ten columns), the serving week's per-workload table (twelve).
    for heading in ('id="findings"', "<h3>Recurring signatures</h3>", "<h3>Per workload</h3>"):
        assert heading in text
    assert text.count('<td class="num">') > 100
    browser = chromium()
    assert browser is not None
    found = layout(browser, page, width)
    assert found.width == width
    assert found.outside == []
    assert found.scroll_width == width  # nothing wider than the window: no sideways scroll
    assert found.broken == []  # the GPUs table's Day column, the signatures' first and last seen


def test_every_line_of_a_chart_has_its_own_colour(tmp_path: Path) -> None:
    browser = chromium()
    assert browser is not None
    found = layout(browser, _page(tmp_path), 900)
    charts = dict(found.charts)
    assert len(charts["Training throughput by job (samples/s, by day)"]) == 8  # the week's jobs
    for name, strokes in found.charts:
        assert len(set(strokes)) == len(strokes), name
