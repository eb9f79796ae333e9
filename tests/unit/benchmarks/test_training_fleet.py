"""``benchmarks/training_fleet.py``, the fleet the training benchmarks read: its clients answer
for every job (tests/unit/lambdas/training_analyzer/test_fleet.py holds its figures)."""

from benchmarks.training_fleet import Fleet


def test_a_small_fleet_answers_with_its_clients() -> None:
    end = 1_764_288_000.0
    cloudwatch, logs = Fleet(3, start=end - 86_400, end=end).clients()
    assert cloudwatch.meta.service_model.service_name == "cloudwatch"
    assert logs.meta.service_model.service_name == "logs"
