"""The silence check's one configuration declaration: written and read back whole, a bad
value refused by name."""

from dataclasses import fields

import pytest

from lambdas.silence_check.config import SilenceCheckConfig, SilenceConfigError, lookback_for


def test_the_environment_round_trips() -> None:
    config = SilenceCheckConfig(
        cluster_name="train", lookback_s=1800, grace_s=600, architectures=("x86_64", "arm64")
    )
    environment = config.environment()
    assert environment == {
        "CLUSTER_NAME": "train",
        "LOOKBACK_SECONDS": "1800",
        "GRACE_SECONDS": "600",
        "ARCHITECTURES": "x86_64,arm64",
    }
    assert SilenceCheckConfig.from_environment(environment) == config
    # Every field has its variable: a field added without one fails here.
    assert set(SilenceCheckConfig.VARIABLES) == {f.name for f in fields(SilenceCheckConfig)}


def test_the_look_back_is_three_exporter_cycles_and_at_least_ten_minutes() -> None:
    assert lookback_for(10) == 600
    assert lookback_for(300) == 900
    assert lookback_for(3600) == 10_800
    assert lookback_for(250) == 780  # 750 s, in whole minutes


@pytest.mark.parametrize(
    ("environment", "named"),
    [
        ({"CLUSTER_NAME": "train"}, "LOOKBACK_SECONDS, GRACE_SECONDS, ARCHITECTURES"),
        (
            {"CLUSTER_NAME": "t", "LOOKBACK_SECONDS": "ten", "GRACE_SECONDS": "0",
             "ARCHITECTURES": "x86_64"},
            "not a number",
        ),
        (
            {"CLUSTER_NAME": "t", "LOOKBACK_SECONDS": "90", "GRACE_SECONDS": "0",
             "ARCHITECTURES": "x86_64"},
            "lookback_s=90",
        ),
        (
            {"CLUSTER_NAME": "t", "LOOKBACK_SECONDS": "600", "GRACE_SECONDS": "-1",
             "ARCHITECTURES": "x86_64"},
            "grace_s=-1",
        ),
        (
            {"CLUSTER_NAME": "t", "LOOKBACK_SECONDS": "600", "GRACE_SECONDS": "0",
             "ARCHITECTURES": ""},
            "architectures is empty",
        ),
    ],
)  # fmt: skip
def test_a_bad_setting_is_named(environment: dict[str, str], named: str) -> None:
    with pytest.raises(SilenceConfigError, match=named):
        SilenceCheckConfig.from_environment(environment)
