"""The serving alarm settings: on by default in OTel mode, none in Classic mode, per-model p99
targets as a JSON object, each bad one refused in one line naming its key and model."""

from typing import Any

import pytest

from cdk.alarms.catalog import promql_alarms
from cdk.alarms.promql import PromQLQuery
from cdk.alarms.serving_promql import SERVING_ALARM_KINDS, ServingAlarmSettings
from cdk.settings import Settings, SettingsError, settings_from_context


def _read(context: dict[str, Any]) -> Settings:
    return settings_from_context({"cluster_name": "train", "region": "eu-west-1", **context})


def _serving(settings: Settings) -> dict[str, str]:
    """The serving alarms deployed: key -> query."""
    return {
        a.key: a.metric.query
        for a in promql_alarms(settings.alarm_settings())
        if isinstance(a.metric, PromQLQuery) and (a.counts or a.kind) in SERVING_ALARM_KINDS
    }


def test_otel_mode_deploys_the_serving_alarms_by_default_classic_none() -> None:
    otel = _read({"container_insights_mode": "otel"})
    assert otel.alarm_settings().serving == ServingAlarmSettings()
    # TTFT at the 2 s default, the queue, the KV cache, errors, each with its fleet count;
    # no e2e alarm: no model has an e2e target by default.
    assert sorted(_serving(otel)) == sorted(
        f"{kind}{suffix}"
        for kind in SERVING_ALARM_KINDS
        if kind not in ("serving-e2e-p99", "serving-drift-truncated")
        for suffix in ("", "-at-cap")
    )
    assert _read({"container_insights_mode": "classic"}).alarm_settings().serving is None
    off = _read({"container_insights_mode": "otel", "serving_alarms": "off"})
    assert off.alarm_settings().serving is None
    assert _serving(off) == {}


def test_per_model_targets_from_the_command_line_or_cdk_json_reach_the_queries() -> None:
    from_cli = _read(
        {
            "container_insights_mode": "otel",
            "serving_ttft_p99_targets": '{"llama-3-70b": 1.5, "mistral-7b": 0.5}',
            "serving_ttft_p99_seconds": "3",
            "serving_e2e_p99_targets": {"llama-3-70b": 40},
            "serving_waiting_requests": "20",
            "serving_waiting_minutes": "10",
            "serving_error_percent": "2.5",
        }
    )
    assert from_cli.serving_ttft_p99_targets == (("llama-3-70b", 1.5), ("mistral-7b", 0.5))
    queries = _serving(from_cli)
    ttft = queries["serving-ttft-p99"]
    assert 'model_name="llama-3-70b"}[5m]))) > 1.5' in ttft
    assert 'model_name="mistral-7b"}[5m]))) > 0.5' in ttft
    assert 'model_name!="llama-3-70b", model_name!="mistral-7b"}[5m]))) > 3' in ttft
    e2e = queries["serving-e2e-p99"]
    assert 'model_name="llama-3-70b"}[5m]))) > 40' in e2e
    assert "!=" not in e2e  # no default e2e target: no other model's clause
    # One clause per server with the gauge (vLLM, NIM, Triton, Ray Serve), each at N.
    assert queries["serving-requests-waiting"].count(") > 20)") == 4
    assert queries["serving-errors"].count(") > 0.025)") == 4
    assert from_cli.alarm_settings().serving == ServingAlarmSettings(
        ttft_p99_seconds=3.0,
        ttft_p99_targets=(("llama-3-70b", 1.5), ("mistral-7b", 0.5)),
        e2e_p99_targets=(("llama-3-70b", 40.0),),
        waiting_requests=20,
        waiting_minutes=10,
        error_percent=2.5,
    )


@pytest.mark.parametrize(
    ("context", "said"),
    [
        (
            {"serving_ttft_p99_targets": '{"llama": 0}'},
            "setting serving_ttft_p99_targets['llama']=0.0 must be above 0 and at most 3600 "
            "seconds",
        ),
        (
            {"serving_e2e_p99_targets": {"llama": "slow"}},
            "setting serving_e2e_p99_targets['llama']='slow' is not valid: expected a number",
        ),
        (
            {"serving_ttft_p99_targets": '["llama", 1.5]'},
            "setting serving_ttft_p99_targets=['llama', 1.5] is not valid: expected a JSON "
            'object of model name to seconds, e.g. {"llama-3-70b": 1.5}',
        ),
        (
            {"serving_ttft_p99_targets": "llama=1.5"},
            "setting serving_ttft_p99_targets='llama=1.5' is not valid: expected a JSON object",
        ),
        (
            {"serving_ttft_p99_targets": {"": 1.5}},
            "setting serving_ttft_p99_targets: model '' is empty or given twice",
        ),
        # -c's text: JSON keeps the last of a repeated name, so the text is read pair by pair.
        (
            {"serving_e2e_p99_targets": '{"llama": 1, "llama": 2}'},
            "setting serving_e2e_p99_targets: model 'llama' is empty or given twice",
        ),
        ({"serving_waiting_minutes": "0"}, "setting serving_waiting_minutes=0 must be 1 to 60"),
        (
            {"serving_error_percent": "100"},
            "setting serving_error_percent=100.0 must be above 0 and below 100",
        ),
        # Each model with its own target adds a clause per server with the histogram (vLLM,
        # NIM, Triton): 11 such models are past PromQLCriteria's 10,000 characters.
        (
            {"serving_ttft_p99_targets": {f"model-{i}": 1 for i in range(11)}},
            "setting serving_ttft_p99_targets: 11 models' targets make the serving-ttft-p99 "
            "alarm's query over 10000 characters, where an alarm and its fleet count take at "
            "most 9987: give fewer models their own target",
        ),
        # Classic mode deploys no serving alarm, and still refuses a bad target by name.
        (
            {"container_insights_mode": "classic", "serving_e2e_p99_seconds": "-1"},
            "setting serving_e2e_p99_seconds=-1.0 must be above 0 and at most 3600",
        ),
    ],
)
def test_a_bad_serving_setting_is_refused_in_one_line_by_name(
    context: dict[str, Any], said: str
) -> None:
    with pytest.raises(SettingsError) as err:
        _read(context)
    assert str(err.value).startswith(said)
    assert "\n" not in str(err.value)


def test_ten_models_targets_fit_the_alarm_and_its_fleet_count() -> None:
    """The limit above is the query's, not a count: ten models' targets fit."""
    ten = _read({"serving_ttft_p99_targets": {f"model-{i}": 1 for i in range(10)}})
    queries = _serving(ten)
    assert 9000 < len(queries["serving-ttft-p99"]) <= len(queries["serving-ttft-p99-at-cap"])
    assert len(queries["serving-ttft-p99-at-cap"]) <= 10_000


def test_the_drift_alarm_is_off_by_default_and_deployed_when_set() -> None:
    """``serving_drift_alarm`` (docs/drift.md): off, no drift alarm; on, one PromQL alarm and
    its fleet count over every model, OTel mode only."""
    assert "serving-drift-truncated" not in _serving(_read({"container_insights_mode": "otel"}))
    on = _read({"container_insights_mode": "otel", "serving_drift_alarm": "on"})
    assert on.serving_drift_alarm is True
    drift = {k: q for k, q in _serving(on).items() if k.startswith("serving-drift")}
    assert sorted(drift) == ["serving-drift-truncated", "serving-drift-truncated-at-cap"]
    assert 'finished_reason="length"' in drift["serving-drift-truncated"]
    assert "offset 60m" in drift["serving-drift-truncated"]
    classic = _read({"container_insights_mode": "classic", "serving_drift_alarm": "on"})
    assert classic.alarm_settings().serving is None
