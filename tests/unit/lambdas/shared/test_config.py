"""A function's configuration: read from its environment by name and type, refused by name
when a variable is missing or bad, rendered back to the same text, read again only when the
environment changed."""

import ast
from pathlib import Path

import pytest

from lambdas.notifier.config import NotifierConfig
from lambdas.shared.config import ConfigError, FunctionConfig
from lambdas.silence_check.config import SilenceCheckConfig
from lambdas.storage_analyzer.aws import VolumeScope
from lambdas.storage_analyzer.config import StorageConfig
from lambdas.training_analyzer.config import TrainingConfig
from lambdas.weekly_report.config import ReportConfig

LAMBDAS = Path(__file__).resolve().parents[4] / "lambdas"
TRAINING = {"CLUSTER_NAME": "train", "REPORT_BUCKET": "reports"}


def test_a_missing_variable_takes_the_declared_default_and_a_set_one_its_type() -> None:
    config = TrainingConfig.from_environ(TRAINING)
    assert (config.lookback_days, config.low_power_percent, config.gpu_hour_usd) == (14, 30.0, 6.88)
    assert config.data_sources == ()
    config = TrainingConfig.from_environ(
        {**TRAINING, "LOW_POWER_PERCENT": "25", "DATA_SOURCES": "train-data,vol-0abc"}
    )
    assert config.low_power_percent == 25.0
    assert config.gpu_thresholds.low_power_percent == 25.0
    assert config.data_sources == ("train-data", "vol-0abc")


@pytest.mark.parametrize(
    ("config", "environ", "message"),
    [
        (TrainingConfig, {"CLUSTER_NAME": "train"}, "REPORT_BUCKET is not set"),
        (
            TrainingConfig,
            {**TRAINING, "LOW_POWER_PERCENT": "150"},
            "LOW_POWER_PERCENT='150' is not valid: expected a percent above 0 and below 100",
        ),
        (TrainingConfig, {**TRAINING, "LOW_POWER_PERCENT": "nan"}, "LOW_POWER_PERCENT='nan'"),
        (
            TrainingConfig,
            {**TRAINING, "LOOKBACK_DAYS": "two"},
            "LOOKBACK_DAYS='two' is not valid: expected a whole number above 0",
        ),
        (TrainingConfig, {**TRAINING, "SHARD_JOBS": "0"}, "SHARD_JOBS='0'"),
        (TrainingConfig, {**TRAINING, "GPU_HOUR_USD": "-1"}, "GPU_HOUR_USD='-1'"),
        (TrainingConfig, {**TRAINING, "REPORT_BUCKET": ""}, "REPORT_BUCKET='' is not valid"),
        (
            StorageConfig,
            {**TRAINING, "VOLUME_SCOPE": "region"},
            "VOLUME_SCOPE='region' is not valid: expected cluster or all",
        ),
        (
            NotifierConfig,
            {
                "CLUSTER_NAME": "train",
                "AWS_REGION": "us-east-1",
                "CRITICAL_TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:c",
                "WARNING_TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:w",
                "SENT_TABLE": "sent",
                "GPU_DASHBOARD": "d",
                "EXPORTER_LOG_GROUP": "g",
                "ALARM_KINDS": '{"gpu-lost": ["urgent", "GPU lost"]}',
            },
            "ALARM_KINDS=",
        ),
    ],
)
def test_a_bad_or_missing_variable_is_refused_by_name(
    config: type[FunctionConfig], environ: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace("[", r"\[")):
        config.from_environ(environ)


@pytest.mark.parametrize(
    "config",
    [
        StorageConfig(
            cluster_name="train",
            report_bucket="reports",
            volume_scope=VolumeScope.ALL,
            buckets=("train-data", "checkpoints"),
            lookback_days=30,
            shard_volumes=5_000,
            failure_queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/failures",
        ),
        TrainingConfig(
            cluster_name="train",
            report_bucket="reports",
            gpu_hour_usd=2.75,
            low_power_percent=22.5,
            data_sources=("train-data",),
        ),
        ReportConfig(
            cluster_name="train",
            report_bucket="reports",
            topic_arn="arn:aws:sns:us-east-1:123456789012:reports",
            gpu_hour_usd=14.24,
            exporter_interval_seconds=60,
            alarm_kind_names=("gpu-insights-train-gpu-lost", "gpu-insights-train-gpu-xid"),
        ),
        NotifierConfig(
            cluster_name="train",
            region="eu-west-1",
            critical_topic_arn="arn:aws:sns:eu-west-1:123456789012:c",
            warning_topic_arn="arn:aws:sns:eu-west-1:123456789012:w",
            sent_table="sent",
            gpu_dashboard="gpu-insights-train-gpu-node",
            exporter_log_group="/aws/containerinsights/train/gpu-insights",
            alarm_kinds={"gpu-lost": ("critical", "GPU lost"), "gpu-xid": ("warning", "XID")},
        ),
        SilenceCheckConfig(
            cluster_name="train", lookback_s=900, grace_s=0, architectures=("x86_64", "arm64")
        ),
    ],
)
def test_what_a_construct_renders_the_handler_reads_back_equal(config: FunctionConfig) -> None:
    assert type(config).from_environ(config.environment(runtime=True)) == config


def test_lambdas_own_variables_are_not_rendered_for_the_construct() -> None:
    """Lambda sets AWS_REGION itself and refuses a function configuration that sets it."""
    config = NotifierConfig.from_environ(
        {
            "CLUSTER_NAME": "train",
            "AWS_REGION": "eu-west-1",
            "CRITICAL_TOPIC_ARN": "c",
            "WARNING_TOPIC_ARN": "w",
            "SENT_TABLE": "sent",
            "GPU_DASHBOARD": "d",
            "EXPORTER_LOG_GROUP": "g",
            "ALARM_KINDS": "{}",
        }
    )
    assert "AWS_REGION" not in config.environment()
    assert config.environment(runtime=True)["AWS_REGION"] == "eu-west-1"


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"report_bucket": ""}, "REPORT_BUCKET='' is not valid: expected a non-empty string"),
        ({"low_power_percent": 100.0}, "LOW_POWER_PERCENT='100' is not valid"),
        ({"shard_jobs": 0}, "SHARD_JOBS='0' is not valid"),
    ],
)
def test_what_the_handler_would_refuse_is_refused_where_it_is_rendered(
    values: dict[str, object], message: str
) -> None:
    """The construct renders the environment at synth: a value the handler would refuse at
    its start is refused there, by name, before it is deployed."""
    config = TrainingConfig(cluster_name="c", report_bucket="r").replaced(**values)
    with pytest.raises(ConfigError, match=message):
        config.environment()


def test_a_name_with_a_comma_cannot_be_rendered_into_a_list() -> None:
    config = TrainingConfig(cluster_name="c", report_bucket="r", data_sources=("a,b",))
    with pytest.raises(ConfigError, match="'a,b' cannot travel"):
        config.environment()


def test_the_configuration_is_read_once_and_again_only_when_the_environment_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in TRAINING.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LOW_POWER_PERCENT", "25")
    first = TrainingConfig.current()
    assert TrainingConfig.current() is first
    monkeypatch.setenv("LOW_POWER_PERCENT", "20")
    assert TrainingConfig.current().low_power_percent == 20.0


def test_nothing_in_lambda_code_reads_the_environment_but_the_declarations() -> None:
    """Each handler reads its environment through its declaration only, so what it reads is
    what its construct and the demo set (tests/unit/cdk/test_function_configs.py)."""
    readers = sorted(
        str(path.relative_to(LAMBDAS.parent))
        for path in LAMBDAS.rglob("*.py")
        if any(
            (isinstance(node, ast.Attribute) and node.attr in {"environ", "getenv"})
            or (isinstance(node, ast.Name) and node.id in {"environ", "getenv"})
            or (isinstance(node, ast.alias) and node.name in {"environ", "getenv"})
            for node in ast.walk(ast.parse(path.read_text()))
        )
    )
    assert readers == ["lambdas/shared/config.py"]


def test_lambda_code_imports_no_synth_time_or_operator_code() -> None:
    """Lambda code ships alone (cdk/constructs/lambda_code.py): it never imports the CDK app,
    the alarm catalog, the node configuration, the command line or the tests."""
    synth_time = {"cdk", "alarms", "deploy_config", "cli", "benchmarks", "tests"}
    offenders = []
    for path in LAMBDAS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            offenders += [
                f"{path.relative_to(LAMBDAS.parent)}: {name}"
                for name in names
                if name.split(".")[0] in synth_time
            ]
    assert offenders == []
