"""The serving query builders shared by the alarms and the dashboards."""

from cdk.alarms.promql import RANGE_S
from lambdas.shared.serving_queries import RATE_RANGE_S, minutes_of


def test_serving_rates_read_the_gpu_alarms_five_minutes() -> None:
    assert RATE_RANGE_S == RANGE_S == 300


def test_a_window_is_written_in_minutes_where_it_is_whole_minutes() -> None:
    assert minutes_of(300) == "5m"
    assert minutes_of(90) == "90s"
