import json
import re
import tarfile
from dataclasses import fields
from pathlib import Path
from typing import Any

import aws_cdk
import pytest

from cdk.settings import (
    SETTING_KEYS,
    AgentCredentials,
    Settings,
    SettingsError,
    settings_from_context,
)
from gpu_insights_agent.contract.metrics import ExporterSink
from lambdas.shared.container_insights_mode import ContainerInsightsMode

OIDC = "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/ABC123"


def _read(context: dict[str, Any]) -> Settings:
    """Settings for the cluster ``train`` and what ``context`` sets (or overrides)."""
    return settings_from_context({"cluster_name": "train", **context})


def test_every_field_is_a_context_key() -> None:
    assert {field.name for field in fields(Settings)} == set(SETTING_KEYS)


def test_the_defaults_need_only_a_cluster_name() -> None:
    settings = _read({})
    assert settings.cluster_name == "train"
    assert settings.install_addon is True
    assert settings.agent_credentials is AgentCredentials.POD_IDENTITY


def test_strings_from_the_command_line_are_parsed() -> None:
    settings = _read(
        {
            "cluster_name": "train-prod",
            "account": "123456789012",
            "region": "eu-west-1",
            "install_addon": "false",
            "addon_version": "v4.1.0-eksbuild.1",
            "container_insights_mode": "Classic",
            "agent_credentials": "IRSA",
            "oidc_provider_arn": OIDC,
            "gpu_taint_keys": "nvidia.com/gpu, example.com/accelerator",
            "agent_interval_seconds": "30",
            "alarm_emails": '["oncall@example.com", "lead@example.com"]',
        }
    )
    assert settings.cluster_name == "train-prod"
    assert settings.install_addon is False
    assert settings.container_insights_mode is ContainerInsightsMode.CLASSIC
    assert settings.agent_credentials is AgentCredentials.IRSA
    assert settings.gpu_taint_keys == ("nvidia.com/gpu", "example.com/accelerator")
    assert settings.agent_interval_seconds == 30
    assert settings.alarm_emails == ("oncall@example.com", "lead@example.com")
    assert settings.agent_config_parameter_name == "AmazonCloudWatch-GpuInsights-train-prod"


@pytest.mark.parametrize("context", [{}, {"cluster_name": None}, {"region": "us-west-2"}])
def test_there_is_no_default_cluster(context: dict[str, Any]) -> None:
    """A deployment names its cluster: none given (or null in cdk.json) stops synth in one line
    that says where the name goes, rather than deploying alarms for a cluster of our choosing."""
    with pytest.raises(SettingsError) as err:
        settings_from_context(context)
    assert str(err.value) == (
        "setting cluster_name is missing: name the EKS cluster to instrument with "
        '-c cluster_name=NAME or "cluster_name" in cdk.json\'s "context"'
    )


@pytest.mark.parametrize(
    ("context", "said"),
    [
        # The first deploy as a new user tried it: the setting is cluster_name, and there is
        # no setting for an SNS topic; neither key may be dropped in silence.
        (
            {"cluster": "ml-prod", "sns_topic_arn": "arn:aws:sns:us-west-2:123456789012:oncall"},
            "unknown setting 'cluster': did you mean 'cluster_name'?",
        ),
        # The existing on-call topic has its settings now; the user's guess points to them.
        (
            {"cluster_name": "ml-prod", "sns_topic_arn": "arn:aws:sns:us-west-2:1:oncall"},
            "unknown setting 'sns_topic_arn': did you mean 'critical_topic_arn'?",
        ),
        ({"cluster-name": "train"}, "unknown setting 'cluster-name': did you mean 'cluster_name'?"),
        ({"cluster_name": "t", "alarm": "x"}, "unknown setting 'alarm': docs/settings.md"),
        ({"cluster_name": "t", "@aws-cdk": "x"}, None),
        ({"cluster_name": "t", "aws:cdk": "x"}, "unknown setting 'aws:cdk'"),
    ],
)
def test_a_key_that_is_not_a_setting_stops_synth(context: dict[str, Any], said: str | None) -> None:
    if said is None:
        assert settings_from_context(context).cluster_name == "t"
        return
    with pytest.raises(SettingsError) as err:
        settings_from_context(context)
    assert str(err.value).startswith(said)
    assert "\n" not in str(err.value)


def _cdk_lib_file(path: str) -> str:
    """A file of the aws-cdk-lib this app synthesizes with (its jsii bundle)."""
    bundle = next((Path(aws_cdk.__file__).parent / "_jsii").glob("aws-cdk-lib@*.jsii.tgz"))
    with tarfile.open(bundle) as tar:
        member = tar.extractfile(f"package/{path}")
        assert member is not None
        return member.read().decode()


def _cdk_context_keys() -> list[str]:
    """CDK's own context keys, from the installed aws-cdk-lib: the feature flags `cdk init`
    writes into cdk.json (recommended-feature-flags.json), every flag cx-api defines
    (cx-api/lib/features.js), the keys the CLI sets to steer an app (cx-api/lib/app.js), and
    what the CLI keeps in the project's context (aws/aws-cdk-cli: `cdk acknowledge` stores
    ``acknowledged-issue-numbers``, `cdk cli-telemetry` stores ``cli-telemetry``)."""
    recommended = json.loads(_cdk_lib_file("recommended-feature-flags.json"))
    exported = [
        value
        for path in ("cx-api/lib/features.js", "cx-api/lib/app.js")
        for name, value in re.findall(r'exports\.(\w+)="([^"]*)"', _cdk_lib_file(path))
        if name != "CURRENT_MV"  # the major version, "v2": not a key
    ]
    return sorted({*recommended, *exported, "acknowledged-issue-numbers", "cli-telemetry"})


def test_cdk_s_own_context_keys_are_not_settings_and_not_refused() -> None:
    keys = _cdk_context_keys()
    assert len(keys) > 100  # the flags of aws-cdk-lib 2.x, and the CLI's keys
    assert "aws:cdk:bundling-stacks" in keys
    assert "@aws-cdk/core:newStyleStackSynthesis" in keys
    assert "aws-cdk:enableDiffNoFail" in keys
    settings = settings_from_context({"cluster_name": "train", **dict.fromkeys(keys, True)})
    # From the context the sink follows the mode (OTLP in OTel mode); built directly, EMF.
    assert settings == Settings(cluster_name="train", exporter_sink=ExporterSink.OTLP)


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("cluster_name", "bad name!", "letters, digits"),
        ("account", "1234", "12-digit"),
        ("region", "mars-1", "region name"),
        ("addon_version", "4.1", "v4.1.0-eksbuild.1"),
        ("install_addon", "maybe", "true, yes, on, 1 or false, no, off, 0"),
        ("job_alarms", "2", "true, yes, on, 1 or false, no, off, 0"),
        ("region", "us-weest-2", "did you mean us-west-2?"),
        ("agent_interval_seconds", "ten", "whole number"),
        ("agent_interval_seconds", "0", "1 to 172800"),
        ("agent_credentials", "node-role", "pod-identity, irsa"),
        ("container_insights_mode", "enhanced", "one of otel, classic"),
        ("alarm_emails", "oncall-at-example", "email"),
        ("gpu_taint_keys", "bad key/with space", "taint keys"),
        ("oidc_provider_arn", "arn:aws:iam::1:role/x", "oidc-provider"),
    ],
)
def test_bad_value_names_key_value_and_what_is_allowed(key: str, value: str, allowed: str) -> None:
    with pytest.raises(SettingsError) as err:
        _read({key: value})
    message = str(err.value)
    assert f"{key}=" in message
    assert value in message
    assert allowed in message


def test_irsa_needs_the_oidc_provider() -> None:
    with pytest.raises(SettingsError, match="oidc_provider_arn=None"):
        _read({"agent_credentials": "irsa"})


def test_settings_are_frozen() -> None:
    settings = Settings(cluster_name="train")
    with pytest.raises(AttributeError):
        settings.cluster_name = "other"  # type: ignore[misc]


# EventBridge rate expressions: "If the value is equal to 1, then the unit must be singular. If
# the value is greater than 1, the unit must be plural"; value is "a positive number".
# https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rate-expressions.html
# Cron: six fields; "If you specify a value or a * (asterisk) in one of the [day-of-month,
# day-of-week] fields, you must use a ? in the other."
# https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-scheduled-rule-pattern.html
@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        ("cron(bad)", "6 fields"),
        ("rate(1 minutes)", "singular unit for 1"),
        ("rate(5 hour)", "plural one above"),
        ("rate(0 days)", "at least 1"),
        ("rate(1 week)", "rate(value unit)"),
        ("every day", "rate(value unit)"),
        ("cron(0 8 * * MON *)", "'?' in exactly one"),
        ("cron(0 8 ? * ? *)", "'?' in exactly one"),
        ("cron(0 8 ? * MON)", "6 fields"),
        ("cron(60 8 ? * MON *)", "minutes field"),
        ("cron(0 24 * * ? *)", "hours field"),
        ("cron(0 8 32 * ? *)", "day-of-month field"),
        ("cron(0 8 ? FOO MON *)", "month field"),
        ("cron(0 8 ? * 3#6 *)", "day-of-week field"),
        ("cron(0 8 * * ? 1969)", "year field"),
    ],
)
def test_schedules_eventbridge_refuses_are_refused(value: str, allowed: str) -> None:
    for key in ("storage_schedule", "training_schedule", "report_schedule"):
        with pytest.raises(SettingsError) as err:
            _read({key: value})
        message = str(err.value)
        assert message.startswith(f"setting {key}={value!r} is not valid: expected ")
        assert allowed in message
        assert "\n" not in message


@pytest.mark.parametrize(
    "value",
    [
        "rate(1 minute)",
        "rate(5 minutes)",
        "rate(1 hour)",
        "rate(7 days)",
        "cron(0 10 * * ? *)",
        "cron(15 12 * * ? *)",
        "cron(0 18 ? * MON-FRI *)",
        "cron(0 8 1 * ? *)",
        "cron(0/15 * * * ? *)",
        "cron(0/10 * ? * MON-FRI *)",
        "cron(0/5 8-17 ? * MON-FRI *)",
        "cron(0 9 ? * 2#1 *)",
        "cron(0 10 ? * 6L 2022-2023)",
        "cron(0 0 3W * ? *)",
        "cron(0 0 L * ? *)",
        "cron(0 8 1,15 JAN,JUL ? *)",
    ],
)
def test_schedules_from_the_eventbridge_docs_are_accepted(value: str) -> None:
    assert _read({"storage_schedule": value}).storage_schedule == value


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("kubectl_role_arn", "arn:aws:s3:::train-data", "service iam, not 's3'"),
        ("kubectl_role_arn", "arn:aws:iam::123456789012:user/ops", "IAM role ARN"),
        ("kubectl_role_arn", "arn:aws:iam:us-east-1:123456789012:role/x", "no region"),
        ("kubectl_role_arn", "arn:aws:iam::12345:role/x", "12-digit account"),
        ("kubectl_role_arn", "arn:azure:iam::123456789012:role/x", "AWS partition"),
        ("kubectl_role_arn", "arn:aws:iam::123456789012:role/" + "r" * 65, "IAM role ARN"),
        ("kubectl_role_arn", "eks-admin", "arn:partition:service"),
        ("oidc_provider_arn", "arn:aws:iam::123456789012:role/x", "oidc-provider"),
        ("alarm_emails", "oncall@", "email addresses"),
        ("alarm_emails", "on call@example.com", "email addresses"),
        ("warning_emails", "ops@localhost", "domain such as example.com"),
        ("report_emails", "ops@-bad.example.com", "domain such as example.com"),
        ("report_emails", "o" * 65 + "@example.com", "email addresses"),
        ("alarm_https_endpoints", "http://pager.example.com/hook", "https:// URLs"),
        ("alarm_https_endpoints", "https://", "https:// URLs"),
        ("alarm_https_endpoints", "https://pager.example.com:99999/x", "valid host and port"),
        ("alarm_https_endpoints", "https://bad_host/x", "valid host and port"),
        # PutParameter's Name: a-zA-Z0-9_.- and '/', not prefixed aws or ssm, 15 levels.
        ("webhook_url_parameter", "https://hooks.slack.com/services/T/B/X", "SSM parameter"),
        ("webhook_url_parameter", "/aws/webhook", "not starting with aws or ssm"),
        ("webhook_url_parameter", "SSM-webhook", "not starting with aws or ssm"),
        ("webhook_url_parameter", "/chat hook", "SSM parameter"),
        ("webhook_url_parameter", "/a" * 16, "SSM parameter"),
    ],
)
def test_endpoints_and_arns_aws_refuses_are_refused(key: str, value: str, allowed: str) -> None:
    with pytest.raises(SettingsError) as err:
        _read({key: value})
    message = str(err.value)
    assert message.startswith(f"setting {key}={value!r} is not valid: expected ")
    assert allowed in message


def test_good_endpoints_and_arns_are_accepted() -> None:
    settings = _read(
        {
            "kubectl_role_arn": "arn:aws-us-gov:iam::123456789012:role/platform/eks-admin",
            "agent_credentials": "irsa",
            "oidc_provider_arn": "arn:aws-cn:iam::123456789012:oidc-provider/"
            "oidc.eks.cn-north-1.amazonaws.com.cn/id/ABC123",
            "alarm_emails": "first.last+gpu@ops.example.co.uk",
            "alarm_https_endpoints": "https://events.pagerduty.com:443/integration/KEY/enqueue",
            "webhook_url_parameter": "/gpu-insights/train/chat_webhook.url",
        }
    )
    assert settings.webhook_url_parameter == "/gpu-insights/train/chat_webhook.url"
    assert settings.kubectl_role_arn == "arn:aws-us-gov:iam::123456789012:role/platform/eks-admin"


@pytest.mark.parametrize("cluster", ["gpu_train", "a" * 100, "9" + "_" * 99])
def test_every_eks_cluster_name_is_a_setting(cluster: str) -> None:
    """EKS CreateCluster: 1-100 characters, ``^[0-9A-Za-z][A-Za-z0-9\\-_]*``.
    https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html"""
    assert _read({"cluster_name": cluster}).cluster_name == cluster


@pytest.mark.parametrize("cluster", ["a" * 101, "-train", "train.prod"])
def test_a_name_eks_refuses_is_refused(cluster: str) -> None:
    with pytest.raises(SettingsError, match="1-100 letters, digits"):
        _read({"cluster_name": cluster})


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        # https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html
        ("storage_buckets", "192.168.1.1", "IP address"),
        ("storage_buckets", "xn--abc", "reserves"),
        ("storage_buckets", "data-s3alias", "reserves"),
        ("storage_buckets", "a..b", "adjacent dots"),
        ("storage_buckets", "Upper", "lowercase"),
        ("training_data_sources", "s3://train-data", "no s3://"),
        ("training_data_sources", "train-data/prefix", "no s3://"),
    ],
)
def test_names_s3_or_ec2_refuse_are_refused(key: str, value: str, allowed: str) -> None:
    with pytest.raises(SettingsError) as err:
        _read({key: value})
    assert f"{key}={value!r} is not valid: expected" in str(err.value)
    assert allowed in str(err.value)


def test_buckets_and_volume_ids_are_data_sources() -> None:
    settings = _read(
        {
            "storage_buckets": "train-data,ckpt.example.com",
            "training_data_sources": "train-data,vol-0123456789abcdef0,vol-01234567",
        }
    )
    assert settings.storage_buckets == ("train-data", "ckpt.example.com")
    assert settings.training_data_sources[1] == "vol-0123456789abcdef0"


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("training_fleet_jobs", "-1", "0 to 1000000 jobs"),
        ("training_fleet_jobs", "1000001", "0 to 1000000 jobs"),
        ("training_shard_jobs", "9", "10 to 20000 jobs"),
        ("training_shard_jobs", "20001", "10 to 20000 jobs"),
        ("storage_shard_volumes", "99", "100 to 200000 volumes"),
    ],
)
def test_fleet_sizes_outside_their_bounds_are_refused(key: str, value: str, allowed: str) -> None:
    with pytest.raises(SettingsError) as err:
        _read({key: value})
    assert str(err.value).startswith(f"setting {key}={int(value)!r} is not valid: expected ")
    assert allowed in str(err.value)


def test_the_training_fleet_threshold_defaults_to_one_function() -> None:
    settings = _read({"training_fleet_jobs": "20000"})
    assert (settings.training_fleet_jobs, settings.training_shard_jobs) == (20_000, 2_000)
    assert _read({}).training_fleet_jobs <= _read({}).training_shard_jobs


def test_a_shard_estimated_past_half_its_timeout_is_refused_at_synth() -> None:
    """lambdas/shared/shards.py: a volume-day costs 4.0e-4 s of CPU (0.69 ms at the 1,024 MB
    function's 0.58 of a vCPU) and 58 datapoints (0.58 ms of CloudWatch at 1 s a full call),
    so 14 days of 25,381 volumes fit 450 s (half the 900 s timeout: 449.9994 s) and 25,382
    do not (450.017 s); a job-day costs 6.9e-4 s and 216 datapoints: 6,425 jobs fit 300 s
    (half of 600 s), 6,426 do not."""
    assert _read({"storage_shard_volumes": "25381"}).storage_shard_volumes
    assert _read({"training_shard_jobs": "6425"}).training_shard_jobs
    with pytest.raises(SettingsError, match=r"storage_shard_volumes=25382 with lookback_days=14"):
        _read({"storage_shard_volumes": "25382"})
    with pytest.raises(SettingsError, match=r"training_shard_jobs=6426 with lookback_days=14"):
        _read({"training_shard_jobs": "6426"})


def test_a_long_lookback_needs_smaller_shards() -> None:
    """90 days multiply each item's work by 90/14: the default 20,000 volumes would take
    about 2,280 s; at most 3,948 fit."""
    # Left at their defaults, the shard sizes shrink to what fits the lookback.
    shrunk = _read({"lookback_days": "90"})
    assert (shrunk.storage_shard_volumes, shrunk.training_shard_jobs) == (3_948, 999)
    assert _read({}).storage_shard_volumes == 20_000
    # Set by hand past the limit, a shard size is refused by name.
    with pytest.raises(SettingsError) as err:
        _read({"lookback_days": "90", "storage_shard_volumes": "20000"})
    assert str(err.value) == (
        "setting storage_shard_volumes=20000 with lookback_days=90 is not valid: one run of "
        "20,000 volumes x 90 days is estimated at 2,280 s in the 1,024 MB function, over 450 s "
        "(half its 900 s timeout); expected at most 3,948 volumes at lookback_days=90"
    )
    settings = _read(
        {"lookback_days": "90", "storage_shard_volumes": "3948", "training_shard_jobs": "999"}
    )
    assert settings.lookback_days == 90


TOPIC = "arn:aws:sns:us-west-2:123456789012:oncall-critical"
KEY = "arn:aws:kms:us-west-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def test_existing_topics_and_their_keys_are_settings() -> None:
    settings = _read(
        {
            "region": "us-west-2",
            "critical_topic_arn": TOPIC,
            "critical_topic_kms_key_arn": KEY,
            "report_topic_arn": "arn:aws:sns:us-west-2:123456789012:gpu_reports",
            # A multi-Region key: mrk- and 32 hex digits.
            "report_topic_kms_key_arn": "arn:aws:kms:us-west-2:123456789012:key/"
            "mrk-1234abcd12ab34cd56ef1234567890ab",
            "warning_emails": "ops@example.com",
        }
    )
    assert settings.topic_arn("critical") == TOPIC
    assert settings.topic_kms_key_arn("critical") == KEY
    assert settings.topic_arn("warning") is None


@pytest.mark.parametrize(
    ("context", "allowed"),
    [
        ({"critical_topic_arn": "oncall-critical"}, "an SNS ARN such as"),
        ({"critical_topic_arn": "arn:aws:sqs:us-west-2:123456789012:q"}, "an SNS ARN"),
        ({"warning_topic_arn": "arn:aws:sns:us-west-2:1234:oncall"}, "12-digit account"),
        ({"warning_topic_arn": "arn:aws:sns::123456789012:oncall"}, "a partition and a region"),
        ({"warning_topic_arn": "arn:aws:sns:us-west-2:123456789012:on.call"}, "SNS topic ARN"),
        ({"critical_topic_arn": f"{TOPIC}.fifo"}, "a standard topic"),
        (
            {
                "critical_topic_arn": TOPIC,
                "critical_topic_kms_key_arn": "arn:aws:kms:us-west-2:123456789012:alias/sns",
            },
            "IAM does not grant a key by its alias",
        ),
        ({"warning_topic_kms_key_arn": KEY}, "warning_topic_arn too"),
        # The topic's owner subscribes its recipients; the app would create subscriptions on a
        # topic whose policy and lifecycle are not its own.
        (
            {"critical_topic_arn": TOPIC, "alarm_emails": "oncall@example.com"},
            "none with critical_topic_arn: subscribe them on that topic",
        ),
        (
            {"critical_topic_arn": TOPIC, "alarm_https_endpoints": "https://pager.example.com"},
            "none with critical_topic_arn",
        ),
        (
            {"report_topic_arn": TOPIC, "report_emails": "a@example.com,b@example.com"},
            "none with report_topic_arn",
        ),
        # CloudWatch alarm actions and the functions' SNS clients are regional.
        ({"region": "eu-west-1", "critical_topic_arn": TOPIC}, "the deployment's region eu-west-1"),
    ],
)
def test_existing_topics_aws_or_the_app_cannot_use_are_refused(
    context: dict[str, str], allowed: str
) -> None:
    with pytest.raises(SettingsError) as err:
        _read(context)
    assert str(err.value).startswith("setting ")
    assert allowed in str(err.value)
    assert "\n" not in str(err.value)


ROLE = "arn:aws:iam::123456789012:role/eks-admin"
NETWORK = {
    "kubectl_vpc_id": "vpc-0a1b2c3d4e5f67890",
    "kubectl_subnet_ids": "subnet-0a1b2c3d4e5f67890, subnet-1a1b2c3d",
    "kubectl_security_group_id": "sg-0a1b2c3d4e5f67890",
}


def test_the_kubectl_network_is_three_settings() -> None:
    settings = _read({"kubectl_role_arn": ROLE, **NETWORK})
    assert settings.kubectl_subnet_ids == ("subnet-0a1b2c3d4e5f67890", "subnet-1a1b2c3d")


@pytest.mark.parametrize(
    ("context", "said"),
    [
        (
            {"kubectl_role_arn": ROLE, "kubectl_vpc_id": NETWORK["kubectl_vpc_id"]},
            "setting kubectl_vpc_id='vpc-0a1b2c3d4e5f67890' is not valid: expected "
            "kubectl_subnet_ids, kubectl_security_group_id too",
        ),
        (
            {**NETWORK, "kubectl_security_group_id": None, "kubectl_role_arn": ROLE},
            "expected kubectl_security_group_id too",
        ),
        (NETWORK, "expected kubectl_role_arn too"),
        ({"kubectl_role_arn": ROLE, **NETWORK, "kubectl_vpc_id": "vpc-123"}, "a VPC id"),
        (
            {"kubectl_role_arn": ROLE, **NETWORK, "kubectl_subnet_ids": "subnet-0a1b2c3d,sg-1"},
            "subnet ids",
        ),
        (
            {"kubectl_role_arn": ROLE, **NETWORK, "kubectl_security_group_id": "default"},
            "a security group id",
        ),
    ],
)
def test_a_partial_or_bad_kubectl_network_is_refused(context: dict[str, Any], said: str) -> None:
    with pytest.raises(SettingsError) as err:
        _read(context)
    assert said in str(err.value)
    assert "\n" not in str(err.value)


def test_the_default_mode_is_the_one_aws_recommends() -> None:
    """ "OTel Container Insights (recommended)"; Classic "is in maintenance mode" (CloudWatch User
    Guide, "Amazon EKS"): a new deployment gets OTel mode, a cluster on Classic chooses it."""
    assert settings_from_context({"cluster_name": "t"}).container_insights_mode == "otel"
    classic = {"cluster_name": "t", "container_insights_mode": "classic"}
    assert settings_from_context(classic).container_insights_mode == "classic"


@pytest.mark.parametrize(
    ("region", "unset", "otel_ok"),
    [
        # OTEL_REGIONS: "US East (N. Virginia), US West (Oregon), Europe (Ireland), Asia
        # Pacific (Singapore), and Asia Pacific (Sydney)" (container-insights-otel-metrics.html).
        ("us-east-1", "otel", True),
        ("us-west-2", "otel", True),
        ("eu-west-1", "otel", True),
        ("ap-southeast-1", "otel", True),
        ("ap-southeast-2", "otel", True),
        ("eu-central-1", "classic", False),
        ("us-east-2", "classic", False),
        ("ap-northeast-1", "classic", False),
        (None, "otel", True),  # synth without a Region: its deploy Region decides
    ],
)
def test_otel_mode_only_where_aws_offers_it(region: str | None, unset: str, otel_ok: bool) -> None:
    """The unset mode is OTel only where AWS offers it, Classic elsewhere; OTel set in another
    Region is refused in one line naming the setting that fixes it."""
    context: dict[str, Any] = {"cluster_name": "t"}
    if region is not None:
        context["region"] = region
    assert settings_from_context(context).container_insights_mode == unset
    assert settings_from_context({**context, "container_insights_mode": "classic"})
    otel = {**context, "container_insights_mode": "otel"}
    if otel_ok:
        assert settings_from_context(otel).container_insights_mode == "otel"
        return
    with pytest.raises(SettingsError) as err:
        settings_from_context(otel)
    said = str(err.value)
    assert "\n" not in said
    assert f"-c container_insights_mode=classic in {region}" in said
    assert "only in ap-southeast-1, ap-southeast-2, eu-west-1, us-east-1, us-west-2" in said


@pytest.mark.parametrize(
    ("version", "ok"),
    [
        ("v6.2.0-eksbuild.1", True),
        ("v6.1.9-eksbuild.2", False),
        ("v6.0.1-eksbuild.1", False),
        ("v10.0.0-eksbuild.1", True),
        ("v6.0.0-eksbuild.9", False),
        ("v5.9.9-eksbuild.3", False),
        ("v4.1.0-eksbuild.1", False),
    ],
)
def test_otel_mode_refuses_an_add_on_too_old_for_it(version: str, ok: bool) -> None:
    """ "Version 6.2.0 or later of the amazon-cloudwatch-observability add-on"
    (container-insights-eks-otel-quickstart.html); compared as numbers, so v10 is newer than
    v6. Classic takes any version."""
    context = {"cluster_name": "t", "addon_version": version, "container_insights_mode": "otel"}
    assert settings_from_context({**context, "container_insights_mode": "classic"})
    if ok:
        assert settings_from_context(context).addon_version == version
        return
    with pytest.raises(SettingsError) as err:
        settings_from_context(context)
    assert str(err.value) == (
        f"setting addon_version={version!r} is not valid: expected v6.2.0-eksbuild.1 or later "
        "with container_insights_mode=otel (or -c container_insights_mode=classic)"
    )


def test_the_exporter_sends_otlp_only_where_the_add_ons_agent_serves_it() -> None:
    """The agent's OTLP endpoint is "available in version 8.0.0 and later" of the add-on
    (eks-observability-addon-otlp-endpoint.html), and only PromQL reads what arrives there: so
    OTel mode, and no pinned add-on older than 8.0.0."""
    otel = {"cluster_name": "t", "container_insights_mode": "otel", "exporter_sink": "OTLP"}
    assert settings_from_context(otel).exporter_sink == "otlp"
    pinned = {**otel, "addon_version": "v8.0.0-eksbuild.1"}
    assert settings_from_context(pinned).exporter_sink == "otlp"
    with pytest.raises(SettingsError) as err:
        settings_from_context({**otel, "container_insights_mode": "classic"})
    assert str(err.value).startswith(
        "setting exporter_sink='otlp' is not valid: "
        "expected emf unless container_insights_mode=otel"
    )
    with pytest.raises(SettingsError) as err:
        settings_from_context({**otel, "addon_version": "v6.2.0-eksbuild.1"})
    assert str(err.value) == (
        "setting addon_version='v6.2.0-eksbuild.1' is not valid: expected v8.0.0-eksbuild.1 or "
        "later with exporter_sink=otlp (the agent's OTLP endpoint), or -c exporter_sink=emf"
    )


@pytest.mark.parametrize(
    ("context", "sink"),
    [
        ({}, "otlp"),  # OTel by default: every reader is PromQL, which sees only OTLP
        ({"region": "us-west-2"}, "otlp"),
        ({"region": "eu-central-1"}, "emf"),  # no OTel there, so Classic, so EMF
        ({"container_insights_mode": "classic"}, "emf"),
        ({"addon_version": "v8.0.0-eksbuild.1"}, "otlp"),  # the first with the endpoint
        ({"addon_version": "v10.1.0-eksbuild.2"}, "otlp"),
        ({"addon_version": "v7.9.9-eksbuild.3"}, "emf"),  # OTel mode, no OTLP endpoint yet
        ({"addon_version": "v6.2.0-eksbuild.1"}, "emf"),
        ({"exporter_sink": "emf"}, "emf"),  # set, it is kept
        ({"addon_version": "v6.2.0-eksbuild.1", "container_insights_mode": "classic"}, "emf"),
    ],
)
def test_the_unset_sink_is_otlp_in_otel_mode_where_the_add_on_serves_it(
    context: dict[str, Any], sink: str
) -> None:
    """The sink follows the mode as the mode follows the Region: OTLP in OTel mode (the
    add-on's OTLP endpoint is "available in version 8.0.0 and later",
    eks-observability-addon-otlp-endpoint.html, so a pinned older add-on gets EMF rather than
    a refusal), EMF in Classic."""
    assert _read(context).exporter_sink == sink


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("gpu_memory_near_capacity_percent", "100"),
        ("gpu_memory_near_capacity_percent", "40"),
        ("gpu_memory_headroom_percent", "0"),
        ("gpu_memory_headroom_percent", "150"),
    ],
)
def test_gpu_memory_lines_outside_their_bounds_are_refused(key: str, value: str) -> None:
    with pytest.raises(SettingsError) as err:
        _read({key: value})
    assert str(err.value) == (
        f"setting {key}={float(value)!r} is not valid: expected "
        + ("50 to 99 percent" if "capacity" in key else "1 to 99 percent")
    )


def test_gpu_memory_lines_reach_the_training_analyzer() -> None:
    from cdk.function_configs import training_config

    settings = _read({"gpu_memory_near_capacity_percent": "92.5", "gpu_memory_headroom_percent": 5})
    config = training_config(settings, report_bucket="b")
    env = config.environment()
    assert env["GPU_MEMORY_NEAR_CAPACITY_PERCENT"] == "92.5"
    assert env["GPU_MEMORY_HEADROOM_PERCENT"] == "5"
    assert config.memory_thresholds.near_capacity_percent == 92.5


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # One parser for -c (always a string) and cdk.json (JSON's own types): once
        # -c job_alarms=yes was accepted but =off refused, and "install_addon": "false" (a
        # string) accepted while "job_alarms": 1 was refused.
        ("yes", True), ("off", False), ("On", True), (" FALSE ", False), ("0", False),
        (True, True), (False, False), (1, True), (0, False), ("false", False),
    ],
)  # fmt: skip
def test_a_boolean_is_read_the_same_from_c_and_cdk_json(raw: object, expected: bool) -> None:
    settings = settings_from_context({"cluster_name": "c", "job_alarms": raw, "install_addon": raw})
    assert (settings.job_alarms, settings.install_addon) == (expected, expected)


def test_a_whole_number_from_json_may_be_written_as_a_float() -> None:
    assert settings_from_context({"cluster_name": "c", "fleet_gpus": 2000.0}).fleet_gpus == 2000
    with pytest.raises(SettingsError, match=r"fleet_gpus=2000\.5 is not valid"):
        settings_from_context({"cluster_name": "c", "fleet_gpus": 2000.5})


@pytest.mark.parametrize("region", ["us-west-2", "eu-central-1", "cn-north-1", "us-gov-west-1"])
def test_every_partitions_region_is_taken(region: str) -> None:
    """botocore's endpoint data (endpoints.json) lists each partition's Regions."""
    assert settings_from_context({"cluster_name": "c", "region": region}).region == region


@pytest.mark.parametrize(
    ("key", "raw"),
    [
        ("fleet_gpus", "1_000"),
        ("fleet_gpus", "\uff12\uff10\uff10\uff10"),
        ("low_power_percent", "1_0"),
    ],
)
def test_a_number_is_ascii_digits(key: str, raw: str) -> None:
    """int() and float() take "1_000" and full-width digits; docs/settings.md says digits."""
    with pytest.raises(SettingsError, match=f"setting {key}="):
        settings_from_context({"cluster_name": "c", key: raw})
