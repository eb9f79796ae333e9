"""Read-only AWS reads for ``gpu-insights status``: each takes injected clients and returns the
plain data ``cli.status.checks`` judges. A denied read becomes an ``unreadable`` fact (its
check fails and says why).

The stacks' outputs (cdk/outputs.py) name the topics and the report bucket, whether the app
made them or the settings named existing ones. The GPU nodes and the GPUs the exporter reported
are read as the silence check reads them (lambdas/silence_check/aws.py), and judged by its
rule: one definition of "a GPU node that should report"; the GPU instances of the cluster it
does not cover are read by cli/silence_coverage.py.
"""

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date
from functools import partial
from typing import Any, Final, TypeVar

from botocore.exceptions import ClientError

from cdk.alarms.catalog import deployed_alarms
from cdk.outputs import (
    ANALYZERS,
    NOTIFIER_FAILING_ALARM_KEY,
    NOTIFIER_REFUSED_ALARM_KEY,
    PARTS,
    REPORT_BUCKET_NAME,
    TOPIC_OUTPUTS,
)
from cdk.settings import Settings
from cli.preflight.aws import read_addons, read_node_repair
from cli.preflight.checks import OBSERVABILITY_ADDON, Addon, NodeRepair
from cli.serving_paths import running_paths
from cli.silence_coverage import read_ci_gpu_nodes, read_uncovered
from cli.status.checks import ANALYZERS_RUN, WINDOW_S, Facts, Stack, Subscriptions
from cli.status.serving import ALARM_SIGNALS, Missing, Seen, missing_series
from gpu_insights_agent.contract.metrics import (
    CI_NODE_GPU_POWER_METRIC,
    DIM_CLUSTER,
    NAMESPACE_CONTAINER_INSIGHTS,
    ExporterSink,
)
from gpu_insights_agent.contract.resource_names import alarm_name, stack_name
from gpu_insights_agent.contract.serving import (
    SERVERS,
    SERVING_METRICS,
    Server,
    ServingMetric,
    Signal,
    ray_name,
)
from lambdas.shared.container_insights_mode import ContainerInsightsMode
from lambdas.shared.dcgm import CLOUDWATCH, DCGM_UTIL
from lambdas.shared.exporter_promql import ExporterQueries
from lambdas.shared.metric_fetcher import MetricQuery, fetch
from lambdas.shared.promql import PromQLClient, PromQLError, quote_label, quote_string
from lambdas.shared.serving_queries import by_labels
from lambdas.silence_check.aws import SilenceReadError, gpu_nodes, reported_gpus
from lambdas.silence_check.config import DEFAULT_ARCHITECTURES, DEFAULT_GRACE_S
from lambdas.silence_check.coverage import Uncovered
from lambdas.silence_check.silence import REPORTING_METRIC, GpuNode, find_silent

T = TypeVar("T")
#: DescribeAlarms takes at most 100 names a call.
ALARM_NAMES_PER_CALL: Final = 100
#: What ListSubscriptionsByTopic gives as the ARN of a subscription not yet confirmed
#: (https://docs.aws.amazon.com/sns/latest/api/API_Subscription.html).
PENDING: Final = "PendingConfirmation"


#: The weekly reports' keys (lambdas/weekly_report/handler.py ``report_prefix``) up to the week.
REPORTS: Final = "reports/cluster={cluster}/week="
REPORT_JSON: Final = "/report.json"


class StatusReadError(Exception):
    """CloudWatch answered, but not with the series asked for: the check cannot say."""


@dataclass(frozen=True)
class Clients:
    """``eks_addons`` serves the EKS add-on API and ``cloudformation`` DescribeStacks; tests
    give them botocore Stubbers."""

    eks_addons: Any
    cloudformation: Any
    cloudwatch: Any
    ec2: Any
    sns: Any
    s3: Any
    #: CloudWatch's PromQL query API (``lambdas.shared.promql.promql_for``): OTel mode's series.
    promql: PromQLClient | None = None
    #: EKS's cluster, node group and add-on reads for node auto repair (``read_node_repair``);
    #: None: not read, no line.
    eks: Any = None


def _read(unreadable: dict[str, str], fact: str, read: Callable[[], T], empty: T) -> T:
    try:
        return read()
    except ClientError as err:
        error = err.response.get("Error", {})
        unreadable[fact] = f"{error.get('Code', 'error')}: {error.get('Message', err)}"
    except (StatusReadError, SilenceReadError, PromQLError) as err:
        unreadable[fact] = str(err)
    return empty


def _promql(clients: Clients) -> PromQLClient:
    if clients.promql is None:
        raise StatusReadError("no PromQL client for OTel mode's series")
    return clients.promql


def read_stack(cloudformation: Any, name: str) -> Stack:
    try:
        (stack,) = cloudformation.describe_stacks(StackName=name)["Stacks"]
    except ClientError as err:
        # "Stack with id NAME does not exist" is a ValidationError
        # (https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeStacks.html).
        if err.response.get("Error", {}).get("Code") == "ValidationError":
            return Stack(name, "")
        raise
    return Stack(
        name,
        stack["StackStatus"],
        stack["CreationTime"].timestamp(),
        {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])},
    )


def expected_alarms(settings: Settings) -> list[str]:
    """Every metric alarm the deployment makes: the catalog's and the notifier's own."""
    specs = deployed_alarms(settings.alarm_settings())
    names = [spec.alarm_name(settings.cluster_name) for spec in specs]
    own = (NOTIFIER_FAILING_ALARM_KEY, NOTIFIER_REFUSED_ALARM_KEY)
    return [*names, *(alarm_name(settings.cluster_name, key) for key in own)]


def read_alarm_states(cloudwatch: Any, names: list[str]) -> dict[str, str | None]:
    states: dict[str, str | None] = dict.fromkeys(names)
    for i in range(0, len(names), ALARM_NAMES_PER_CALL):
        pages = cloudwatch.get_paginator("describe_alarms").paginate(
            AlarmNames=names[i : i + ALARM_NAMES_PER_CALL], AlarmTypes=["MetricAlarm"]
        )
        for page in pages:
            for alarm in page["MetricAlarms"]:
                states[alarm["AlarmName"]] = alarm["StateValue"]
    return states


def read_subscriptions(sns: Any, topic_arn: str) -> Subscriptions | None:
    confirmed: list[str] = []
    pending: list[str] = []
    try:
        for page in sns.get_paginator("list_subscriptions_by_topic").paginate(TopicArn=topic_arn):
            for sub in page["Subscriptions"]:
                who = f"{sub['Protocol']}:{sub['Endpoint']}"
                (pending if sub["SubscriptionArn"] == PENDING else confirmed).append(who)
    except ClientError as err:
        if err.response.get("Error", {}).get("Code") == "NotFound":
            return None
        raise
    return Subscriptions(tuple(confirmed), tuple(pending))


def read_ci_gpu_samples(cloudwatch: Any, cluster: str, *, now: float) -> int:
    """Samples of the cluster's ``node_gpu_power_draw`` (its ClusterName-only series, which
    the agent emits beside the per-node and per-GPU ones) in the window."""
    query = MetricQuery(
        ("ci",),
        NAMESPACE_CONTAINER_INSIGHTS,
        CI_NODE_GPU_POWER_METRIC,
        ((DIM_CLUSTER, cluster),),
        "SampleCount",
        WINDOW_S,
    )
    total = 0
    for batch in fetch(cloudwatch, [query], start=now - WINDOW_S, end=now):
        for series in batch:
            if series.error:
                raise StatusReadError(f"GetMetricData {CI_NODE_GPU_POWER_METRIC}: {series.error}")
            total += int(sum(series.values))
    return total


def read_reporting_gpus(
    promql: PromQLClient, cluster: str, metric: str, nodes: Iterable[GpuNode], *, now: float
) -> dict[str, set[str]]:
    """NodeName -> the GPU indices that sent ``metric`` in the window, read with PromQL, as
    ``find_silent`` takes them: DCGM's series (OTel mode) or the exporter's own (its OTLP sink),
    which carry the same labels (lambdas/shared/exporter_promql.py). One query for every node's
    count of GPUs, and one for the indices of each GPU node that sent fewer than EC2 says it
    has. A node that sent all ``n`` of its GPUs sent indices 0 to n-1 (the ``gpu`` label is the
    device's index, as dcgm-exporter's)."""
    queries = ExporterQueries(cluster)
    node_label = queries.labels.node
    counts = {
        s.labels[node_label]: int(s.points[-1][1])
        for s in promql.query(queries.gpus_by_node(metric, WINDOW_S), now)
        if s.labels.get(node_label) and s.points
    }
    expected = {name: node.gpus for node in nodes for name in node.names()}
    reported: dict[str, set[str]] = {}
    for name, count in counts.items():
        if count >= expected.get(name, count):
            reported[name] = {str(i) for i in range(count)}
        else:
            found = promql.query(queries.node_gpus(metric, name, WINDOW_S), now)
            gpu = queries.labels.gpu
            reported[name] = {s.labels[gpu] for s in found if gpu in s.labels}
    return reported


def read_serving_seen(
    promql: PromQLClient, cluster: str, signals: Iterable[Signal], *, now: float
) -> Seen:
    """Per server and signal (its requests and ``signals``), the models its rows name now (the
    query API's lookback): one query for every row, grouped by each name (vLLM's under Ray
    Serve LLM's spelling too, contract/serving.py ``ray_name``) and the servers' model labels,
    each series then told to its rows by its name."""
    wanted = {Signal.REQUESTS, *signals}
    rows: dict[str, list[ServingMetric]] = {}
    for m in SERVING_METRICS:
        if m.signal in wanted:
            spellings = [*m.names, *(ray_name(n) for n in m.names)]
            for name in spellings if SERVERS[m.server].also_under_ray else m.names:
                rows.setdefault(name, []).append(m)
    labels = by_labels(("__name__", *dict.fromkeys(r.model_label for r in SERVERS.values())))
    names = "|".join(re.escape(n) for n in rows)
    query = (
        f"group by ({labels}) ({{__name__=~{quote_string(names)}, "
        f"{quote_label(CLOUDWATCH.cluster)}={quote_string(cluster)}}})"
    )
    seen: dict[Server, dict[Signal, set[str]]] = {}
    for series in promql.query(query, now):
        for m in rows.get(series.labels.get("__name__", ""), []):
            models = seen.setdefault(m.server, {}).setdefault(m.signal, set())
            if series.labels.get(m.model_label):
                models.add(series.labels[m.model_label])
    return {s: {g: frozenset(v) for g, v in by.items()} for s, by in seen.items()}


def _serving_signals(settings: Settings) -> tuple[Signal, ...]:
    """The signals the deployment's serving alarms read per model: end-to-end latency only
    where a target is set (cdk/alarms/serving_promql.py makes no alarm without)."""
    e2e = settings.serving_e2e_p99_seconds is not None or bool(settings.serving_e2e_p99_targets)
    return tuple(s for s in ALARM_SIGNALS if s is not Signal.E2E or e2e)


def _read_serving_missing(
    settings: Settings,
    clients: Clients,
    unreadable: dict[str, str],
    *,
    now: float,
    addon: Addon | None,
) -> "tuple[Missing, ...] | None":
    """OTel mode's serving alarms: each model signal they read with no series, a model no
    server names with each server's path on the add-on the cluster runs (cli/serving_paths.py;
    the settings' where it could not be read)."""
    paths = running_paths(
        settings.container_insights_mode,
        serving_metrics=settings.serving_metrics,
        configuration_values=addon.configuration_values if addon else None,
        from_values=addon is not None,
        addon_version=addon.version if addon else None,
    )
    signals = _serving_signals(settings)
    targets = (*settings.serving_ttft_p99_targets, *settings.serving_e2e_p99_targets)
    targeted = [model for model, _ in targets]
    return _read(
        unreadable,
        "serving_series",
        lambda: tuple(
            missing_series(
                read_serving_seen(_promql(clients), settings.cluster_name, signals, now=now),
                targeted,
                signals,
                paths,
            )
        ),
        None,
    )


def read_coverage(
    clients: Clients, cluster: str, *, dcgm_nodes: Iterable[str] | None
) -> tuple[Uncovered, ...]:
    """The silence check's uncovered GPU instances, by tag and as Container Insights saw the
    cluster's nodes: in OTel mode, the nodes of the DCGM series the container-insights-gpu
    check read (``dcgm_nodes``: no query more); in Classic, its node series' instance ids."""
    if dcgm_nodes is not None:
        return read_uncovered(clients.ec2, cluster, DEFAULT_ARCHITECTURES, seen_names=dcgm_nodes)
    seen = read_ci_gpu_nodes(clients.cloudwatch, cluster)
    return read_uncovered(clients.ec2, cluster, DEFAULT_ARCHITECTURES, seen_ids=seen)


def _findings_key_parts(key: str) -> tuple[date, str] | None:
    """findings/cluster=C/date=YYYY-MM-DD/ANALYZER.jsonl -> (day, analyzer)."""
    parts = key.split("/")
    if len(parts) != 4 or not parts[2].startswith("date=") or not parts[3].endswith(".jsonl"):
        return None
    try:
        return date.fromisoformat(parts[2][5:]), parts[3][: -len(".jsonl")]
    except ValueError:
        return None


def _keys(s3: Any, bucket: str, prefix: str) -> Iterable[str]:
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            yield item["Key"]


def read_findings(
    s3: Any, bucket: str, cluster: str
) -> tuple[dict[str, tuple[date, int] | None], str | None]:
    """Each analyzer's newest findings day and count (lines of its file), and the newest
    weekly report's ISO week."""
    newest: dict[str, tuple[date, str]] = {}
    for key in _keys(s3, bucket, f"findings/cluster={cluster}/date="):
        parsed = _findings_key_parts(key)
        if parsed and parsed[1] in ANALYZERS_RUN:
            day, analyzer = parsed
            if analyzer not in newest or day > newest[analyzer][0]:
                newest[analyzer] = (day, key)
    findings: dict[str, tuple[date, int] | None] = dict.fromkeys(ANALYZERS_RUN)
    for analyzer, (day, key) in newest.items():
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        findings[analyzer] = (day, sum(1 for line in body.splitlines() if line.strip()))
    weeks = [
        key.split("/")[2][len("week=") :]
        for key in _keys(s3, bucket, REPORTS.format(cluster=cluster))
        if key.endswith(REPORT_JSON)
    ]
    return findings, max(weeks, default=None)


def read_lemons(s3: Any, bucket: str, cluster: str, week: str) -> tuple[dict[str, Any], ...]:
    """The lemon nodes of the weekly report of ``week`` (its ``lemons``: lambdas/weekly_report/
    lemon_section.py), worst first; a report that is not JSON is a ``StatusReadError``."""
    key = REPORTS.format(cluster=cluster) + week + REPORT_JSON
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    try:
        document = json.loads(body)
    except ValueError as err:
        raise StatusReadError(f"s3://{bucket}/{key} is not JSON: {err}") from err
    lemons = (document.get("lemons") or {}).get("lemons") if isinstance(document, dict) else None
    return tuple(lemon for lemon in lemons or () if isinstance(lemon, dict) and lemon.get("node"))


def _report_facts(
    unreadable: dict[str, str], s3: Any, bucket: str | None, cluster: str
) -> tuple[dict[str, tuple[date, int] | None], str | None, tuple[dict[str, Any], ...] | None]:
    """The analyzers' newest findings, the newest report's week and its lemon nodes (None:
    no report read)."""
    findings: dict[str, tuple[date, int] | None] = {}
    week: str | None = None
    if not bucket:
        return findings, week, None
    findings, week = _read(
        unreadable, "report_bucket", partial(read_findings, s3, bucket, cluster), (findings, week)
    )
    if not week:
        return findings, week, None
    lemons = _read(unreadable, "lemon_nodes", partial(read_lemons, s3, bucket, cluster, week), None)
    return findings, week, lemons


def gather(settings: Settings, clients: Clients, *, now: float) -> Facts:
    cluster = settings.cluster_name
    unreadable: dict[str, str] = {}
    stacks: dict[str, Stack] = {}
    for part in PARTS:
        name = stack_name(cluster, part)
        stacks[part] = _read(
            unreadable,
            "stacks",
            partial(read_stack, clients.cloudformation, name),
            Stack(name, "unreadable"),
        )
    no_addon: dict[str, Addon | None] = {OBSERVABILITY_ADDON: None}
    addons = _read(
        unreadable,
        "addon",
        lambda: read_addons(clients.eks_addons, cluster, [OBSERVABILITY_ADDON]),
        no_addon,
    )
    otel = settings.container_insights_mode is ContainerInsightsMode.OTEL
    samples = (
        0
        if otel
        else _read(
            unreadable,
            "container_insights",
            lambda: read_ci_gpu_samples(clients.cloudwatch, cluster, now=now),
            0,
        )
    )
    nodes: tuple[GpuNode, ...] = ()
    if settings.exporter_enabled or otel:
        nodes = _read(
            unreadable,
            "gpu_nodes",
            lambda: tuple(gpu_nodes(clients.ec2, cluster, DEFAULT_ARCHITECTURES)),
            (),
        )
    dcgm = None
    #: OTel mode: the node names of the DCGM series read (evidence of the cluster's nodes).
    dcgm_nodes: set[str] = set()
    if otel and "gpu_nodes" in unreadable:
        unreadable["container_insights"] = unreadable["gpu_nodes"]
    elif otel:

        def dcgm_silence() -> Any:
            reported = read_reporting_gpus(_promql(clients), cluster, DCGM_UTIL, nodes, now=now)
            dcgm_nodes.update(reported)
            return find_silent(nodes, reported, now=now, grace_s=DEFAULT_GRACE_S)

        dcgm = _read(unreadable, "container_insights", dcgm_silence, None)
    silence = None
    # The exporter's OTLP sink (OTel mode): its series are in PromQL only, and gpu-silent is a
    # PromQL alarm, with no silence check function (AlarmSettings.silence_check).
    otlp = otel and settings.exporter_sink is ExporterSink.OTLP
    silence_check = settings.alarm_settings().silence_check
    if settings.exporter_enabled and "gpu_nodes" in unreadable:
        unreadable["exporter"] = unreadable["gpu_nodes"]
    elif settings.exporter_enabled:

        def exporter() -> Any:
            if otlp:
                # No node past its grace period: nothing to judge, so no query.
                due = any(now - node.launched >= DEFAULT_GRACE_S for node in nodes)
                reported = (
                    read_reporting_gpus(_promql(clients), cluster, REPORTING_METRIC, nodes, now=now)
                    if due
                    else {}
                )
                return find_silent(nodes, reported, now=now, grace_s=DEFAULT_GRACE_S)
            reported, listed = reported_gpus(
                clients.cloudwatch, cluster, now=now, lookback_s=WINDOW_S
            )
            return find_silent(nodes, reported, listed, now=now, grace_s=DEFAULT_GRACE_S)

        silence = _read(unreadable, "exporter", exporter, None)
    uncovered: tuple[Uncovered, ...] = ()
    if silence_check:
        uncovered = _read(
            unreadable,
            "silence_coverage",
            lambda: read_coverage(clients, cluster, dcgm_nodes=dcgm_nodes if otel else None),
            (),
        )
    serving_missing = (
        _read_serving_missing(
            settings, clients, unreadable, now=now, addon=addons[OBSERVABILITY_ADDON]
        )
        if otel and settings.serving_alarms
        else None
    )
    repair: NodeRepair | None = None
    if clients.eks is not None:
        repair = _read(
            unreadable, "node_repair", lambda: read_node_repair(clients.eks, cluster), None
        )
    no_alarms: dict[str, str | None] = {}
    alarms = _read(
        unreadable,
        "alarms",
        lambda: read_alarm_states(clients.cloudwatch, expected_alarms(settings)),
        no_alarms,
    )
    topics: dict[str, Subscriptions | None] = {}
    for purpose, (part, output) in TOPIC_OUTPUTS.items():
        arn = stacks[part].outputs.get(output)
        topics[purpose] = (
            _read(
                unreadable,
                f"topic:{purpose}",
                partial(read_subscriptions, clients.sns, arn),
                None,
            )
            if arn
            else None
        )
    bucket = stacks[ANALYZERS].outputs.get(REPORT_BUCKET_NAME)
    findings, week, lemons = _report_facts(unreadable, clients.s3, bucket, cluster)
    return Facts(
        cluster=cluster,
        now=now,
        stacks=stacks,
        exporter=settings.exporter_enabled,
        exporter_otlp=otlp,
        silence_check=silence_check,
        addon=addons[OBSERVABILITY_ADDON],
        mode=settings.container_insights_mode,
        ci_gpu_samples=samples,
        dcgm=dcgm,
        gpu_nodes=nodes,
        silence=silence,
        silence_uncovered=uncovered,
        alarms=alarms,
        topics=topics,
        findings=findings,
        report_week=week,
        lemons=lemons,
        node_repair=repair,
        serving_missing=serving_missing,
        unreadable=unreadable,
    )
