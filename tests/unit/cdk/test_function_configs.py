"""Each function's configuration follows the settings: every field that is not a resource's
name changes when its setting does, so a setting cannot be left at the handler's default; and
the demo sets every variable each handler reads, built by the same builders as the stacks."""

import os
from dataclasses import fields, replace
from typing import Any

import boto3
import pytest
from moto import mock_aws

from cdk.alarms.catalog import deployed_alarms
from cdk.alarms.promql import PromQLQuery
from cdk.function_configs import (
    notifier_config,
    report_config,
    silence_config,
    storage_config,
    training_config,
)
from cdk.settings import Settings
from cli.demo.notifications import _deployed
from cli.demo.report import report_function_config
from cli.demo.storage import storage_analyzer_config
from cli.demo.training import ENV as DEMO_TRAINING_ENV
from gpu_insights_agent.contract.metrics import ExporterSink
from lambdas.notifier.config import NotifierConfig
from lambdas.shared.config import FunctionConfig
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.storage_analyzer.config import StorageConfig
from lambdas.training_analyzer.config import TrainingConfig
from lambdas.weekly_report.config import ReportConfig

#: A deployment whose every setting that reaches a function differs from the default.
CHANGED = Settings(
    cluster_name="train-prod",
    storage_buckets=("train-data",),
    storage_volume_scope="all",
    storage_shard_volumes=5_000,
    training_shard_jobs=500,
    lookback_days=30,
    gpu_hour_price_usd=2.5,
    low_power_percent=25.0,
    gpu_memory_near_capacity_percent=92.0,
    gpu_memory_headroom_percent=20.0,
    failure_log_jobs=25,
    training_data_sources=("train-data",),
    exporter_interval_seconds=300,
    gpu_instance_type="p4d.24xlarge",
    xid_host_log_filter=True,
    xid_require_kernel_confirmation=True,
    container_insights_mode=ContainerInsightsMode.CLASSIC,
    webhook_url_parameter="/gpu-insights/train-prod/webhook",
)
#: Fields the settings do not carry: names of resources the caller creates, the default event
#: bus, which the app always uses, and the silence check's grace for a booting node and the
#: architectures the exporter's manifest runs on (cdk/node_config/manifest.py).
NOT_SETTINGS = {
    "report_bucket",
    "failure_queue_url",
    "event_bus",
    "topic_arn",
    "region",
    "critical_topic_arn",
    "warning_topic_arn",
    "sent_table",
    "exporter_log_group",
    "grace_s",
    "architectures",
}


def _built(settings: Settings) -> list[FunctionConfig]:
    return [
        storage_config(settings, report_bucket="b"),
        training_config(settings, report_bucket="b"),
        report_config(settings, report_bucket="b", topic_arn="t"),
        notifier_config(
            settings,
            region="us-east-1",
            critical_topic_arn="c",
            warning_topic_arn="w",
            sent_table="s",
            exporter_log_group="g",
        ),
        silence_config(settings),
    ]


@pytest.mark.parametrize("index", range(5))
def test_every_field_the_settings_carry_follows_them(index: int) -> None:
    """Each field differs from the defaults' in CHANGED or in CHANGED in OTel mode (the default
    mode, where the PromQL alarm kinds follow ``gpu_instance_type``) with the exporter's OTLP
    sink (which OTel mode alone takes)."""
    default = _built(Settings(cluster_name="train"))[index]
    otel = replace(
        CHANGED,
        container_insights_mode=ContainerInsightsMode.OTEL,
        exporter_sink=ExporterSink.OTLP,
    )
    changed = [_built(CHANGED)[index], _built(otel)[index]]
    same = [
        f.name
        for f in fields(default)  # type: ignore[arg-type]
        if f.name not in NOT_SETTINGS
        and all(getattr(default, f.name) == getattr(c, f.name) for c in changed)
    ]
    assert same == [], f"{type(default).__name__} does not follow the settings for {same}"


def test_the_training_analyzer_gets_the_low_power_line_the_alarm_gets() -> None:
    config = training_config(CHANGED, report_bucket="b")
    assert config.environment()["LOW_POWER_PERCENT"] == "25"
    assert config.gpu_thresholds.low_power_percent == CHANGED.alarm_settings().low_power_percent


def test_one_default_for_the_low_power_line() -> None:
    """The setting, the alarm's and the attribution's defaults are one value (attribution's
    LOW_POWER_PERCENT), so a deployment that sets nothing classes hours as the alarm pages."""
    assert (
        Settings(cluster_name="train").low_power_percent
        == Settings(cluster_name="train").alarm_settings().low_power_percent
        == TrainingConfig(cluster_name="c", report_bucket="b").gpu_thresholds.low_power_percent
        == 30.0
    )


def _variables(config: type[FunctionConfig], *, runtime: bool = True) -> set[str]:
    return {v.name for v in config.variables().values() if runtime or not v.runtime}


def _optional(config: type[FunctionConfig]) -> set[str]:
    """Variables a config may leave unset (None): the failure queue, the construct's, the
    notifier's webhook, a channel the demo does not use, and its PromQL alarm kinds, which
    Classic has none of."""
    optional = ("failure_queue_url", "webhook_url_parameter", "promql_alarm_kinds")
    return {v.name for n, v in config.variables().items() if n in optional}


def test_the_demo_sets_every_variable_each_handler_reads() -> None:
    """The demo runs the handlers with the environment its builders render; each holds every
    variable the handler's declaration reads (the failure queue aside: the demo has none).
    The demo does not run the silence check, so it is not among them; its functional test
    (tests/functional/lambdas/test_silence_check.py) runs it with its builder's environment."""
    settings = Settings(cluster_name="train")
    environments: dict[type[FunctionConfig], dict[str, str]] = {
        StorageConfig: storage_analyzer_config(settings).environment(),
        TrainingConfig: DEMO_TRAINING_ENV,
        ReportConfig: report_function_config(settings, "arn:aws:sns:us-east-1:1:r").environment(),
    }
    with mock_aws():
        session = boto3.Session(
            region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
        )
        with _deployed(session, settings):
            environments[NotifierConfig] = {
                name: os.environ[name] for name in _variables(NotifierConfig) if name in os.environ
            }
    for config, environment in environments.items():
        missing = _variables(config) - _optional(config) - set(environment)
        assert missing == set(), f"the demo leaves {sorted(missing)} of {config.__name__} unset"
        config.from_environ(environment)


def test_the_demo_reads_its_week_as_the_deployment_would() -> None:
    """The demo's deployment differs from the default only where its world does (its days,
    buckets, data source and exporter's cycle); everything else is the settings'."""
    settings = Settings(cluster_name="train")
    storage = storage_analyzer_config(settings)
    assert replace(storage, buckets=(), lookback_days=14) == storage_config(
        settings, report_bucket=storage.report_bucket
    )
    report = report_function_config(settings, "t")
    assert (
        report.alarm_kind_names
        == report_config(settings, report_bucket="b", topic_arn="t").alarm_kind_names
    )
    assert report.alarm_kind_names  # the catalog's kinds, as the stack sets them
    training: Any = TrainingConfig.from_environ(DEMO_TRAINING_ENV)
    assert training.low_power_percent == settings.low_power_percent


def test_the_report_names_every_deployed_alarm_whose_history_it_reads() -> None:
    """The report reads alarm history by exact alarm name (its role may read no other): the
    names its configuration gives are the deployed alarms' own, a sharded kind's every shard
    included, for a fleet of three shards."""
    settings = Settings(cluster_name="train", fleet_gpus=1200)
    config = report_config(settings, report_bucket="b", topic_arn="t")
    deployed = {s.alarm_name("train") for s in deployed_alarms(settings.alarm_settings())}
    assert set(config.alarm_names()) == deployed
    assert len(config.alarm_names()) == len(deployed)
    assert "gpu-insights-train-gpu-lost-shard-02" in config.alarm_names()
    assert config.alarm_shards is not None
    assert config.alarm_shards["gpu-insights-train-gpu-lost"] == 3
    assert ReportConfig.from_environ(config.environment()) == config


@pytest.mark.parametrize(
    "mode",
    [
        {"container_insights_mode": ContainerInsightsMode.OTEL},
        {"container_insights_mode": ContainerInsightsMode.OTEL, "exporter_sink": ExporterSink.EMF},
        {"container_insights_mode": ContainerInsightsMode.CLASSIC},
    ],
)
def test_the_notifier_knows_every_deployed_alarm_from_an_environment_under_4_kb(
    mode: dict[str, Any],
) -> None:
    """The environment lists the kinds only; the notifier derives each fleet count alarm's kind,
    severity and title (lambdas/notifier/config.py ``with_cap_kinds``): Lambda refuses more
    than 4 KB of environment variables, which OTel mode's kinds and their counts passed."""
    from lambdas.notifier.handler import deployment

    settings = Settings(cluster_name="train-prod", region="us-east-1", **mode)
    config = notifier_config(
        settings,
        region="us-east-1",
        critical_topic_arn="arn:aws:sns:us-east-1:123456789012:gpu-insights-train-prod-critical",
        warning_topic_arn="arn:aws:sns:us-east-1:123456789012:gpu-insights-train-prod-warning",
        sent_table="gpu-insights-train-prod-sent",
        exporter_log_group="/aws/gpu-insights/train-prod/exporter",
    )
    environment = config.environment()
    assert sum(len(k) + len(v) for k, v in environment.items()) < 4096
    assert not any(kind.endswith("-at-cap") for kind in config.alarm_kinds)
    known = deployment(config)
    specs = deployed_alarms(settings.alarm_settings())
    for spec in specs:
        assert known.alarm_kinds[spec.alarm_kind] == (spec.severity, spec.title), spec.key
    assert {s.alarm_kind for s in specs if isinstance(s.metric, PromQLQuery)} <= known.promql_kinds
