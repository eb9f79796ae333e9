from dataclasses import fields

import pytest

from cdk.settings import (
    EXAMPLE_CLUSTER_NAME,
    SETTING_KEYS,
    AgentCredentials,
    Settings,
    SettingsError,
    settings_from_context,
)

OIDC = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/ABC123"


def test_every_field_is_a_context_key() -> None:
    assert {field.name for field in fields(Settings)} == set(SETTING_KEYS)


def test_no_context_gives_the_documented_example() -> None:
    settings = settings_from_context({})
    assert settings.cluster_name == EXAMPLE_CLUSTER_NAME
    assert settings.is_example
    assert settings.install_addon is True
    assert settings.agent_credentials is AgentCredentials.POD_IDENTITY


def test_strings_from_the_command_line_are_parsed() -> None:
    settings = settings_from_context(
        {
            "cluster_name": "train-prod",
            "account": "123456789012",
            "region": "eu-west-1",
            "install_addon": "false",
            "addon_version": "v4.1.0-eksbuild.1",
            "agent_credentials": "IRSA",
            "oidc_provider_arn": OIDC,
            "gpu_taint_keys": "nvidia.com/gpu, example.com/accelerator",
            "agent_interval_seconds": "30",
            "alarm_emails": '["oncall@example.com", "lead@example.com"]',
        }
    )
    assert settings.cluster_name == "train-prod"
    assert not settings.is_example
    assert settings.install_addon is False
    assert settings.agent_credentials is AgentCredentials.IRSA
    assert settings.gpu_taint_keys == ("nvidia.com/gpu", "example.com/accelerator")
    assert settings.agent_interval_seconds == 30
    assert settings.alarm_emails == ("oncall@example.com", "lead@example.com")
    assert settings.agent_config_parameter_name == "AmazonCloudWatch-GpuInsights-train-prod"


def test_cdk_feature_flags_are_not_settings() -> None:
    settings = settings_from_context({"@aws-cdk/core:newStyleStackSynthesis": True})
    assert settings.is_example


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("cluster_name", "bad name!", "letters, digits"),
        ("account", "1234", "12-digit"),
        ("region", "mars-1", "region name"),
        ("addon_version", "4.1", "v4.1.0-eksbuild.1"),
        ("install_addon", "maybe", "true or false"),
        ("agent_interval_seconds", "ten", "whole number"),
        ("agent_interval_seconds", "0", "1 to 172800"),
        ("agent_credentials", "node-role", "pod-identity, irsa"),
        ("alarm_emails", "oncall-at-example", "email"),
        ("gpu_taint_keys", "bad key/with space", "taint keys"),
        ("oidc_provider_arn", "arn:aws:iam::1:role/x", "oidc-provider"),
    ],
)
def test_bad_value_names_key_value_and_what_is_allowed(key: str, value: str, allowed: str) -> None:
    with pytest.raises(SettingsError) as err:
        settings_from_context({key: value})
    message = str(err.value)
    assert f"{key}=" in message
    assert value in message
    assert allowed in message


def test_irsa_needs_the_oidc_provider() -> None:
    with pytest.raises(SettingsError, match="oidc_provider_arn=None"):
        settings_from_context({"agent_credentials": "irsa"})


def test_misspelt_setting_is_refused_with_a_suggestion() -> None:
    with pytest.raises(SettingsError, match=r"'cluster-name'.*did you mean 'cluster_name'"):
        settings_from_context({"cluster-name": "train"})


def test_settings_are_frozen() -> None:
    settings = Settings(cluster_name="train")
    with pytest.raises(AttributeError):
        settings.cluster_name = "other"  # type: ignore[misc]
