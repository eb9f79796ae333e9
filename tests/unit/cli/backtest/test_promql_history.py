"""The history file's format (docs/history.md): series as CloudWatch's PromQL API returns them
(Prometheus's HTTP API ``matrix``: labels and ``[unix_time, "value"]`` pairs), read series by
series, a bad one skipped and named and the rest kept; and the exporter's OTel-mode XID log
line (its ``CloudWatchMetrics`` empty) read as a log line."""

import json

import pytest

from cli.backtest.history import read_history_file
from cli.backtest.promql_history import HistorySeries, to_response

POD = "@resource.k8s.pod.name"


def _series(name: str, gpu: str, values: object) -> dict[str, object]:
    labels = {"__name__": name, "@resource.k8s.cluster.name": "train", "gpu": gpu, POD: "p-0"}
    return {"metric": labels, "values": values}


def _response(*result: object) -> str:
    return json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}})


def test_one_bad_series_is_skipped_and_named_and_the_others_are_kept() -> None:
    text = _response(
        _series("gpu_power_utilization", "0", [[1764504000, "12.5"], [1764504060, "13"]]),
        _series("gpu_power_utilization", "1", [[1764504000, "twelve"]]),
        _series("gpu_power_utilization", "2", [[1764504000, "88.25"]]),
    )
    history = read_history_file(text, source="h.json")
    assert [(s.labels["gpu"], s.points) for s in history.promql.series] == [
        ("0", ((1764504000.0, 12.5), (1764504060.0, 13.0))),
        ("2", ((1764504000.0, 88.25),)),
    ]
    (skipped,) = history.promql.skipped
    assert skipped.startswith("h.json series 2 ")
    assert '"gpu": "1"' in skipped
    assert "values[0]: value 'twelve' is not a number" in skipped
    assert history.promql.series[0].metric == "gpu_power_utilization"
    assert POD in history.promql.series[0].labels  # CloudWatch's label names, kept


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"metric": {"gpu": "0"}, "values": [[1764504000, "1"]]}, "no __name__ label"),
        (_series("gpu.power", "0", [[1764504000, "1"]]), "not one Prometheus 2 stores"),
        (_series("gpu_healthy", "0", []), "non-empty list"),
        (_series("gpu_healthy", "0", [[1764504000]]), "is not a [unix_time"),
        (_series("gpu_healthy", "0", [["soon", "1"]]), "time 'soon' is not unix seconds"),
        (_series("gpu_healthy", "0", [[1e15, "1"]]), "values[0]"),
        ({"metric": {"__name__": "x"}, "histograms": [[1, {}]]}, "native histogram"),
    ],
)
def test_each_bad_series_says_what_is_wrong(entry: object, says: str) -> None:
    good = _series("gpu_healthy", "7", [[1764504000, "1"]])
    history = read_history_file(_response(entry, good))
    assert [s.labels["gpu"] for s in history.promql.series] == ["7"]
    (skipped,) = history.promql.skipped
    assert says in skipped


def test_json_lines_of_responses_and_series_merge_one_series_over_two_exports() -> None:
    first = _response(_series("gpu_healthy", "0", [[1764504000, "1"]]))
    second = json.dumps(_series("gpu_healthy", "0", [[1764504060, "0"]]))
    error = json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error"})
    vector = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}})
    # A proxy's error answer may carry no errorType: still an error answer, skipped by name.
    bare = json.dumps({"status": "error", "error": "x"})
    history = read_history_file("\n".join([first, second, error, vector, bare]), source="h")
    (series,) = history.promql.series
    assert series.points == ((1764504000.0, 1.0), (1764504060.0, 0.0))
    assert history.promql.skipped == [
        "h line 3: a response with status 'error' (parse error): none of its series read",
        "h line 4: resultType 'vector', not a matrix of series (export with "
        "/api/v1/query_range): none of its series read",
        "h line 5: a response with status 'error' (x): none of its series read",
    ]


def test_a_pretty_printed_response_and_the_writer_round_trip() -> None:
    series = [HistorySeries("gpu_sm_active", {"gpu": "3"}, ((1764504000.0, 0.5),))]
    text = json.dumps(to_response(series), indent=2)
    assert to_response(series)["data"]["result"][0]["values"] == [[1764504000.0, "0.5"]]
    assert read_history_file(text).promql.series == series


def test_the_exporters_otel_xid_log_line_is_a_log_line_not_a_refusal() -> None:
    """The exporter's XID line in OTel mode (exporter/xid_event_log.py ``event_log_line``):
    valid EMF with no metric directive. Read before as a bad line ("missing
    _aws.CloudWatchMetrics"), which refused the whole file."""
    line = json.dumps(
        {
            "_aws": {"Timestamp": 1764508560000, "CloudWatchMetrics": []},
            "ClusterName": "train",
            "NodeName": "ip-10-0-1-17.ec2.internal",
            "GpuIndex": "3",
            "XidCode": "48",
            "gpu_xid_errors": 1,
        }
    )
    history = read_history_file(line + "\n")
    assert history.samples == []
    assert [d["XidCode"] for d in history.log_lines] == ["48"]
    # A bad one is skipped and named, the file's other lines read.
    bad = read_history_file(line.replace("1764508560000", '"x"') + "\n" + line, source="h")
    assert [d["XidCode"] for d in bad.log_lines] == ["48"]
    assert len(bad.skipped) == 1
    assert bad.skipped[0].startswith("h line 1: _aws.Timestamp 'x'")
