import math

import pytest

from agent.emf import EmfError, emf_document, encode, metric_data, parse_emf_line


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
