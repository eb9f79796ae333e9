"""The pager's fault-injection sections (``benchmarks/page_faults.py`` 2 to 5) at a small size:
their counts are the full run's (only the waits are shorter), and each printed line must be
docs/paging.md's, so a change in how the pager delivers shows up in the docs."""

from dataclasses import replace

from benchmarks import page_faults
from tests.docs_text import DOCS

PAGING = (DOCS / "paging.md").read_text()


def test_the_xid_line_reaches_the_log_group_whatever_the_otlp_endpoint_does() -> None:
    runs = [page_faults.otlp_fault(fault, timeout_s=0.3) for fault in page_faults.OTLP_FAULTS]
    assert [(r.delivered, r.xids) for r in runs] == [(10, 10)] * 4
    assert [r.resent_after_refusal for r in runs] == [0, 0, None, None]
    assert page_faults.otlp_line(runs) in PAGING


def test_a_hanging_webhook_leaves_every_sns_page_to_the_first_invocation() -> None:
    run = page_faults.webhook_hang(deadline_s=0.5)
    assert (run.sns_first, run.webhook_posts) == (8, 1)
    assert "7 deliveries not tried" in run.error
    assert page_faults.hang_line(run) in PAGING


def test_a_future_dated_forgery_leaves_the_real_page_to_page() -> None:
    run = page_faults.forgery()
    assert (run["forged_pages"], run["real_pages"]) == (0, 1)
    assert page_faults.forgery_line(run) in PAGING


def test_a_webhook_answering_late_shows_the_page_at_most_twice_and_pages_no_failure() -> None:
    run = page_faults.late_answer(answer_s=0.8, deadline_s=0.5)
    assert (run.shown, run.invocations, run.notifier_failing) == (2, 2, 0)
    # The counts, as the full run prints them (it waits 6 s for each answer, not 0.8).
    assert page_faults.late_line(replace(run, answer_s=6.0)) in PAGING
