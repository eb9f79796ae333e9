"""The silence check's configuration: written and read back whole, a bad value refused by name
where the handler reads it and where the construct renders it."""

import pytest

from lambdas.shared.config import ConfigError
from lambdas.silence_check.config import SilenceCheckConfig, lookback_for

CLUSTER = {"CLUSTER_NAME": "train"}


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
    assert SilenceCheckConfig.from_environ(environment) == config


def test_an_unset_setting_takes_the_default() -> None:
    assert SilenceCheckConfig.from_environ(CLUSTER) == SilenceCheckConfig(
        cluster_name="train", lookback_s=600, grace_s=900, architectures=("x86_64",)
    )


def test_the_look_back_is_three_exporter_cycles_and_at_least_ten_minutes() -> None:
    assert lookback_for(10) == 600
    assert lookback_for(300) == 900
    assert lookback_for(3600) == 10_800
    assert lookback_for(250) == 780  # 750 s, in whole minutes


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({}, "CLUSTER_NAME is not set"),
        ({"LOOKBACK_SECONDS": "ten"}, "LOOKBACK_SECONDS='ten' is not valid"),
        ({"LOOKBACK_SECONDS": "90"}, "LOOKBACK_SECONDS='90' is not valid: expected seconds in "
                                     "whole minutes from 60 to 10800"),
        ({"LOOKBACK_SECONDS": "0"}, "LOOKBACK_SECONDS='0'"),
        # Past ListMetrics' three hours of RecentlyActive.
        ({"LOOKBACK_SECONDS": "10860"}, "LOOKBACK_SECONDS='10860'"),
        ({"GRACE_SECONDS": "-1"}, "GRACE_SECONDS='-1' is not valid: expected seconds, 0 or more"),
        ({"ARCHITECTURES": ""}, "ARCHITECTURES='' is not valid: expected comma-separated EC2 "
                                "architectures, at least one"),
    ],
)  # fmt: skip
def test_a_bad_setting_is_named_where_the_handler_reads_it(
    variables: dict[str, str], named: str
) -> None:
    environment = {**CLUSTER, **variables} if variables else {}
    with pytest.raises(ConfigError, match=named.replace("(", r"\(")):
        SilenceCheckConfig.from_environ(environment)


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"cluster_name": ""}, "CLUSTER_NAME=''"),
        ({"lookback_s": 90}, "LOOKBACK_SECONDS='90'"),
        ({"lookback_s": 10_860}, "LOOKBACK_SECONDS='10860'"),
        ({"grace_s": -1}, "GRACE_SECONDS='-1'"),
        ({"architectures": ()}, "ARCHITECTURES=''"),
    ],
)
def test_a_bad_setting_is_named_where_the_construct_renders_it(
    values: dict[str, object], named: str
) -> None:
    """The construct renders the environment at synth: a value the handler would refuse at
    its start is refused there first, with the same message."""
    config = SilenceCheckConfig(cluster_name="train").replaced(**values)
    with pytest.raises(ConfigError, match=named):
        config.environment()
