"""The webhook fault benchmark's figures as docs/paging.md quotes them: the faults that take no
deadline (the drip's takes 10 s of waiting) are run here and their printed lines must be the
page's, so a change in how the send loop retries shows up in the docs."""

import pytest

from benchmarks import webhook_faults
from tests.docs_text import DOCS


@pytest.mark.parametrize("fault", ["garbage", "redirect", "reset"])
def test_the_paging_page_quotes_the_benchmarks_line(fault: str) -> None:
    run = webhook_faults.run(fault)
    # Each channel tries every page of the batch: the two faulted posts fail the first
    # invocation, and Lambda's first retry sends just those two.
    assert (run.invocations, run.delivered, run.resent, run.claims_held) == (2, 10, 0, 0)
    # The counts, as printed; the time of the longest delivery varies with the machine.
    counts = webhook_faults.line(run).split(", longest delivery ")[0]
    assert counts + ", longest delivery " in (DOCS / "paging.md").read_text()
