"""The embedded default: the real app and code, an in-process moto instead of an account.

Each step uses the production code path; only the endpoint differs. Where moto lacks an API
(the EKS add-on, Pod Identity), the demo says so and shows what would be sent instead.
"""

import json
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from itertools import chain
from pathlib import Path
from typing import Any, Final

from moto import mock_aws
from moto.moto_api._internal import mock_random

from cdk.alarms.annotations import alarm_lines
from cdk.alarms.catalog import gpu_alarms, promql_alarms
from cdk.alarms.model import AlarmSpec, InsightsQuery
from cdk.alarms.promql import PromQLQuery
from cdk.function_configs import silence_config
from cdk.settings import OTLP_ENDPOINT_MIN_ADDON_VERSION, Settings, default_sink
from cli.backtest.cloudwatch_history import fetch_samples
from cli.backtest.dashboards import PromQLSource
from cli.backtest.engine import BacktestResult, backtest, report
from cli.backtest.otel_replay import OtelReplay, replay_on, replayed_alarms
from cli.backtest.otel_replay import report as otel_report
from cli.backtest.promql_alarm import ALARM as PROMQL_ALARM
from cli.backtest.promql_alarm import replay_range
from cli.backtest.promql_pages import replay_config
from cli.backtest.silence_history import NOTE as SILENCE_NOTE
from cli.backtest.silence_history import derive_silence
from cli.demo.dashboards import (
    DashboardView,
    dashboards_summary,
    demo_dashboard_views,
    deploy_storage_dashboard,
    storage_dashboard,
)
from cli.demo.exporter import (
    INTERVAL_S,
    NODE,
    ROLES,
    ExporterReplay,
    replay_exporter,
    replay_window,
)
from cli.demo.failures import diagnose, failures_summary, seed_failures
from cli.demo.failures import emitter_samples as failure_samples
from cli.demo.indexed_cloudwatch import indexed_cloudwatch
from cli.demo.jobs import emitter_samples, job_events, seed_alarm_jobs
from cli.demo.jobs import summary_lines as job_summary_lines
from cli.demo.kube_state import morning_samples, pending_window
from cli.demo.last_week import carry_report, last_week_report
from cli.demo.notifications import NotificationsDemo, notifications_summary, run_notifications
from cli.demo.otel import (
    DEMO_INTERVAL_S,
    OtelEngine,
    capacity_week_samples,
    exporter_week_samples,
    joins,
    replay_capacity_samples,
    replay_samples,
    week_samples,
)
from cli.demo.otlp import otlp_samples
from cli.demo.preflight import run_preflight
from cli.demo.realistic.control_plane import put_control_plane
from cli.demo.report import render_png, run_weekly_report, write_dashboards
from cli.demo.serving import serving_week_samples
from cli.demo.spare_gpus import DEMO_WEEK
from cli.demo.storage import BUCKETS as STORAGE_BUCKETS
from cli.demo.storage import DEMO_CLUSTER, run_storage_analyzer, storage_summary
from cli.demo.storage import END as STORAGE_END
from cli.demo.storage import seed as seed_storage
from cli.demo.training import CLUSTER as TRAINING_CLUSTER
from cli.demo.training import (
    monday_summary,
    run_next_morning,
    run_training_analyzer,
    training_summary,
)
from cli.demo.training import otlp_samples as training_samples
from cli.demo.training import seed as seed_training
from cli.demo.week import LAST_WEEK, WeekSeeder
from gpu_insights_agent.contract.metrics import (
    DIM_CLUSTER,
    DIM_NODE,
    NAMESPACE_GPU,
    SILENT_GPUS_METRIC,
    ExporterSink,
    GpuMetric,
    training_log_group,
)
from lambdas.shared.aws_clients import new_session
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.shared.promql import promql_for
from lambdas.weekly_report.failures_section import FAILURES_CSV
from lambdas.weekly_report.funnel_section import FUNNEL_CSV
from lambdas.weekly_report.goodput_section import GOODPUT_CSV
from lambdas.weekly_report.memory_section import MEMORY_CSV
from lambdas.weekly_report.serving_section import SERVING_CSV

DEMO_REGION = "us-east-1"
MOTO_SEED = 2026
#: What step 11's dashboards read of CloudWatch: the week before the Monday run to its end.
DASHBOARD_WINDOW: Final = (STORAGE_END - 8 * 86_400, STORAGE_END + 2 * 3600)


@dataclass
class DemoResult:
    """What the demo did, for the summary it prints and for tests."""

    out_dir: Path
    cdk_out: Path
    resources_by_stack: dict[str, Counter[str]] = field(default_factory=dict)
    parameter_name: str = ""
    fetched_agent_config: dict[str, Any] = field(default_factory=dict)
    addon_configuration: dict[str, Any] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    exporter: ExporterReplay | None = None
    backtest: list[BacktestResult] = field(default_factory=list)
    storage_findings: list[dict[str, Any]] = field(default_factory=list)
    storage_names: dict[str, str] = field(default_factory=dict)
    training_summary: dict[str, Any] = field(default_factory=dict)
    training_findings: list[dict[str, Any]] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    dashboards: list[Path] = field(default_factory=list)
    preflight: list[str] = field(default_factory=list)
    week_datapoints: int = 0
    #: The week before's run (its own moto context): its datapoints, and the report objects
    #: carried into this week's bucket.
    last_week_datapoints: int = 0
    last_week_objects: list[str] = field(default_factory=list)
    #: Datapoints of the week before that this week's CloudWatch returned (none: separate).
    last_week_points_seen: int = -1
    notifications: NotificationsDemo | None = None
    dashboard_views: list[DashboardView] = field(default_factory=list)
    cluster: str = ""
    #: The summary of the analyzer's Monday run that attributes the week's Sunday.
    sunday_attribution: dict[str, Any] = field(default_factory=dict)
    #: Its findings (the replayed node's GPU held without work among them).
    monday_findings: list[dict[str, Any]] = field(default_factory=list)
    #: The planted failed jobs' failure-cause findings (cli/demo/failures.py).
    failures: list[dict[str, Any]] = field(default_factory=list)
    mode: ContainerInsightsMode = ContainerInsightsMode.CLASSIC
    #: OTel mode: the samples the local Prometheus held, and (pods, pod-hours, misplaced)
    #: of this week's holds as the GPU analyzer reads them (cli/demo/otel.py ``joins``).
    otel_series: int = 0
    otel_joins: tuple[int, int, int] | None = None
    #: With the exporter's OTLP sink: the PromQL alarms replayed over the replay, and when
    #: each went into ALARM (``promql_raised``).
    promql_alarms: list[AlarmSpec] = field(default_factory=list)
    promql_raised: list[tuple[AlarmSpec, float]] = field(default_factory=list)
    #: OTel mode's PromQL alarms over the replay, as ``backtest --history`` replays them
    #: (the OTLP sink's run), in out/alarm-backtest.txt after the metric alarms.
    otel_backtest: OtelReplay | None = None

    def _exporter_lines(self) -> list[str]:
        """Step 4: what the exporter's replay read back, GPU by GPU."""
        lines: list[str] = []
        if self.exporter is None:
            return lines
        replay = self.exporter
        sent = (
            "sent over OTLP (exporter_sink=otlp) to the local Prometheus"
            if replay.otlp is not None
            else "into CloudWatch (GpuInsights)"
        )
        lines.append(
            f"4. Ran the GPU exporter on a simulated node ({', '.join(ROLES)} H100s) for "
            f"{replay.cycles} cycles; {replay.documents} documents {sent}, read back:"
        )
        for gpu, share in replay.power_utilization_by_gpu.items():
            sm = replay.sm_active_by_gpu.get(gpu)
            sm_text = f"SM active {sm:5.1f}%" if sm is not None else "SM active n/a"
            health = "  LOST (gpu_healthy=0)" if gpu in replay.unhealthy_gpus else ""
            throttled = replay.thermal_throttled_by_gpu.get(gpu, 0.0)
            lines.append(
                f"   GPU {gpu} ({ROLES[int(gpu)]:>11}): power {share:5.1f}% of its limit, "
                f"{sm_text}, thermally throttled {throttled:3.0f}% of samples{health}"
            )
        for gpu, code, severity, meaning in replay.xids:
            lines.append(f"   XID {code} on GPU {gpu} ({severity}): {meaning}")
        return lines

    @property
    def _points(self) -> str:
        """What the week's figures count: CloudWatch's hourly datapoints, or with the OTLP
        sink the local Prometheus's samples (DCGM's, the exporter's and the emitters')."""
        return "samples in the local Prometheus" if self.promql_alarms else "hourly datapoints"

    def _promql_lines(self) -> list[str]:
        """Step 5 with the exporter's OTLP sink: each PromQL alarm that went into ALARM."""
        lines = [
            f"5. Replayed the app's {len(self.promql_alarms)} PromQL alarms "
            "(exporter_sink=otlp) every minute over that replay and the alarm jobs' hours, on "
            f"the local Prometheus: {len({s.key for s, _ in self.promql_raised})} went into "
            "ALARM (step 12 pages each planted fault through the notifier):"
        ]
        lines += [
            f"   {spec.key:<24} [{spec.severity}] at {datetime.fromtimestamp(at, UTC):%H:%M}"
            for spec, at in self.promql_raised
        ]
        raised = {spec.key for spec, _ in self.promql_raised}
        quiet = [s.key for s in self.promql_alarms if s.key not in raised]
        lines.append(f"   stayed quiet: {', '.join(quiet)}")
        return lines

    def _backtest_lines(self) -> list[str]:
        """Step 5: each alarm that would have fired, and the GPU it names."""
        lines: list[str] = []
        if self.promql_alarms:
            return self._promql_lines()
        if not self.backtest:
            return lines
        raised = [r for r in self.backtest if r.alarms_raised]
        lines.append(
            f"5. Backtested the app's {len(self.backtest)} GPU and job alarms over that replay "
            f"(read back from CloudWatch): {len(raised)} would have fired. {NOT_BACKTESTED}:"
        )
        for r in raised:
            first = next(t for t in r.transitions if t.new.value == "ALARM")
            lines.append(
                f"   {r.spec.key:<24} [{r.spec.severity}] at "
                f"{datetime.fromtimestamp(first.time, UTC):%H:%M}: {first.reason}"
            )
            for group in r.contributors_alarmed:  # the GPU a multi time series alarm names
                lines.append(f"   {'':<24} on {r.named(group)}")
        quiet = [r.spec.key for r in self.backtest if not r.alarms_raised]
        lines.append(f"   stayed quiet: {', '.join(quiet)}")
        lines += job_summary_lines(self.backtest, replay_window()[0])
        silent = next(
            r
            for r in self.backtest
            if isinstance(r.spec.metric, InsightsQuery)
            and r.spec.metric.metric == SILENT_GPUS_METRIC
        )
        lines.append(
            "   gpu-silent: the silence check's rule, run every 5 minutes over the replay "
            "(no EC2 in it: the node counts as running to the end), found "
            + (
                ", ".join(silent.named(g) for g in silent.contributors_alarmed)
                if silent.alarms_raised
                else "every GPU reporting to the end"
            )
        )
        return lines

    def _addon_line(self) -> str:
        """Step 2: the add-on's configuration in the demo's Container Insights mode."""
        config = self.addon_configuration
        collected = config["agent"]["config"]["logs"]["metrics_collected"]
        moto = "(moto has no EKS add-on API: written to a file instead)"
        if self.mode is ContainerInsightsMode.OTEL:
            return (
                "2. Add-on amazon-cloudwatch-observability configuration, OTel mode: OTel "
                f"Container Insights={config['otelContainerInsights']['enabled']}, Classic="
                f"{config['containerInsights']['enabled']}, EMF listener={'emf' in collected} "
                + moto
            )
        kubernetes = collected["kubernetes"]
        return (
            "2. Add-on amazon-cloudwatch-observability configuration: enhanced Container Insights="
            f"{kubernetes['enhanced_container_insights']}, GPU metrics="
            f"{kubernetes['accelerated_compute_metrics']}, EMF listener={'emf' in collected} "
            + moto
        )

    def _otel_lines(self) -> list[str]:
        """OTel mode: where the GPU analyzer's pods came from, and how they joined."""
        if self.otel_joins is None:
            return []
        pods, hours, misplaced = self.otel_joins
        joined = (
            "every pod joined its node and GPU exactly"
            if misplaced == 0
            else f"{misplaced} pod-hours on another node or GPU than the week put them on"
        )
        return [
            f"   OTel mode: a local Prometheus held {self.otel_series:,} samples (DCGM's every "
            f"{DEMO_INTERVAL_S} s with pod and node labels; the exporter's and emitters' over "
            "OTLP), read by PromQL at the Region's monitoring host; the GPU analyzer read "
            f"{pods} pods, {hours:,} pod-hours this week, "
            f"{joined} (node label and DCGM's gpu index; no power matching); the GPU memory "
            "right-sizing read DCGM's framebuffer series by the same labels. out/dashboards "
            "holds the OTel mode's bodies, whose PromQL widgets step 11 runs on the same "
            "Prometheus."
        ]

    @property
    def report_line(self) -> str:
        """Step 8: the weekly report's run and the dashboard bodies written (as many as the
        mode's app deploys: ``write_dashboards``)."""
        return (
            f"8. Ran the weekly report Lambda for {self.report['week']}, compared with the "
            f"week before's report (a run of its own over {self.last_week_datapoints:,} "
            f"{self._points} of a week when nlp started mid-week and the notebook was culled "
            "overnight): report.html and "
            f"report.json in the report bucket ({self.report['findings']} findings read, "
            f"{self.report['malformed_finding_lines']} malformed lines), the summary sent to "
            f"SNS once; and wrote the {len(self.dashboards)} dashboard bodies the app deploys "
            f"in {self.mode} mode."
        )

    def summary(self) -> str:
        lines = [
            "EKS GPU Insights demo (no AWS account: moto in-process), "
            f"{self.mode} Container Insights mode",
            "",
        ]
        lines.append(
            f"1. Synthesized the CDK app into {self.cdk_out}/ (cdk-nag AwsSolutions: clean)"
        )
        for stack, counts in self.resources_by_stack.items():
            detail = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
            lines.append(f"   {stack}: {sum(counts.values())} resources ({detail})")
        lines.append(self._addon_line())
        measurements = self.fetched_agent_config["metrics"]["metrics_collected"]["nvidia_gpu"]
        lines.append(
            f"3. Stored the GPU agent configuration in SSM {self.parameter_name} and fetched it "
            f"back as a node would: {len(measurements['measurement'])} nvidia_gpu measurements "
            f"every {measurements['metrics_collection_interval']} s"
        )
        lines += self._exporter_lines() + self._backtest_lines()
        if self.storage_findings:
            lines += storage_summary(self.storage_findings, self.storage_names)
        if self.training_summary:
            lines += training_summary(self.training_summary, self.training_findings)
            lines.append(
                f"   before it, the week: {self.week_datapoints:,} {self._points} of three "
                "teams' GPUs (exporter and Container Insights), the steps of the two teams' "
                "jobs in every hour they held GPUs and a short run of each job a day, the "
                "analyzer run on each day"
            )
        if self.sunday_attribution:
            lines += monday_summary(self.monday_findings)
        if self.failures:
            lines += failures_summary(self.failures)
        lines += self._otel_lines()
        if self.report:
            lines.append(self.report_line)
        if self.preflight:
            lines.append("9. `gpu-insights preflight` before the deploy, on the demo's cluster:")
            lines.extend(f"   {line}" for line in self.preflight if line)
        if self.notifications is not None:
            lines += notifications_summary(self.notifications)
        if self.dashboard_views:
            lines += dashboards_summary(
                self.dashboard_views, DEMO_REGION, self.cluster, NODE, self.mode
            )
        lines.append("")
        lines.append("Output:")
        lines.extend(f"   {path}" for path in self.files)
        return "\n".join(lines)


#: The alarms the app deploys that the backtest leaves out, and why.
NOT_BACKTESTED: Final = (
    "Not backtested: gpu-silence-check (it reads the silence check's heartbeat, and the demo "
    "runs no silence check; gpu-silent, which reads the check's series, is backtested and "
    "stays quiet for the same reason), notifier-failing and notifier-refused (the notifier's "
    "own dead letters and refused log events) and gpu-fleet-health (a composite of the "
    "others that sends nothing)"
)


def _synthesize(settings: Settings, cdk_out: Path) -> dict[str, dict[str, Any]]:
    from aws_cdk import App

    from cdk.app import build

    app = App(outdir=str(cdk_out))
    build(app, settings)
    assembly = app.synth()
    return {stack.stack_name: dict(stack.template) for stack in assembly.stacks}


def _resources(template: dict[str, Any], resource_type: str) -> list[dict[str, Any]]:
    return [
        resource.get("Properties", {})
        for resource in template.get("Resources", {}).values()
        if resource["Type"] == resource_type
    ]


def _write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _storage_step(
    result: DemoResult, clients: dict[str, Any], settings: Settings, out_dir: Path
) -> None:
    # Seeded again where the resources the findings name are made: the steps before make as
    # many of moto's ids in either mode, those after read more or fewer pages.
    mock_random.seed(MOTO_SEED)
    result.storage_names = seed_storage(clients, settings.cluster_name)
    deploy_storage_dashboard(clients["cloudwatch"], settings.cluster_name, list(STORAGE_BUCKETS))
    _, result.storage_findings = run_storage_analyzer(clients, settings)
    result.files.append(_write_lines(out_dir / "storage-findings.jsonl", result.storage_findings))


def _training_step(
    result: DemoResult, clients: dict[str, Any], settings: Settings, out_dir: Path
) -> None:
    """The week's fleet and its jobs' runs, a day at a time, each day before the training
    analyzer's daily run over it."""
    # Monday to Friday attributed by the runs at the midnight after each; Saturday by the
    # training step's run (Sunday 23:00), Sunday by the Monday run after the exporter's replay.
    week = WeekSeeder(
        clients["cloudwatch"],
        settings.cluster_name,
        DEMO_WEEK,
        daily_runs=5,
        container_insights=settings.container_insights_mode is ContainerInsightsMode.CLASSIC,
        exporter=not _otlp(settings),
    )
    clients["logs"].create_log_group(logGroupName=training_log_group(settings.cluster_name))

    def earlier_runs() -> Iterator[float]:
        day_start = DEMO_WEEK.start
        for run_at in week:  # each day's fleet, then its jobs' runs, before its run
            seed_training(clients, (day_start, run_at), fleet=True, otlp=_otlp(settings))
            yield run_at
            day_start = run_at
        # The last day's, before the last run.
        seed_training(clients, (day_start, STORAGE_END), fleet=True, otlp=_otlp(settings))

    result.training_summary, result.training_findings = run_training_analyzer(
        clients,
        earlier_runs=earlier_runs(),
        mode=settings.container_insights_mode,
        sink=settings.exporter_sink,
    )
    result.week_datapoints = week.datapoints
    result.files.append(_write_lines(out_dir / "training-findings.jsonl", result.training_findings))


def _exporter_step(
    result: DemoResult, clients: dict[str, Any], settings: Settings, out_dir: Path
) -> list[AlarmSpec]:
    """The exporter's replay, then the alarms the app deploys over what it published, read
    back from CloudWatch exactly as `gpu-insights backtest --cloudwatch` reads it."""
    cloudwatch = clients["cloudwatch"]
    result.exporter = replay_exporter(
        cloudwatch,
        cluster_name=settings.cluster_name,
        out_dir=out_dir,
        container_insights=settings.container_insights_mode is ContainerInsightsMode.CLASSIC,
        otlp=_otlp(settings),
    )
    if result.exporter.emf_path is not None:
        result.files.append(result.exporter.emf_path)
    specs = gpu_alarms(settings.alarm_settings())
    start, end = replay_window()
    # The replayed node's series only: the demo week's other nodes publish hourly statistic
    # sets, which one-minute alarms would read as a datapoint an hour (and flap on).
    samples = [
        s
        for s in fetch_samples(cloudwatch, specs, start=start, end=end)
        if dict(s.dimensions).get(DIM_NODE, NODE) == NODE
    ]
    # No silence check runs in the replay: gpu_silent as its rule would publish it.
    samples += derive_silence(samples, silence_config(settings), start=start, end=end)
    result.backtest = backtest(specs, samples, start=start, end=end)
    path = out_dir / "alarm-backtest.txt"
    path.write_text(report(result.backtest, start=start, end=end) + f"\n\n{SILENCE_NOTE}\n")
    result.files.append(path)
    return specs


def _points_between(cloudwatch: Any, cluster: str, start: float, end: float) -> int:
    """The fleet's power datapoints CloudWatch returns between ``start`` and ``end``."""
    answer = cloudwatch.get_metric_data(
        MetricDataQueries=[
            {
                "Id": "power",
                "MetricStat": {
                    "Metric": {
                        "Namespace": NAMESPACE_GPU,
                        "MetricName": str(GpuMetric.POWER_UTILIZATION),
                        "Dimensions": [{"Name": DIM_CLUSTER, "Value": cluster}],
                    },
                    "Period": 86_400,
                    "Stat": "SampleCount",
                },
            }
        ],
        StartTime=datetime.fromtimestamp(start, UTC),
        EndTime=datetime.fromtimestamp(end, UTC),
    )
    return int(sum(answer["MetricDataResults"][0]["Values"]))


def run_demo(
    *,
    out_dir: Path,
    cdk_out: Path,
    settings: Settings | None = None,
    mode: ContainerInsightsMode = ContainerInsightsMode.CLASSIC,
    serving: bool = False,
) -> DemoResult:
    """Synthesize, apply what moto supports, fetch it back, and write the results. ``mode``:
    the Container Insights mode the demo deploys (whatever the settings name); in OTel mode a
    local Prometheus (cli/demo/otel.py) serves the weeks' DCGM series to the GPU analyzer.
    ``serving`` (OTel mode): the week has the inference replicas too (cli/demo/serving.py),
    their vLLM series and their GPUs' DCGM series, which only OTel mode reads; without them
    the week is the Classic run's, file for file (cli/demo/both_modes.py)."""
    if serving and mode is not ContainerInsightsMode.OTEL:
        raise ValueError("the serving week is OTel mode's: Classic mode reads no serving series")
    settings = replace(
        settings or Settings(cluster_name=DEMO_CLUSTER), container_insights_mode=mode
    )
    if mode is ContainerInsightsMode.OTEL:
        # The add-on pinned to a version that serves its OTLP endpoint (preflight's fix for
        # EKS's older default), so the exporter and the emitter send there: OTel mode's
        # default sink (cdk.settings.default_sink).
        version = settings.addon_version or OTLP_ENDPOINT_MIN_ADDON_VERSION
        settings = replace(
            settings, exporter_sink=default_sink(mode, version), addon_version=version
        )
    # moto's ids (instances, volumes) from one seed: two runs name the same resources, so
    # their findings and reports compare byte for byte.
    mock_random.seed(MOTO_SEED)
    with ExitStack() as stack:
        # moto's answers, from indexes: most of a run was moto scanning every datapoint.
        stack.enter_context(indexed_cloudwatch())
        engine = None
        if mode is ContainerInsightsMode.OTEL:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="otel-")))
            engine = OtelEngine(folder, DEMO_REGION, settings.cluster_name, stack)
            cluster = settings.cluster_name
            engine.load(
                "last-week",
                chain(
                    week_samples(cluster, LAST_WEEK),
                    exporter_week_samples(cluster, LAST_WEEK),
                    capacity_week_samples(cluster, LAST_WEEK),
                ),
            )
        return _run(out_dir, cdk_out, settings, engine, serving=serving)


def promql_raised(promql: Any, settings: Settings) -> list[tuple[AlarmSpec, float]]:
    """Each PromQL alarm the app deploys replayed over the exporter's replay on the local
    Prometheus (cli/backtest/promql_alarm.py, as CloudWatch evaluates it): when the alarm went
    into ALARM, each time its first contributor did (the alarm is in ALARM while any is)."""
    start, end = replay_window()
    raised = []
    for spec in promql_alarms(settings.alarm_settings()):
        assert isinstance(spec.metric, PromQLQuery)
        alarmed: set[Any] = set()
        for t in replay_range(promql, spec.metric, start, end):
            if t.state == PROMQL_ALARM:
                if not alarmed:
                    raised.append((spec, t.at))
                alarmed.add(t.contributor)
            else:
                alarmed.discard(t.contributor)
    return raised


def _otel_backtest(result: DemoResult, promql: Any, settings: Settings, out_dir: Path) -> None:
    """Every PromQL alarm the app deploys over the replay, on the local Prometheus, each ALARM
    with the page the notifier would send, as `gpu-insights backtest --history` prints them
    (cli/backtest/otel_replay.py): appended to out/alarm-backtest.txt, whose metric alarms
    are the control plane's alone with the OTLP sink. And when each went into ALARM, for the
    report (``promql_raised``)."""
    result.promql_raised = promql_raised(promql, settings)
    start, end = replay_window()
    config = replay_config(settings, promql.region)
    result.otel_backtest = replay_on(promql, replayed_alarms(settings), config, [], start, end)
    path = out_dir / "alarm-backtest.txt"
    path.write_text(f"{path.read_text()}\n{otel_report(result.otel_backtest)}\n")


def _otlp(settings: Settings) -> bool:
    """The exporter and the training emitter send OTLP: their series are the engine's."""
    return settings.exporter_sink is ExporterSink.OTLP


def _monday(
    clients: dict[str, Any], settings: Settings, engine: OtelEngine | None, result: DemoResult
) -> None:
    """The analyzer's Monday-morning run over the Sunday the teams trained into, and the
    failed jobs' causes read back from their logs."""
    seed_training(clients, (STORAGE_END, STORAGE_END + 3600), fleet=True, otlp=_otlp(settings))
    # Jobs that die in the replayed hours, their logs where Container Insights puts them.
    seed_failures(clients, settings.cluster_name, otlp_sink=_otlp(settings))
    result.sunday_attribution, result.monday_findings = run_next_morning(
        clients["s3"], STORAGE_END + 8 * 3600, settings.container_insights_mode,
        settings.exporter_sink,
    )  # fmt: skip
    if engine is not None:
        result.otel_joins = joins(
            promql_for(clients["cloudwatch"]), settings.cluster_name, DEMO_WEEK
        )
        result.otel_series = engine.lines
    with (result.out_dir / "training-findings.jsonl").open("a") as findings:
        findings.writelines(json.dumps(f) + "\n" for f in result.monday_findings)
    result.failures = diagnose(clients["logs"], settings.cluster_name, result.monday_findings)


def _synthesized(
    settings: Settings, out_dir: Path, cdk_out: Path
) -> tuple[DemoResult, dict[str, dict[str, Any]]]:
    """Step 1 and the add-on's configuration (step 2): the result so far, and the templates."""
    templates = _synthesize(settings, cdk_out)
    result = DemoResult(out_dir=out_dir, cdk_out=cdk_out, mode=settings.container_insights_mode)
    for name, template in templates.items():
        result.resources_by_stack[name] = Counter(
            resource["Type"] for resource in template.get("Resources", {}).values()
        )
    addons = [props for t in templates.values() for props in _resources(t, "AWS::EKS::Addon")]
    result.addon_configuration = json.loads(addons[0]["ConfigurationValues"])
    return result, templates


def _session() -> Any:
    return new_session(
        aws_access_key_id="demo", aws_secret_access_key="demo", region_name=DEMO_REGION
    )


def _configure(
    session: Any, templates: dict[str, dict[str, Any]], settings: Settings, result: DemoResult
) -> None:
    """Step 3, the agent configuration stored and fetched back, then the preflight."""
    ssm = session.client("ssm")
    # What CloudFormation does with each AWS::SSM::Parameter in the synthesized templates.
    for template in templates.values():
        for props in _resources(template, "AWS::SSM::Parameter"):
            ssm.put_parameter(Name=props["Name"], Value=props["Value"], Type=props["Type"])
    # What `amazon-cloudwatch-agent-ctl -a fetch-config -c ssm:NAME` reads on a node.
    result.parameter_name = settings.agent_config_parameter_name
    value = ssm.get_parameter(Name=result.parameter_name)["Parameter"]["Value"]
    result.fetched_agent_config = json.loads(value)
    # Before the deploy (and before the demo's steps write log groups), as a user would.
    result.preflight = run_preflight(session, settings)


def _write_deployment(result: DemoResult) -> None:
    """The agent's and the add-on's configuration and the stacks' resources, as files."""
    result.out_dir.mkdir(parents=True, exist_ok=True)
    for filename, document in (
        ("agent-config.json", result.fetched_agent_config),
        ("addon-configuration.json", result.addon_configuration),
        ("stacks.json", {k: dict(v) for k, v in result.resources_by_stack.items()}),
    ):
        path = result.out_dir / filename
        path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
        result.files.append(path)


def deploy_demo(
    *,
    out_dir: Path,
    cdk_out: Path,
    settings: Settings,
    mode: ContainerInsightsMode = ContainerInsightsMode.CLASSIC,
) -> DemoResult:
    """The demo's deploy alone (steps 1 to 3 and the preflight, in a moto of its own), with
    the files it writes: what a setting changes in the app and the agent's configuration, in
    the seconds of a synth rather than the minutes of the demo's weeks. ``mode`` as
    ``run_demo``'s."""
    settings = replace(settings, container_insights_mode=mode)
    mock_random.seed(MOTO_SEED)
    result, templates = _synthesized(settings, out_dir, cdk_out)
    with mock_aws():
        _configure(_session(), templates, settings, result)
    _write_deployment(result)
    return result


def _dashboard_step(
    result: DemoResult,
    clients: dict[str, Any],
    settings: Settings,
    specs: list[AlarmSpec],
    deployed: dict[str, dict[str, Any]],
    engine: OtelEngine | None,
) -> None:
    """Step 11: what each dashboard shows on the demo's data, the control plane's series put
    where AWS vends them first."""
    if result.exporter is None or result.exporter.emf_path is None:
        return
    result.cluster = settings.cluster_name
    # The EKS control plane's vended metrics over the dashboards' window, the hour of
    # the morning's pending GPU pod in the scheduler's queue (cli/demo/kube_state.py).
    put_control_plane(
        clients["cloudwatch"], settings.cluster_name, *DASHBOARD_WINDOW,
        pending={int(pending_window()[0] // 3600 * 3600)},
    )  # fmt: skip
    # The OTel bodies' PromQL widgets run on the local Prometheus, as the console runs
    # them at the Region's monitoring host, over the day that ends with the replay.
    promql = (
        PromQLSource(promql_for(clients["cloudwatch"]), end=replay_window()[1])
        if engine is not None
        else None
    )
    result.dashboard_views = demo_dashboard_views(
        result.exporter.emf_path,
        clients["logs"],
        cluster=settings.cluster_name,
        training_cluster=TRAINING_CLUSTER,
        node=NODE,
        buckets=list(STORAGE_BUCKETS),
        exporter_interval_s=int(INTERVAL_S),
        alarm_lines=alarm_lines(specs),
        cloudwatch=clients["cloudwatch"],
        window=(
            datetime.fromtimestamp(DASHBOARD_WINDOW[0], UTC),
            datetime.fromtimestamp(DASHBOARD_WINDOW[1], UTC),
        ),
        mode=settings.container_insights_mode,
        promql=promql,
        deployed=deployed,
        exporter_sink=settings.exporter_sink,
    )


def _run(
    out_dir: Path,
    cdk_out: Path,
    settings: Settings,
    engine: OtelEngine | None,
    *,
    serving: bool = False,
) -> DemoResult:
    result, templates = _synthesized(settings, out_dir, cdk_out)
    # The week before, first and in its own moto context: only its report objects cross over.
    last_week, result.last_week_datapoints = last_week_report(settings, DEMO_REGION)
    if engine is not None:  # this week's series alone, as this week's moto holds them
        cluster = settings.cluster_name
        this_week = chain(
            week_samples(cluster, DEMO_WEEK),
            exporter_week_samples(cluster, DEMO_WEEK),
            capacity_week_samples(cluster, DEMO_WEEK),
            # The runs and hours of steps every seed_training below writes, the Monday's too.
            training_samples((0.0, STORAGE_END + 3600)),
        )
        engine.load("this-week", this_week, alone=True)
        if serving:
            # The inference replicas' week (cli/demo/serving.py): their vLLM series and their
            # GPUs', for the GPU-hour attribution, the serving analysis and the report.
            engine.load("serving-week", serving_week_samples(cluster, DEMO_WEEK, gpus=True))
    with mock_aws():
        session = _session()
        _configure(session, templates, settings, result)
        out_dir.mkdir(parents=True, exist_ok=True)
        clients = {
            name: session.client(name)
            for name in ("ec2", "s3", "cloudwatch", "events", "logs", "sns")
        }
        # moto's GetMetricData scans every stored datapoint for every period of every query:
        # the week's daily runs come before the exporter's minute-by-minute data is stored;
        # the run that attributes the Sunday of its replay comes after it.
        _storage_step(result, clients, settings, out_dir)
        _training_step(result, clients, settings, out_dir)
        # Training jobs that hang, go NaN, jump and slow down, in the replayed hours: the
        # backtest below evaluates the job alarms over them with the GPU alarms.
        if not _otlp(settings):
            seed_alarm_jobs(clients, settings.cluster_name, replay_window()[0])
        specs = _exporter_step(result, clients, settings, out_dir)
        if engine is not None and result.exporter is not None and result.exporter.emf_path:
            # What the add-on sent of the replayed node in OTel mode, beside the weeks'; with
            # the OTLP sink, what its exporter and the alarm jobs' emitters sent too.
            kept = result.exporter.otlp
            engine.load(
                "replay",
                chain(
                    replay_samples(settings.cluster_name, result.exporter.emf_path),
                    # Kube State Metrics' capacity of the replayed node while it reports.
                    replay_capacity_samples(settings.cluster_name),
                    otlp_samples(kept.requests) if kept is not None else (),
                    *(
                        (
                            emitter_samples(settings.cluster_name, replay_window()[0]),
                            failure_samples(settings.cluster_name),
                        )
                        if _otlp(settings)
                        else ()
                    ),
                    # Kube State Metrics' morning before the replay: a GPU pod pending, a
                    # GPU node not Ready then cordoned (the cluster dashboard draws them).
                    morning_samples(settings.cluster_name),
                ),
            )
        # The teams' jobs train on through the week's last hour, into the Sunday that the
        # analyzer's Monday-morning run (the default schedule's 07:00) attributes, now with the
        # exporter's node in it: its GPU held at 12% of its power limit, its lost GPU.
        _monday(clients, settings, engine, result)
        if result.exporter is not None:
            result.notifications = run_notifications(
                session,
                settings,
                result.exporter,
                result.backtest,
                out_dir,
                job_events(settings, result.backtest, session.region_name),
            )
            if result.notifications.path is not None:
                result.files.append(result.notifications.path)
        carry_report(clients["s3"], last_week)
        result.last_week_objects = sorted(last_week)
        result.last_week_points_seen = _points_between(
            clients["cloudwatch"], settings.cluster_name, LAST_WEEK.start, DEMO_WEEK.start
        )
        if _otlp(settings):
            result.promql_alarms = promql_alarms(settings.alarm_settings())
            assert engine is not None
            result.week_datapoints = engine.loaded["this-week"]
            result.last_week_datapoints = engine.loaded["last-week"]
            _otel_backtest(result, promql_for(clients["cloudwatch"]), settings, out_dir)
        result.report, report_path = run_weekly_report(
            clients, settings, result.backtest, out_dir, result.promql_raised
        )
        # The serving CSV is there only for a week that served (the OTel run's serving week).
        written = (
            "report.json", "report.csv", MEMORY_CSV, FAILURES_CSV, FUNNEL_CSV, GOODPUT_CSV,
            SERVING_CSV,
        )  # fmt: skip
        result.files += [report_path, *(out_dir / n for n in written if (out_dir / n).exists())]
        if render_png(report_path, out_dir / "report.png"):
            result.files.append(out_dir / "report.png")
        alarm_names = [spec.alarm_name(settings.cluster_name) for spec in specs]
        mode = settings.container_insights_mode
        # The storage dashboard as the analyzer left it: the cluster's volumes in its widgets.
        deployed = storage_dashboard(clients["cloudwatch"], settings.cluster_name)
        result.dashboards = write_dashboards(
            settings.cluster_name,
            list(STORAGE_BUCKETS),
            alarm_names,
            out_dir,
            alarm_lines(specs),
            mode=mode,
            deployed=deployed,
            exporter_sink=settings.exporter_sink,
        )
        result.files += result.dashboards
        _dashboard_step(result, clients, settings, specs, deployed, engine)

    _write_deployment(result)
    return result
