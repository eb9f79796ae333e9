"""`gpu-insights cost-estimate`: the whole deployment's month, each line with its price, the
page it is from and the day it was read."""

import json

import pytest

from cli.cost.estimate import runs_per_month
from cli.cost.exporter import MINUTES_PER_MONTH
from cli.cost.prices import PRICES, READ
from cli.main import main

#: Days in CloudWatch's month of 730 hours.
DAYS = 730 / 24
FLEET = ["cost-estimate", "--nodes", "40", "--gpus-per-node", "8"]
CLASSIC = ("-c", "container_insights_mode=classic")

#: No Region in the environment or a profile: us-east-1, where both modes are offered.
pytestmark = pytest.mark.usefixtures("no_aws")


def _items(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, dict[str, object]]:
    assert main([*FLEET, *extra, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    items = {i["name"]: i for i in document["line_items"]}
    assert document["total_usd"] == pytest.approx(sum(i["usd"] for i in items.values()), abs=0.05)
    return items


def test_every_line_item_of_the_month_names_its_price_and_source(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([*FLEET, *CLASSIC]) == 0
    out = capsys.readouterr().out
    for name in (
        "Exporter custom metrics",
        "Exporter EMF log ingestion",
        "Training emitter custom metrics",
        "Training emitter EMF log ingestion",
        "Container Insights enhanced observability",
        "Container logs ingestion",
        "Metrics Insights alarms",
        "Standard alarms",
        "Composite alarm",
        "Dashboards",
        "Lambda: storage analyzer",
        "Lambda: training analyzer",
        "Lambda: weekly report",
        "Lambda: silence check",
        "GetMetricData metrics requested",
        "S3 request metrics",
    ):
        assert name in out
    # 21 line items (no Step Functions below the fleet thresholds), each with its price's date.
    rows = [line for line in out.splitlines() if line.startswith("$")]
    assert len(rows) == 21 + 1  # and the total
    assert out.count(f"read {READ}") == 21
    assert "https://aws.amazon.com/cloudwatch/pricing/" in out
    assert "https://aws.amazon.com/lambda/pricing/" in out


def test_the_fleet_of_40_eight_gpu_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    items = _items(capsys, *CLASSIC)
    # 320 GPUs x 4 + 4 series, 320 x 7 fault gauges in 2% of hours: 1,328.8 at $0.30.
    assert items["Exporter custom metrics (GpuInsights)"]["quantity"] == pytest.approx(1328.8)
    assert items["Exporter custom metrics (GpuInsights)"]["usd"] == pytest.approx(398.64)
    # 320 GPUs x 18 observations a minute x 43,800 minutes, at $0.21 a million.
    ci = items["Container Insights enhanced observability: GPU observations"]
    assert ci["quantity"] == pytest.approx(320 * 18 * 43_800 / 1e6)
    assert ci["usd"] == pytest.approx(52.98, abs=0.01)
    # One shard: low power and lost GPU read every GPU, the 3 fault alarms read 2% of them;
    # the 48 job alarms (6 kinds in 8 job shards) read the 40 jobs, a job shard's 5 each;
    # each kind's fleet count reads the kind's series once more, over every shard.
    insights = items["Metrics Insights alarms"]
    assert insights["quantity"] == pytest.approx(2 * (320 * 2 + 320 * 3 * 0.02 + 48 * 40 / 8))
    # XID fatal, XID (2 metrics), the control plane's 10 (cdk/alarms/cluster.py), the
    # notifier's dead letters and refused documents.
    assert items["Standard alarms"]["quantity"] == 15
    assert items["Notifier custom metric (refused documents)"]["usd"] == pytest.approx(0.30)
    # The lemon score's fail-slow culprits: one a node named in the month, said, not priced.
    assert "fail_slow_culprits adds one for each node" in str(
        items["Notifier custom metric (refused documents)"]["basis"]
    )
    assert items["Dashboards"]["usd"] == 18.0  # 6 dashboards at $3 (Classic: no serving ones)
    # 1 GB a day by default, 30.42 days, $0.50 a GB.
    assert items["Container logs ingestion (Fluent Bit, on in the add-on)"]["usd"] == 15.21
    # The silence check: every 5 minutes, 256 MB.
    assert items["Lambda requests: silence check"]["quantity"] == pytest.approx(8760)
    # GetMetricData: 7 a volume and 18 a job daily (one a node each), 1 a GPU every 5 min.
    gmd = items["GetMetricData metrics requested"]["quantity"]
    assert gmd == pytest.approx(40 * 7 * DAYS + 40 * 18 * DAYS + 320 * 8760, rel=1e-4)
    assert items["S3 request metrics"]["usd"] == 0  # s3_enable_request_metrics is off


def test_otel_mode_prices_the_add_ons_gpu_series_by_its_preview(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """OTel mode: DCGM's 10 fields the add-on scrapes every 30 s, "at no additional charge" in
    preview (container-insights-otel-metrics.html), in place of Classic's observations; the
    exporter on EMF (exporter_sink=emf, pinned: OTLP is OTel mode's default) is priced as in
    Classic."""
    items = _items(capsys, "-c", "container_insights_mode=otel", "-c", "exporter_sink=emf")
    assert "Container Insights enhanced observability: GPU observations" not in items
    dcgm = items["OTel Container Insights: DCGM GPU series (add-on, OTLP)"]
    # 320 GPUs x 10 fields x 2 a minute x 43,800 minutes: 280.3 million datapoints, $0.
    assert dcgm["quantity"] == pytest.approx(320 * 10 * 2 * 43_800 / 1e6)
    assert dcgm["usd"] == 0
    assert items["Exporter custom metrics (GpuInsights)"]["usd"] == pytest.approx(398.64)
    total = sum(float(str(i["usd"])) for i in items.values())
    # Classic's total less its observations, plus the two serving dashboards at $3.
    assert total == pytest.approx(926.95 - 52.98 + 2 * 3.0, abs=0.02)


def test_otel_mode_prices_the_analyzer_s_promql_at_the_preview_s_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The GPU-hour attribution's and GPU memory right-sizing's PromQL through the query API,
    counted from their readers
    (cli/cost/promql_reads.py): "PromQL querying ... and Query Studio are in public preview release,
    are free of charge" (CloudWatch-PromQL.html); after it, "Programmatic PromQL queries are
    charged per million samples scanned" (metrics-otel-pricing.html), the line's unit. With the
    EMF sink these are the only PromQL reads (the OTLP sink's are
    test_with_the_otlp_sink_every_alarm...'s)."""
    items = _items(capsys, "-c", "container_insights_mode=otel", "-c", "exporter_sink=emf")
    promql = items["PromQL queries (GPU-hours and GPU memory, query API)"]
    # The attribution's day (161 requests, 6,451,200 samples), the nodes' GPU capacity (2
    # requests, 1,843,200 samples: its 40 series counted as 320 GPUs, an upper bound) and the
    # memory reads' 14-day lookback (81 requests and 2,764,800 samples a day): 47,001,600
    # samples a daily run (1,297 requests) x 30.42 runs: 1,429.6 million, at $0.
    capacity = 2 * 320 * 24 * 120
    assert capacity == 1_843_200
    assert promql["quantity"] == pytest.approx((6_451_200 + capacity + 14 * 2_764_800) * DAYS / 1e6)
    assert promql["usd"] == 0
    assert promql["unit"] == "million samples scanned"
    assert str(promql["basis"]).startswith("1,297 requests a run over the 40 nodes' DCGM series")
    assert "free of charge in the preview" in str(promql["basis"])
    price = promql["price"]
    assert price["source"] == (  # type: ignore[index]
        "https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch-PromQL.html"
    )
    assert "free of charge in public preview" in price["note"]  # type: ignore[index]
    # Classic reads no PromQL.
    assert not any("PromQL" in name for name in _items(capsys, *CLASSIC))
    # OTel is the default mode.
    assert _items(capsys, "-c", "exporter_sink=emf") == items


def test_a_region_without_otel_container_insights_is_priced_in_classic(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Where AWS does not offer OTel Container Insights (OTEL_REGIONS), the unset mode is
    Classic, never its free preview; OTel set there is refused, exit 2, in one line."""
    items = _items(capsys, "-c", "region=eu-central-1")
    assert "OTel Container Insights: DCGM GPU series (add-on, OTLP)" not in items
    assert "Container Insights enhanced observability: GPU observations" in items
    assert main([*FLEET, "-c", "region=eu-central-1", "-c", "container_insights_mode=otel"]) == 2
    assert "-c container_insights_mode=classic in eu-central-1" in capsys.readouterr().err


def test_the_exporter_over_otlp_is_billed_by_its_bytes_not_by_its_series(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """exporter_sink=otlp: every datapoint of every 10 s cycle at its serialized size, per GB
    ("OTel metrics pricing and storage"); no custom metric and no EMF log line."""
    items = _items(capsys, "-c", "container_insights_mode=otel", "-c", "exporter_sink=otlp")
    assert "Exporter custom metrics (GpuInsights)" not in items
    assert "Exporter EMF log ingestion" not in items
    otlp = items["Exporter OTLP metrics ingestion"]
    # 320 GPUs x (4 + the SM clock + 7 x 2%) datapoints x 262,800 cycles x 455 bytes: 196.7
    # GB at $0.08.
    assert otlp["quantity"] == pytest.approx(320 * 5.14 * 262_800 * 455 / 1e9)
    assert otlp["usd"] == pytest.approx(15.73, abs=0.01)
    assert otlp["price"]["usd"] == 0.08  # type: ignore[index]
    # Per 8-GPU node-month: 8 x 5.14 x 262,800 x 455 bytes = 4.92 GB, $0.39 (goal: <= $2).
    assert str(otlp["basis"]).endswith("per 8-GPU node-month: 4.92 GB, $0.39")


def test_the_emitter_over_otlp_is_billed_by_its_bytes_in_the_same_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """exporter_sink=otlp: the jobs' emitters send OTLP too, every rank's minute window at its
    datapoints' serialized size, per GB, at the exporter's price; with EMF, no such line."""
    items = _items(capsys, "-c", "container_insights_mode=otel", "-c", "exporter_sink=otlp")
    emitter = items["Training emitter OTLP metrics ingestion"]
    # 320 ranks (one a GPU) x 17 datapoints x 43,800 minute windows x 377 bytes: 89.8 GB.
    assert emitter["quantity"] == pytest.approx(320 * 17 * 43_800 * 377 / 1e9)
    assert emitter["usd"] == pytest.approx(7.19, abs=0.01)
    assert emitter["price"] == items["Exporter OTLP metrics ingestion"]["price"]
    emf = _items(capsys, "-c", "container_insights_mode=otel", "-c", "exporter_sink=emf")
    assert "Training emitter OTLP metrics ingestion" not in emf


def test_the_emitter_over_emf_is_priced_as_custom_metrics_and_log_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """exporter_sink=emf (Classic's): each job's series are custom metrics in
    GpuInsights/Training, taking the price tiers after the exporter's, and every rank's window
    is a log line; --jobs 0 prices none of it."""
    items = _items(capsys, *CLASSIC)
    metrics = items["Training emitter custom metrics (GpuInsights/Training)"]
    # 40 jobs x 14 metrics at $0.30: the exporter's 1,309.6 leave them in the first tier.
    assert metrics["quantity"] == 40 * 14
    assert metrics["usd"] == pytest.approx(168.00)
    logs = items["Training emitter EMF log ingestion"]
    # 320 ranks x 3,017 bytes x 43,800 minute windows: 42.3 GB at $0.50.
    assert logs["quantity"] == pytest.approx(320 * 3017 * 43_800 / 1e9)
    assert logs["usd"] == pytest.approx(21.14, abs=0.01)
    # Past the first tier: 10,000 exporter-and-emitter metrics at $0.30, the rest at $0.10.
    big = _items(capsys, "--nodes", "2000", "--gpus-per-node", "8", "--jobs", "2000", *CLASSIC)
    exporter = float(str(big["Exporter custom metrics (GpuInsights)"]["quantity"]))
    emitter = big["Training emitter custom metrics (GpuInsights/Training)"]
    assert exporter > 10_000
    assert emitter["usd"] == pytest.approx(2000 * 14 * 0.10)
    none = _items(capsys, "--jobs", "0", *CLASSIC)
    assert not any(name.startswith("Training emitter") for name in none)


def test_the_emitter_s_emf_figures_are_measured() -> None:
    """TRAINING_EMF_BYTES_PER_FLUSH and TRAINING_EMF_METRICS_PER_JOB are what
    benchmarks/training_emitter.py measures of a rank's window through the real EMF encoder."""
    from benchmarks.training_emitter import emf_window
    from cli.cost.exporter import TRAINING_EMF_BYTES_PER_FLUSH, TRAINING_EMF_METRICS_PER_JOB

    window = emf_window()
    assert window["emf_bytes_per_flush"] == pytest.approx(TRAINING_EMF_BYTES_PER_FLUSH, rel=0.02)
    assert window["emf_series_per_job"] == TRAINING_EMF_METRICS_PER_JOB


def test_the_bytes_a_datapoint_is_billed_are_measured() -> None:
    """OTLP_BYTES_PER_DATAPOINT and TRAINING_OTLP_BYTES_PER_DATAPOINT are what
    benchmarks/otlp_bytes.py measures of the real senders' payloads (each datapoint serialized
    alone, as billed), within 2%: they change when the labels or the encoding do."""
    from benchmarks.otlp_bytes import emitter_flush, exporter_node
    from cli.cost.exporter import (
        OTLP_BYTES_PER_DATAPOINT,
        TRAINING_OTLP_BYTES_PER_DATAPOINT,
        TRAINING_OTLP_DATAPOINTS_PER_FLUSH,
    )

    node = exporter_node(cycles=18)
    assert node["billed_bytes_per_datapoint"] == pytest.approx(OTLP_BYTES_PER_DATAPOINT, rel=0.02)
    assert node["wire_bytes_per_datapoint"] < OTLP_BYTES_PER_DATAPOINT / 2  # batched on the wire
    rank = emitter_flush()
    assert rank["billed_bytes_per_datapoint"] == pytest.approx(
        TRAINING_OTLP_BYTES_PER_DATAPOINT, rel=0.02
    )
    assert rank["datapoints"] == TRAINING_OTLP_DATAPOINTS_PER_FLUSH


def test_the_users_log_volume_and_settings_are_priced(capsys: pytest.CaptureFixture[str]) -> None:
    items = _items(
        capsys,
        "--container-log-gb-per-day",
        "20",
        "--volumes",
        "300000",
        "-c",
        "s3_enable_request_metrics=true",
        "-c",
        "storage_buckets=data-a,data-b",
    )
    assert items["Container logs ingestion (Fluent Bit, on in the add-on)"]["usd"] == 304.17
    # 16 request metrics per bucket filter, as custom metrics past the exporter's in tier 1.
    assert items["S3 request metrics"]["quantity"] == 32
    assert items["S3 request metrics"]["usd"] == pytest.approx(9.6)
    # 300,000 volumes: the Distributed Map of 15 shards of 20,000, daily.
    sfn = items["Step Functions: storage analyzer fleet map"]
    assert sfn["quantity"] == pytest.approx(DAYS * (3 + 2 * 15), rel=1e-4)
    assert items["Lambda requests: storage analyzer"]["quantity"] == pytest.approx(DAYS * 15)


@pytest.mark.parametrize(
    ("schedule", "runs"),
    [
        ("cron(0 6 * * ? *)", DAYS),  # daily
        ("cron(0 8 ? * MON *)", 4.345),  # weekly
        ("cron(0 8 ? * MON-FRI *)", 21.726),
        ("cron(0 */6 * * ? *)", 4 * DAYS),
        ("cron(0 0 1 * ? *)", 1),
        ("rate(5 minutes)", 8760),
        ("rate(1 hour)", 730),
    ],
)
def test_a_schedule_is_counted_in_runs_a_month(schedule: str, runs: float) -> None:
    assert runs_per_month(schedule) == pytest.approx(runs, rel=1e-3)


def test_every_price_cites_its_page_and_date() -> None:
    for price in PRICES.values():
        assert price.source.startswith("https://")
        assert price.read == READ
        # Free only where the page says so, in its words: the OTel Container Insights preview
        # ("at no additional charge") and PromQL's ("free of charge").
        assert price.usd > 0 or any(
            words in price.note for words in ("no additional charge", "free of charge")
        )


def test_with_the_otlp_sink_every_alarm_is_a_promql_alarm_and_no_silence_check_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """OTel mode with exporter_sink=otlp deploys one PromQL alarm per kind and its fleet count
    (8 GPU kinds, 6 job kinds, 4 serving kinds, the pending GPU pods and 4 node kinds: 46), no
    Metrics Insights alarm and no silence check, so neither is priced; before, the PromQL alarms
    were left out and the silence check's runs and GetMetricData reads (2.8 million metrics a
    month at 320 GPUs) were priced."""
    items = _items(capsys, "-c", "container_insights_mode=otel", "-c", "exporter_sink=otlp")
    assert "Metrics Insights alarms" not in items
    assert not [name for name in items if "silence check" in name]
    promql = items["PromQL alarms"]
    assert str(promql["basis"]).startswith("46 alarms (one per kind and its fleet count")
    assert promql["usd"] == 0  # no figure published: the samples are printed instead
    assert float(promql["quantity"]) > 0  # type: ignore[arg-type]
    # 40 volumes' reads, 7 metrics each a daily run; the 40 jobs' series are the emitter's OTLP
    # series, read with PromQL (before, their 8 metrics a job a run were priced here too:
    # 18,250 metrics).
    gmd = items["GetMetricData metrics requested"]
    assert gmd["quantity"] == pytest.approx(40 * 7 * DAYS) == pytest.approx(8_516.7, abs=0.05)
    assert "training none" in str(gmd["basis"])
    # The PromQL line counts them, run through the readers (cli/cost/promql_reads.py): the
    # DCGM and capacity reads' 1,297 requests a run, 444 more for the jobs and the exporter's
    # series (the listing, ranks, baselines, the jobs' nodes' GPUs and their pods' pending time
    # 2 requests a 14-day page each, the series 18, the ranks 3; the attribution's exporter 9
    # and stepping 1), and the report's 95 a week (31 of them the lemon nodes' 30 days of XIDs).
    reads = items["PromQL queries (analyzers and weekly report, query API)"]
    assert str(reads["basis"]).startswith("2,861 requests a training analyzer run")
    assert "95 a weekly report" in str(reads["basis"])
    # (and the GPUs the jobs' pods held: 2 queries a job node, a 14-day read's 14 pages)
    assert 1_297 + 14 * (2 + 3 + 18 + 2 + 2 * 2 + 2) + 9 + 1 + 40 * 2 * 14 == 2_861
    # The pending pods' 3 selectors over 320 GPUs' worth of series, 14 days of hours at 120
    # samples an hour, 30.42 runs a month: 1,177.3 million of the total.
    pending = 3 * 320 * 14 * 24 * 120 * DAYS / 1e6
    # The report's lemon nodes' XIDs: 31 days of hours of 320 GPUs' counters sent every 10 s,
    # weekly: 372.4 million.
    lemon = 31 * 24 * 320 * 360 * DAYS / 7 / 1e6
    # The GPUs the jobs' pods held: 2 selectors (GPU and pod samples) over the 40 job nodes'
    # 320 GPUs: 784.9 million.
    held = 2 * 320 * 14 * 24 * 120 * DAYS / 1e6
    assert reads["quantity"] == pytest.approx(13_117.0 + pending + lemon + held, abs=0.05)
    emf = _items(capsys, "-c", "container_insights_mode=otel", "-c", "exporter_sink=emf")
    # With the EMF sink and no serving alarms, the pending GPU pods' and the 4 GPU node kinds'
    # alarms and their fleet counts are the PromQL ones.
    no_serving = _items(capsys, "-c", "container_insights_mode=otel", "-c", "exporter_sink=emf",
                        "-c", "serving_alarms=false")  # fmt: skip
    assert str(no_serving["PromQL alarms"]["basis"]).startswith("10 alarms (one per kind")
    assert "Metrics Insights alarms" in emf
    assert "Lambda: silence check" in emf
    quiet = (
        "-c",
        "exporter_sink=emf",
        "-c",
        "serving_alarms=false",
        "-c",
        "control_plane_alarms=false",
    )
    assert "PromQL alarms" not in _items(capsys, "-c", "container_insights_mode=otel", *quiet)


def test_otel_mode_prices_the_serving_alarms_scans_bounded_by_the_gpus(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With the EMF sink OTel mode's only PromQL alarms are the serving ones (on by default):
    TTFT p99, requests waiting, KV cache full and errors, and their fleet counts (e2e has no
    default target). Each reads at most one series a GPU (a replica holds one at least),
    scraped every 30 s: 10 samples in a 5-minute look back, 2 in the queue's minute, so
    (10 + 2 + 10 + 10) x 2 = 64 a GPU an evaluation, at 320 GPUs every minute of the month."""
    items = _items(capsys, "-c", "container_insights_mode=otel", "-c", "exporter_sink=emf",
                   "-c", "control_plane_alarms=false")  # fmt: skip
    promql = items["PromQL alarms"]
    assert str(promql["basis"]).startswith("8 alarms")
    assert promql["quantity"] == pytest.approx(320 * 64 * MINUTES_PER_MONTH / 1e6)
    assert promql["usd"] == 0


def test_no_jobs_and_no_volumes_are_priced_as_none(capsys: pytest.CaptureFixture[str]) -> None:
    """--jobs 0 and --volumes 0 were once priced as the one-a-node default (40 at --nodes 40)."""
    items = _items(capsys, *CLASSIC, "--jobs", "0", "--volumes", "0")
    # GetMetricData: the silence check's GPU a run alone (no volume, no job read).
    assert items["GetMetricData metrics requested"]["quantity"] == pytest.approx(320 * 8760)
    assert main([*FLEET, *CLASSIC, "--jobs", "0", "--volumes", "0"]) == 0
    fleet = capsys.readouterr().out.splitlines()[1]
    assert (
        fleet == "Fleet: 40 GPU nodes x 8 GPUs = 320 GPUs; exporter every 10 s; 0 volumes, 0 jobs"
    )
    # OTel mode with the OTLP sink: the listing's 2 queries find no job; none is read after.
    otel = _items(capsys, "--jobs", "0")
    promql = otel["PromQL queries (analyzers and weekly report, query API)"]
    assert "0 jobs' emitter series (0 ranks)" in str(promql["basis"])
    # No job, no rank: the emitter sends nothing (it was priced at a rank a GPU all the same).
    emitter = otel["Training emitter OTLP metrics ingestion"]
    assert (emitter["quantity"], emitter["usd"]) == (0, 0)


def test_one_of_each_is_said_in_the_singular(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "cost-estimate",
        "--nodes",
        "1",
        "--gpus-per-node",
        "1",
        "--jobs",
        "1",
        "--volumes",
        "1",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "Fleet: 1 GPU node x 1 GPU = 1 GPU; exporter every 10 s; 1 volume, 1 job"
    assert "the 1 node's DCGM and exporter series and the 1 job's emitter series (1 rank)" in (
        "\n".join(out)
    )


def test_the_first_line_names_the_region_and_mode_priced(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(FLEET) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == (
        "Region us-east-1 (none set: the CDK CLI's default); Container Insights mode otel "
        "(unset: OTel, as AWS offers it in this Region); 0 Metrics Insights alarms and 46 "
        "PromQL alarms"
    )
    assert main([*FLEET, "-c", "region=eu-central-1"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(
        "Region eu-central-1 (the region setting); Container Insights mode classic (unset: Classic"
    )


def test_a_job_of_more_ranks_than_a_promql_answer_holds_is_refused_by_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """It once ended in a JobQueryError traceback: the training analyzer reads a job's ranks in
    one PromQL answer (promql_jobs.py rank_stats)."""
    argv = ["cost-estimate", "--nodes", "100", "--gpus-per-node", "8", "--jobs", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err == (
        "gpu-insights cost-estimate: --jobs 1 shares the 800 GPUs priced as 800 ranks a job: with "
        "exporter_sink=otlp a job's ranks are read in one PromQL answer of under 500 series; give "
        "--jobs 2 or more\n"
    )
    assert main([*argv, *CLASSIC]) == 0  # Classic reads the jobs with GetMetricData
