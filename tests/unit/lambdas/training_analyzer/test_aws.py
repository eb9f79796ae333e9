from typing import Any

import pytest

from lambdas.training_analyzer.aws import QueryTimeoutError, rank_stats


class Logs:
    def __init__(self, statuses: list[str], rows: list[list[dict[str, str]]]) -> None:
        self.statuses = statuses
        self.rows = rows
        self.started: dict[str, Any] = {}

    def start_query(self, **kwargs: Any) -> dict[str, str]:
        self.started = kwargs
        return {"queryId": "q-1"}

    def get_query_results(self, *, queryId: str) -> dict[str, Any]:  # noqa: N803
        status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        return {"status": status, "results": self.rows if status == "Complete" else []}


def _row(job: str, rank: str, steps: str, step_time: str, node: str = "") -> list[dict[str, str]]:
    return [
        {"field": "JobName", "value": job},
        {"field": "Rank", "value": rank},
        {"field": "steps", "value": steps},
        {"field": "step_time", "value": step_time},
        {"field": "node", "value": node},
    ]


def test_rank_query_waits_for_completion_and_reads_rows() -> None:
    logs = Logs(
        ["Scheduled", "Running", "Complete"],
        [
            _row("llm", "0", "100", "1.5", "n1"),
            _row("llm", "1", "100", "1.6"),
            _row("llm", "2", "n/a", "1.0"),
            [{"field": "steps", "value": "1"}],
        ],
    )
    waits: list[float] = []
    ranks = rank_stats(logs, "train", start=0, end=3600, sleep=waits.append)
    assert waits == [1.0, 1.0]
    assert logs.started["logGroupName"] == "/aws/gpu-insights/train/training"
    assert [(r.rank, r.steps, r.mean_step_time, r.node) for r in ranks["llm"]] == [
        ("0", 100.0, 1.5, "n1"),
        ("1", 100.0, 1.6, None),
    ]  # the unreadable rows are left out


@pytest.mark.parametrize(
    ("statuses", "problem"), [(["Failed"], "ended Failed"), (["Running"], "longer than 3 s")]
)
def test_a_query_that_fails_or_hangs_is_a_named_error(statuses: list[str], problem: str) -> None:
    with pytest.raises(QueryTimeoutError, match=problem):
        rank_stats(Logs(statuses, []), "train", start=0, end=1, sleep=lambda _: None, timeout_s=3)
