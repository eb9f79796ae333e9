"""Bad input and AWS failures at the command line: one line on stderr naming the problem, exit
2 for bad input and 1 for AWS (or an analysis that read nothing), never a traceback and never
a run without end."""

import json
import time
from pathlib import Path

import pytest

from cli.main import main
from gpu_insights_agent.exporter.cli import main as exporter_main

SAMPLE = {
    "namespace": "GpuInsights",
    "metric": "gpu_power_utilization",
    "dimensions": {"ClusterName": "train"},
    "value": 9.5,
}


#: A history file holds GpuInsights series, the EMF sink's: the replays of one pin it (in OTel
#: mode the OTLP sink is the default, whose alarms are all PromQL and refuse a file).
EMF = ("-c", "exporter_sink=emf")


def _one_line(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    for word in words:
        assert word in err
    return err


@pytest.mark.usefixtures("no_aws")
@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["analyze", "storage", "--cluster-name", "c"], ["no AWS credentials", "AWS_PROFILE"]),
        (["analyze", "training", "--cluster-name", "c", "--profile", "nosuch"], ["nosuch"]),
        (["backtest", "--cloudwatch", "-c", "cluster_name=c"], ["no AWS credentials"]),
        (["preflight", "-c", "cluster_name=c"], ["no AWS credentials", "AWS_ACCESS_KEY_ID"]),
        (["status", "-c", "cluster_name=c", "--region", "us-east-1"], ["no AWS credentials"]),
    ],
)
def test_an_aws_failure_is_one_line_and_exit_1(
    argv: list[str], words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 1
    _one_line(capsys, *words)


def test_an_unreachable_endpoint_reads_nothing_and_exits_1(
    no_aws: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    no_aws.setenv("AWS_ACCESS_KEY_ID", "t")
    no_aws.setenv("AWS_SECRET_ACCESS_KEY", "t")
    no_aws.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # discard port: refused
    no_aws.setenv("AWS_MAX_ATTEMPTS", "1")
    assert main(["analyze", "training", "--cluster-name", "c", "--region", "us-east-1"]) == 1
    _one_line(capsys, "read nothing")


def _history(tmp_path: Path, **sample: object) -> str:
    path = tmp_path / "history.jsonl"
    path.write_text(json.dumps({**SAMPLE, "timestamp": "2026-11-20T00:00:00Z", **sample}) + "\n")
    return str(path)


@pytest.mark.usefixtures("no_aws")
@pytest.mark.parametrize(
    ("extra", "sample", "words"),
    [
        ([], {"timestamp": float("inf")}, ["timestamp inf"]),
        ([], {"timestamp": 1e18}, ["timestamp 1e+18"]),
        ([], {"timestamp": "9999-12-31T23:00:00-05:00"}, ["2000 to 2199"]),
        (["--start", "1970-01-01T00:00:00Z"], {}, ["--start"]),
        (["--start", "2025-01-01T00:00:00Z"], {}, ["455 days"]),
        (
            ["--end", "2026-11-19T00:00:00Z"],
            {},
            ["the end must be after the start", "2026-11-19 00:00 UTC, --end"],
        ),
    ],
)
def test_backtest_times_are_bounded_before_work_starts(
    tmp_path: Path,
    extra: list[str],
    sample: dict[str, object],
    words: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    history = _history(tmp_path, **sample)
    assert main(["backtest", "--history", history, "-c", "cluster_name=train", *EMF, *extra]) == 2
    _one_line(capsys, *words)


@pytest.mark.usefixtures("no_aws")
@pytest.mark.parametrize(
    ("argv", "words"),
    [
        ([*["cost-estimate", "--nodes", "x", "--gpus-per-node", "8"]], ["--nodes", "'x'"]),
        (["manifest", "--cluster-name", "c"], ["--image", "manifest --help"]),
        (["nosuch"], ["'nosuch'"]),
    ],
)
def test_a_usage_error_is_one_line_that_says_where_help_is(
    argv: list[str], words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    _one_line(capsys, *words)


_EMF_LINE = (
    '{"_aws": {"Timestamp": %s, "CloudWatchMetrics": [{"Namespace": "GpuInsights", '
    '"Dimensions": [["ClusterName"]], "Metrics": [{"Name": "gpu_healthy"}]}]}, '
    '"ClusterName": "train", "gpu_healthy": %s}'
)
_HUGE = "1" + "0" * 400  # 10**400: no float holds it (Python raised OverflowError)
_NOW_MS = 1_795_132_800_000  # the good line's 2026-11-20T00:00:00Z


@pytest.mark.usefixtures("no_aws")
@pytest.mark.parametrize(
    ("line", "words"),
    [
        # A sample line's value or timestamp, and an EMF line's value or timestamp, as a huge
        # integer: each raised OverflowError with a traceback and exit 1.
        (
            json.dumps({**SAMPLE, "timestamp": "2026-11-20T00:00:00Z"}).replace("9.5", _HUGE),
            ["line 2", "401 digits"],
        ),
        (json.dumps({**SAMPLE, "timestamp": 0}).replace(": 0", f": {_HUGE}"), ["401 digits"]),
        (_EMF_LINE % (_NOW_MS, _HUGE), ["line 2", "401 digits"]),
        (_EMF_LINE % (_HUGE, 1), ["401 digits"]),
        # Past Python's own limit of 4,300 digits: named by its size, not by Python's advice.
        (_EMF_LINE % (_NOW_MS, "9" * 5000), ["5000 digits", "too large for a metric value"]),
        # Within a float's range but no time, or no finite value: an EMF line is held to a
        # sample line's rules (a timestamp of 1e297 s made a replay without end).
        (_EMF_LINE % ("1" + "0" * 300, 1), ["_aws.Timestamp", "2000 to 2199"]),
        (_EMF_LINE % (_NOW_MS, "1e400"), ["gpu_healthy inf"]),
        # Nested 100,000 deep: RecursionError with a traceback before.
        ("[" * 100_000 + "]" * 100_000, ["line 2", "nested too deeply"]),
        ('{"_aws": ' + "[" * 100_000 + "]" * 100_000 + "}", ["nested too deeply"]),
    ],
)
def test_a_history_line_with_a_huge_number_or_deep_nesting_is_named(
    tmp_path: Path, line: str, words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Skipped and named in one line, with no traceback; the good line is replayed."""
    history = tmp_path / "history.jsonl"
    good = json.dumps({**SAMPLE, "timestamp": "2026-11-20T00:00:00Z"})
    history.write_text(f"{good}\n{line}\n")
    assert main(["backtest", "--history", str(history), "-c", "cluster_name=train", *EMF]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    (skipped,) = [s for s in out.splitlines() if s.startswith("skipped: ")]
    assert skipped.startswith(f"skipped: {history} line 2: ")
    for word in words:
        assert word in skipped
    # Only as a whole file's single line is it refused: nothing else is there to replay.
    history.write_text(f"{line}\n")
    assert main(["backtest", "--history", str(history), "-c", "cluster_name=train", *EMF]) == 2
    _one_line(capsys, "history.jsonl holds no samples", "history.jsonl line 1", words[-1])


@pytest.mark.usefixtures("no_aws")
def test_a_binary_history_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = tmp_path / "bin.json"
    history.write_bytes(bytes(range(128, 256)))
    assert main(["backtest", "--history", str(history), "-c", "cluster_name=c", *EMF]) == 2
    _one_line(capsys, "--history", "bin.json", "not UTF-8")


@pytest.mark.usefixtures("no_aws")
def test_backtest_hours_are_bounded(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backtest", "--cloudwatch", "-c", "cluster_name=c", "--hours", "1e6"]) == 2
    _one_line(capsys, "--hours")


COST = ["cost-estimate", "--nodes", "1", "--gpus-per-node", "8"]
MANIFEST = ["manifest", "--image", "repo/exporter:1", "--cluster-name", "train"]
TRAINING = ["analyze", "training", "--cluster-name", "x"]


@pytest.mark.usefixtures("no_aws")
@pytest.mark.parametrize(
    ("argv", "words"),
    [
        ([*COST, "--interval", "nan"], ["nan"]),
        # The exporter's deployed interval is 1 to 3600 whole seconds; a node has at most 16
        # GPUs; the fleet at most 500,000 (the old estimate priced all of these).
        ([*COST, "--interval", "0"], ["exporter_interval_seconds=0"]),
        ([*COST, "--interval", "7200"], ["exporter_interval_seconds=7200"]),
        ([*COST, "--interval", "0.5"], ["exporter_interval_seconds=0.5"]),
        (["cost-estimate", "--nodes", "1", "--gpus-per-node", "1000"], ["--gpus-per-node 1000"]),
        (
            ["cost-estimate", "--nodes", "100000", "--gpus-per-node", "8"],
            ["800,000 GPUs: at most 500,000"],
        ),
        ([*COST, "--container-log-gb-per-day", "nan"], ["--container-log-gb-per-day nan"]),
        ([*COST, "--container-log-gb-per-day", "-1"], ["--container-log-gb-per-day -1"]),
        ([*COST, "--volumes", "-1"], ["--volumes -1"]),
        ([*COST, "--fleet-gpus", "4"], ["--fleet-gpus 4 is fewer than the 8 GPUs"]),
        ([*COST, "--serving-replicas", "9"], ["--serving-replicas 9 must be 0 to the 8 GPUs"]),
        ([*COST, "--serving-replicas", "-1"], ["--serving-replicas -1"]),
        ([*COST, "--serving-models", "0"], ["--serving-models 0 must be 1 to 1,000"]),
        ([*COST, "--serving-models", "1000000000"], ["--serving-models 1000000000 must be 1 to"]),
        (["manifest", "--image", "", "--cluster-name", "train"], ["image"]),
        (["manifest", "--image", "x", "--cluster-name", " "], ["cluster_name"]),
        (["manifest", "--image", "repo/exporter:1\nkind: Pod", "--cluster-name", "t"], ["--image"]),
        (["manifest", "--image", "Repo/Exporter", "--cluster-name", "t"], ["--image"]),
        (["manifest", "--image", "x", "--cluster-name", "a b"], ["cluster_name='a b'"]),
        (["analyze", "training", "--cluster-name", ""], ["setting cluster_name=''"]),
        (["analyze", "storage", "--cluster-name=-x"], ["setting cluster_name='-x'"]),
        (["backtest", "--history", "h.jsonl", "-c", "fleet_gpu=10"], ["did you mean 'fleet_gpus'"]),
        (
            ["backtest", "--history", "h.jsonl", "-c", "nosuch=1"],
            ["unknown setting 'nosuch'", "docs/settings.md"],
        ),
        # manifest reads the settings as synth does (issue: it refused -c, so its DaemonSet
        # could differ from the deployed alarms' shards and interval).
        ([*MANIFEST, "-c", "exporter_interval_seconds=999999"], ["999999"]),
        ([*MANIFEST, "-c", "fleet_gpus=600000"], ["fleet_gpus=600000"]),
        ([*MANIFEST, "-c", "gpu_node_labels=bad key=v"], ["gpu_node_labels", "bad key=v"]),
        ([*MANIFEST, "-c", "gpu_node_labels=k=bad value"], ["gpu_node_labels", "bad value"]),
        ([*MANIFEST, "-c", "gpu_node_labels=k=" + "v" * 64], ["label value"]),
        (["analyze", "storage", "--cluster-name", "c", "--bucket", ""], ["--bucket ''"]),
        (["analyze", "storage", "--cluster-name", "c", "--bucket", "Bad_Bucket"], ["Bad_Bucket"]),
        ([*MANIFEST, "-c", "gpu_taint_keys=bad key!"], ["gpu_taint_keys", "bad key!"]),
        ([*MANIFEST, "-c", "gpu_taint_keys=-nvidia.com/gpu"], ["gpu_taint_keys"]),
        (["demo", "--out", "a-file"], ["--out a-file is a file"]),
        ([*TRAINING, "-c", "low_power_percen=25"], ["did you mean 'low_power_percent'"]),
        ([*TRAINING, "-c", "low_power_percent=x"], ["setting low_power_percent='x'"]),
        ([*TRAINING, "-c", "training_data_sources=data"], ["--report-bucket"]),
        ([*TRAINING, "--report-bucket", "Bad Bucket"], ["--report-bucket 'Bad Bucket'"]),
        (["analyze", "storage", "--cluster-name", "x", "-c", "lookback_days=0"], ["lookback"]),
    ],
)
def test_bad_numbers_and_names_are_refused_with_exit_2(
    argv: list[str], words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    Path("a-file").write_text("")
    assert main(argv) == 2
    _one_line(capsys, *words)


@pytest.mark.usefixtures("no_aws")
@pytest.mark.parametrize("option", ["--out", "--cdk-out"])
def test_a_demo_folder_under_a_file_is_refused_before_the_synth_starts(
    option: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """mkdir of a/file/sub fails with ENOTDIR: the demo once found it after the whole synth
    (cdk.out: a jsii RuntimeError; out: a NotADirectoryError traceback)."""

    def synth_started() -> None:
        raise AssertionError("the demo started before refusing the path")

    monkeypatch.setattr("cli.demo.arguments.use_checkout", synth_started)
    Path("a-file").write_text("")
    assert main(["demo", option, "a-file/sub"]) == 2
    _one_line(capsys, f"{option} a-file/sub: a-file is a file")


@pytest.mark.usefixtures("no_aws")
@pytest.mark.parametrize("content", ["[1, 2]", '{"context": [1]}', "[" * 100_000 + "]" * 100_000])
def test_a_cdk_json_that_is_not_settings_is_refused(
    content: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cdk.json").write_text(content)
    history = _history(tmp_path)
    assert main(["backtest", "--history", history]) == 2
    _one_line(capsys, "cdk.json")


def _trace(tmp_path: Path, sample: dict[str, object]) -> str:
    gpu = {"kind": "gpu", "index": 0, "power_limit_w": 700}
    path = tmp_path / "trace.jsonl"
    line = {"kind": "sample", "index": 0, "t": 0, "power_w": 300, **sample}
    path.write_text(json.dumps(gpu) + "\n" + json.dumps(line) + "\n")
    return str(path)


EXPORTER = ["--cluster-name", "c", "--node-name", "n", "--sink", "stdout"]


@pytest.mark.usefixtures("no_aws")
@pytest.mark.parametrize("interval", ["nan", "inf", "0", "-1", "1e-300"])
def test_the_exporter_refuses_an_interval_that_is_not_a_positive_number(
    interval: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert exporter_main([*EXPORTER, "--interval", interval]) == 2
    _one_line(capsys, "--interval")


@pytest.mark.usefixtures("no_aws")
@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--cluster-name", "", "--node-name", "n"], ["--cluster-name", "cluster name ''"]),
        (["--cluster-name", "c", "--node-name", " "], ["--node-name"]),
        (["--cluster-name", "c", "--node-name", "n\nx"], ["--node-name", "CloudWatch refuses"]),
        (["--cluster-name", "c", "--node-name", "n", "--buffer", "nan"], ["--buffer", "--help"]),
        (["--cluster-name", "c"], ["--node-name", "--help"]),
    ],
)
def test_the_exporter_refuses_names_cloudwatch_would_refuse_in_one_line(
    argv: list[str], words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        status = exporter_main([*argv, "--sink", "stdout"])
    except SystemExit as exited:  # argparse's usage errors
        status = int(str(exited.code))
    assert status == 2
    _one_line(capsys, *words)


@pytest.mark.usefixtures("no_aws")
def test_a_trace_without_a_gpu_is_refused_not_replayed_forever(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"kind": "gpu", "index": 0, "power_limit_w": "abc"}\n')
    assert exporter_main([*EXPORTER, "--trace", str(trace)]) == 2
    _one_line(capsys, "has no usable gpu record (1 line(s) skipped, the first line 1:")


@pytest.mark.usefixtures("no_aws")
def test_a_file_that_is_not_a_trace_is_one_line_not_one_a_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """A README given as --trace: its 1,000 lines are one refusal, not 1,000 warnings."""
    trace = tmp_path / "README.md"
    trace.write_text("".join(f"Line {n} of prose.\n" for n in range(1000)))
    assert exporter_main([*EXPORTER, "--trace", str(trace)]) == 2
    _one_line(capsys, "1000 line(s) skipped, the first line 1: Expecting value")
    assert not caplog.records


@pytest.mark.usefixtures("no_aws")
def test_the_exporter_without_a_region_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert exporter_main(["--cluster-name", "c", "--node-name", "n", "--sink", "cloudwatch"]) == 1
    _one_line(capsys, "region")


@pytest.mark.usefixtures("no_aws")
@pytest.mark.parametrize("content", [None, b"\xff\xfe\x00binary"])
def test_an_unreadable_trace_is_refused(
    content: bytes | None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "trace.jsonl"
    if content is not None:
        path.write_bytes(content)
    assert exporter_main([*EXPORTER, "--trace", str(path)]) == 2
    _one_line(capsys, "trace", str(path))


@pytest.mark.parametrize(
    "sample", [{"power_w": "abc"}, {"power_w": float("nan")}, {"throttle": "power"}]
)
def test_a_bad_trace_value_is_a_skipped_line_not_a_crash_mid_run(
    sample: dict[str, object], tmp_path: Path
) -> None:
    from gpu_insights_agent.exporter.fake_nvml import FakeNvml

    nvml = FakeNvml.from_file(_trace(tmp_path, sample), clock=lambda: 10.0)
    assert nvml.malformed_lines == 1  # before: loaded, and a crash once the exporter read it


def test_backtest_cloudwatch_takes_the_region_setting(
    no_aws: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`-c region=...` is the deployment's region: the replay reads CloudWatch there (here it
    gets as far as the missing credentials), not "You must specify a region"."""
    argv = ["backtest", "--cloudwatch", "-c", "cluster_name=c", "-c", "region=us-west-2"]
    assert main(argv) == 1
    err = _one_line(capsys, "credentials")
    assert "specify a region" not in err


def _sample_of(cluster: str) -> str:
    return json.dumps(
        {
            "namespace": "GpuInsights",
            "metric": "gpu_allocated_power_utilization",
            "dimensions": {"ClusterName": cluster, "NodeName": "n1", "GpuIndex": "0", "Shard": "0"},
            "timestamp": 1_764_331_200,
            "value": 9.5,
        }
    )


@pytest.mark.usefixtures("no_aws")
def test_backtest_of_another_clusters_history_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("h.jsonl").write_text(_sample_of("ml-dev") + "\n")
    assert main(["backtest", "--history", "h.jsonl", "-c", "cluster_name=ml-prod", *EMF]) == 2
    _one_line(capsys, "no sample is of cluster 'ml-prod'", "'ml-dev'")


@pytest.mark.usefixtures("no_aws")
def test_backtest_of_dev_zero_is_one_line_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    assert main(["backtest", "--history", "/dev/zero", "-c", "cluster_name=c", *EMF]) == 2
    _one_line(capsys, "--history /dev/zero holds a NUL byte (at byte 0)")
    assert time.monotonic() - started < 5


@pytest.mark.usefixtures("no_aws")
def test_backtest_of_a_history_over_the_cap_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli.backtest import command as backtest

    monkeypatch.setattr(backtest, "MAX_HISTORY_BYTES", 1024**3 // 4096)
    monkeypatch.setattr(backtest, "_CHUNK", 4096)
    Path("h.jsonl").write_text((_sample_of("c") + "\n") * 20_000)  # 4 MB
    assert main(["backtest", "--history", "h.jsonl", "-c", "cluster_name=c", *EMF]) == 2
    _one_line(capsys, "--history h.jsonl is over")


@pytest.mark.usefixtures("no_aws")
@pytest.mark.parametrize(
    ("out", "words"),
    [
        ("", ["--out is empty"]),
        (" ", ["--out is empty"]),
        (".", ["--out . holds files the demo did not write"]),
        ("/proc/x", ["--out /proc/x: cannot make the folder"]),
        ("mine", ["--out mine holds files the demo did not write"]),
    ],
)
def test_the_demo_writes_only_into_a_folder_it_made_or_was_given_empty(
    out: str, words: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`demo --out ""` once wrote sixteen files into the current folder (the repository root,
    five into the dashboards package); /proc/x failed in a traceback after the synth."""
    monkeypatch.setattr("cli.demo.arguments.use_checkout", lambda: None)
    Path("mine").mkdir()
    Path("mine/notes.txt").write_text("the user's")
    Path("README.md").write_text("the user's")
    before = sorted(p.name for p in Path().iterdir())
    started = time.monotonic()
    assert main(["demo", "--out", out, "--cdk-out", "cdk.out"]) == 2
    _one_line(capsys, *words)
    assert time.monotonic() - started < 5
    assert sorted(p.name for p in Path().iterdir() if p.name != "cdk.out") == before
    assert not any(Path("mine").glob(".gpu-insights*"))


def test_a_previous_demo_output_is_written_again(tmp_path: Path) -> None:
    from cli.demo.folders import MARK, check_folder, make_folder

    fresh = tmp_path / "out"
    assert check_folder("--out", str(fresh)) == fresh
    make_folder("--out", fresh)
    (fresh / "report.html").write_text("last run's")
    assert check_folder("--out", str(fresh)) == fresh  # recognized by its mark
    assert (fresh / MARK).is_file()
    # An output of the demo before the mark: recognized by the files every run writes.
    older = tmp_path / "older"
    older.mkdir()
    for name in ("stacks.json", "agent-config.json", "report.html"):
        (older / name).write_text("{}")
    assert check_folder("--out", str(older)) == older
