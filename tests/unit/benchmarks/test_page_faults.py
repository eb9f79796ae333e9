"""``benchmarks/page_faults.py`` at a small size, and the lines docs/paging.md quotes from it:
a forged host-log confirmation is refused, and one XID across a window boundary is one page."""

import pytest

from benchmarks import page_faults
from tests.docs_text import DOCS


def test_an_xid_batch_of_30_gpus_pages_each_once_and_counts_the_malformed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(page_faults, "NODES", 10)
    x = page_faults.xid_batch()
    assert (x["pages"], x["good"], x["duplicates"], x["resent"]) == (30, 30, 0, 0)
    assert x["refused_counted"] == x["malformed"] == 10


def test_the_paging_page_quotes_the_forged_confirmation_and_the_boundary_lines() -> None:
    forged, boundary = page_faults.forged_confirmation(), page_faults.window_boundary()
    assert (forged["pages"], forged["critical"], forged["confirmed"]) == (1, 0, 0)
    assert boundary["pages"] == 1
    page = (DOCS / "paging.md").read_text()
    assert page_faults.forged_line(forged) == "forged host-log confirmation: refused"
    assert page_faults.boundary_line(boundary) == "XID across a window boundary: 1 page"
    assert f"{page_faults.forged_line(forged)}\n{page_faults.boundary_line(boundary)}\n" in page
