import json
import math
from typing import Any

import pytest

from gpu_insights_agent.emf.document import (
    MAX_DIMENSIONS_PER_SET,
    MAX_METRICS_PER_DIRECTIVE,
    MAX_NAME_LENGTH,
    EmfError,
    emf_document,
    encode,
    metric_chunks,
    metric_data,
    parse_emf_line,
)
from tests.unit.agent.emf.emf_contract import (
    SPEC_MAX_METRICS_PER_DIRECTIVE,
    emf_problems,
    valid_emf,
)
from tests.unit.reference_data import emf_schema


def _doc() -> dict[str, object]:
    return emf_document(
        namespace="GpuInsights",
        timestamp_ms=1_700_000_000_000,
        dimension_sets=[["ClusterName", "GpuIndex"], ["ClusterName"]],
        dimensions={"ClusterName": "train", "GpuIndex": "3"},
        metrics={"gpu_power_draw_watts": 512.5, "gpu_sm_active": math.nan},
        units={"gpu_power_draw_watts": "None"},
        properties={"GpuUuid": "GPU-1"},
    )


def test_non_finite_values_are_dropped() -> None:
    document = _doc()
    assert "gpu_sm_active" not in document
    assert parse_emf_line(encode(document))["gpu_power_draw_watts"] == 512.5


def test_metric_data_is_one_datum_per_metric_and_dimension_set() -> None:
    datums = list(metric_data(_doc()))
    assert [d["Dimensions"] for d in datums] == [
        [{"Name": "ClusterName", "Value": "train"}, {"Name": "GpuIndex", "Value": "3"}],
        [{"Name": "ClusterName", "Value": "train"}],
    ]
    assert {d["Value"] for d in datums} == {512.5}
    assert datums[0]["Timestamp"] == 1_700_000_000


def test_dimension_set_naming_an_unset_dimension_is_refused() -> None:
    with pytest.raises(EmfError, match="NodeName"):
        emf_document(
            namespace="GpuInsights",
            timestamp_ms=0,
            dimension_sets=[["NodeName"]],
            dimensions={},
            metrics={"x": 1.0},
            units={},
        )


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("not json", "not JSON"),
        ("[]", "JSON object"),
        ('{"x": 1}', "_aws.Timestamp"),
        ('{"_aws": {"Timestamp": 1, "CloudWatchMetrics": []}}', "CloudWatchMetrics"),
        (
            '{"_aws": {"Timestamp": 1, "CloudWatchMetrics": [{"Namespace": "N", '
            '"Dimensions": [["C"]], "Metrics": [{"Name": "m"}]}]}, "m": 1}',
            "dimension 'C'",
        ),
        (
            '{"_aws": {"Timestamp": 1, "CloudWatchMetrics": [{"Namespace": "N", '
            '"Dimensions": [], "Metrics": [{"Name": "m"}]}]}, "m": "high"}',
            "metric 'm'",
        ),
    ],
)
def test_bad_emf_lines_name_the_problem(line: str, problem: str) -> None:
    with pytest.raises(EmfError, match=problem):
        parse_emf_line(line)


def _common(**overrides: object) -> dict[str, Any]:
    common: dict[str, Any] = {
        "namespace": "GpuInsights/Training",
        "timestamp_ms": 1_764_000_000_000,
        "dimension_sets": [["ClusterName", "JobName"]],
        "dimensions": {"ClusterName": "train", "JobName": "llm"},
        "units": {},
        "properties": {"Rank": 0},
        "log_group": "/aws/gpu-insights/train/training",
    }
    return {**common, **overrides}


def test_limits_are_the_specifications() -> None:
    """The EMF document's limits against the vendored schema (and, for 100 metrics, the
    spec's prose)."""
    directive = emf_schema()["properties"]["_aws"]["properties"]["CloudWatchMetrics"]["items"]
    dimension_set = directive["properties"]["Dimensions"]["items"]
    metric_name = directive["properties"]["Metrics"]["items"]["properties"]["Name"]
    assert dimension_set["maxItems"] == MAX_DIMENSIONS_PER_SET == 30
    assert metric_name["maxLength"] == MAX_NAME_LENGTH == 1024
    assert directive["properties"]["Namespace"]["maxLength"] == MAX_NAME_LENGTH
    assert dimension_set["items"]["maxLength"] <= MAX_NAME_LENGTH
    assert MAX_METRICS_PER_DIRECTIVE == SPEC_MAX_METRICS_PER_DIRECTIVE == 100


def test_over_100_metrics_split_into_valid_documents_and_none_is_dropped() -> None:
    metrics = {f"layer_{i:03d}_grad_norm": i / 4 for i in range(250)}
    metrics["layer_007_grad_norm"] = math.nan  # still dropped: CloudWatch refuses NaN
    documents = [emf_document(metrics=chunk, **_common()) for chunk in metric_chunks(metrics)]
    assert [len(d["_aws"]["CloudWatchMetrics"][0]["Metrics"]) for d in documents] == [100, 100, 49]
    published = {}
    for document in documents:
        parsed = valid_emf(encode(document))
        assert (parsed["ClusterName"], parsed["JobName"], parsed["Rank"]) == ("train", "llm", 0)
        assert parsed["_aws"]["Timestamp"] == 1_764_000_000_000
        published.update(
            {
                m["Name"]: parsed[m["Name"]]
                for m in parsed["_aws"]["CloudWatchMetrics"][0]["Metrics"]
            }
        )
    assert len(published) == 249
    assert published["layer_249_grad_norm"] == 62.25
    assert "layer_007_grad_norm" not in published
    assert metric_chunks({"loss": math.inf}) == []


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({"metrics": {"ClusterName": 1.0}}, r"\['ClusterName'\] already taken"),
        ({"metrics": {"Rank": 1.0}}, r"\['Rank'\] already taken"),
        ({"metrics": {"_aws": 1.0}}, r"\['_aws'\] already taken"),
        ({"metrics": {"x": 1.0}, "properties": {"_aws": {}}}, "metadata member"),
        ({"metrics": {"x": 1.0}, "properties": {"JobName": "other"}}, "both a dimension and"),
        ({"metrics": {"x" * 1025: 1.0}}, "1025 characters"),
        ({"metrics": {"x": 1.0}, "namespace": ""}, "namespace name of 0 characters"),
        (
            {
                "metrics": {"x": 1.0},
                "dimension_sets": [[f"d{i}" for i in range(31)]],
                "dimensions": {f"d{i}": "v" for i in range(31)},
            },
            "31 keys; EMF allows 30",
        ),
        ({"metrics": {f"m{i}": 1.0 for i in range(101)}}, "101 metrics"),
    ],
)
def test_documents_the_spec_forbids_are_refused(overrides: dict[str, object], problem: str) -> None:
    with pytest.raises(EmfError, match=problem):
        emf_document(**_common(**overrides))


def test_a_line_with_over_100_metrics_is_refused_on_reading() -> None:
    document = json.loads(encode(emf_document(metrics={"loss": 0.5}, **_common())))
    document["_aws"]["CloudWatchMetrics"][0]["Metrics"] = [{"Name": "loss"}] * 101
    with pytest.raises(EmfError, match="at most 100 metrics"):
        parse_emf_line(json.dumps(document))


def test_the_contract_check_has_teeth() -> None:
    """The checker used on every line the exporter and the emitter write finds each breach."""
    good = emf_document(metrics={"loss": 0.5}, **_common())
    assert emf_problems(encode(good)) == []
    too_many = json.loads(encode(good))
    too_many["_aws"]["CloudWatchMetrics"][0]["Metrics"] = [{"Name": "loss"}] * 101
    clobbered = json.loads(encode(good))
    clobbered["_aws"]["CloudWatchMetrics"][0]["Metrics"].append({"Name": "JobName"})
    no_time = json.loads(encode(good))
    del no_time["_aws"]["Timestamp"]
    bad_unit = json.loads(encode(good))
    bad_unit["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Unit"] = "Watts"
    assert emf_problems(json.dumps(too_many))[0] == "101 metrics in a directive"
    assert "'JobName' is a metric and a dimension" in emf_problems(json.dumps(clobbered))
    assert emf_problems(json.dumps(no_time)) == ["schema: 'Timestamp' is a required property"]
    assert emf_problems(json.dumps(bad_unit))[0].startswith("schema: 'Watts' does not match")
