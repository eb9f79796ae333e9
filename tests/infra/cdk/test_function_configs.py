"""Every function the app deploys is given exactly the environment its handler declares, and
the settings' values in it: -c low_power_percent=25 reaches the training analyzer, whose
GPU-hour attribution classes hours by it (tests/functional/lambdas/test_training_config.py),
and -c exporter_interval_seconds=300 the silence check, which reads three cycles back."""

from typing import Any

from aws_cdk import Stack
from aws_cdk.assertions import Template

from lambdas.notifier.config import NotifierConfig
from lambdas.shared.config import FunctionConfig
from lambdas.silence_check.config import SilenceCheckConfig
from lambdas.storage_analyzer.config import StorageConfig
from lambdas.training_analyzer.config import TrainingConfig
from lambdas.weekly_report.config import ReportConfig
from tests.infra.conftest import Synth

CONTEXT = {
    "cluster_name": "train-prod",
    "account": "123456789012",
    "region": "eu-west-1",
    "low_power_percent": "25",
    "lookback_days": "30",
    "gpu_hour_price_usd": "2.75",
    "training_data_sources": "train-data",
    "exporter_interval_seconds": "300",
    "webhook_url_parameter": "/gpu-insights/train-prod/webhook",
    # OTel mode with the GPUs' power known: the notifier is told its PromQL alarm kinds.
    "container_insights_mode": "otel",
    "gpu_instance_type": "p5.48xlarge",
    # The EMF sink (OTLP is OTel mode's default): the silence check deploys too, so every
    # declared function's environment is read.
    "exporter_sink": "emf",
}
#: Each handler of the app and the declaration of its environment.
DECLARED: dict[str, type[FunctionConfig]] = {
    "lambdas.storage_analyzer.handler.handler": StorageConfig,
    "lambdas.training_analyzer.handler.handler": TrainingConfig,
    "lambdas.weekly_report.handler.handler": ReportConfig,
    "lambdas.notifier.handler.handler": NotifierConfig,
    "lambdas.silence_check.handler.handler": SilenceCheckConfig,
}


def _environments(stacks: list[Stack]) -> dict[str, dict[str, Any]]:
    """The app's own functions (CDK's providers aside) by handler: their variables."""
    found: dict[str, dict[str, Any]] = {}
    for stack in stacks:
        for function in Template.from_stack(stack).find_resources("AWS::Lambda::Function").values():
            handler = function["Properties"].get("Handler", "")
            if handler.startswith("lambdas."):
                assert handler not in found, f"{handler} deployed twice"
                found[handler] = function["Properties"]["Environment"]["Variables"]
    return found


def test_each_function_gets_exactly_the_variables_its_handler_reads(synth: Synth) -> None:
    environments = _environments(synth(CONTEXT))
    assert set(environments) == set(DECLARED), "a function without a declared environment"
    for handler, variables in environments.items():
        declared = {v.name for v in DECLARED[handler].variables().values() if not v.runtime}
        assert set(variables) == declared, handler


def test_the_settings_values_reach_each_function(synth: Synth) -> None:
    environments = _environments(synth(CONTEXT))
    training = environments["lambdas.training_analyzer.handler.handler"]
    assert training["LOW_POWER_PERCENT"] == "25"
    assert (training["LOOKBACK_DAYS"], training["GPU_HOUR_USD"]) == ("30", "2.75")
    assert training["DATA_SOURCES"] == "train-data"
    storage = environments["lambdas.storage_analyzer.handler.handler"]
    assert storage["LOOKBACK_DAYS"] == "30"
    report = environments["lambdas.weekly_report.handler.handler"]
    assert (report["GPU_HOUR_USD"], report["EXPORTER_INTERVAL_SECONDS"]) == ("2.75", "300")
    assert "gpu-insights-train-prod-gpu-low-power" in report["ALARM_KIND_NAMES"].split(",")
    notifier = environments["lambdas.notifier.handler.handler"]
    assert "gpu-low-power" in notifier["ALARM_KINDS"]
    # The EMF sink's one GPU PromQL alarm, the pending GPU pods', the GPU nodes' and the
    # serving alarms (OTel mode's); their fleet counts the notifier derives (with_cap_kinds).
    kinds = notifier["PROMQL_ALARM_KINDS"].split(",")
    assert [k for k in kinds if not k.startswith("serving-")] == [
        "gpu-low-power",
        "gpu-node-cordoned",
        "gpu-node-hardware-not-ready",
        "gpu-node-not-ready",
        "gpu-pod-crash-looping",
        "gpu-pods-pending",
    ]
    assert len([k for k in kinds if k.startswith("serving-")]) == 4
    assert notifier["WEBHOOK_URL_PARAMETER"] == "/gpu-insights/train-prod/webhook"
    silence = environments["lambdas.silence_check.handler.handler"]
    # Three 300-second cycles; the exporter's DaemonSet runs on amd64 nodes only.
    assert (silence["LOOKBACK_SECONDS"], silence["ARCHITECTURES"]) == ("900", "x86_64")
