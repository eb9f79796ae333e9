import json
from typing import Any

from aws_cdk import Stack
from aws_cdk.assertions import Match, Template

from cdk.alarms.cluster import CLUSTER_ALARM_KINDS, GPU_PENDING
from cdk.alarms.nodes import NODE_ALARM_KINDS
from cdk.alarms.serving_classic import CLASSIC_SERVING_ALARM_KINDS
from cdk.alarms.serving_promql import (
    errors_query,
    kv_cache_full_query,
    latency_slo_query,
    waiting_query,
)
from gpu_insights_agent.contract.serving import Signal
from lambdas.silence_check.config import SilenceCheckConfig
from tests.infra.conftest import Synth, lint_errors
from tests.unit.cdk.alarms.test_promql_otlp import KINDS as GPU_PROMQL_KINDS

PROD = {
    "cluster_name": "train-prod",
    "account": "123456789012",
    "region": "eu-west-1",
    "alarm_emails": "oncall@example.com",
    "alarm_https_endpoints": "https://events.pagerduty.example/integration/abc",
    "warning_emails": "gpu-team@example.com",
    "xid_host_log_filter": "true",
    # The EMF sink's alarms (Metrics Insights in shards, the silence check): OTLP is OTel
    # mode's default, whose alarms the OTLP context below and DEFAULT_OTLP test.
    "exporter_sink": "emf",
}


def _alarms_stack(synth: Synth, context: dict[str, Any]) -> Stack:
    (stack,) = [s for s in synth(context) if s.stack_name.endswith("-Alarms")]
    return stack


def _template(synth: Synth, context: dict[str, Any] = PROD) -> Template:
    return Template.from_stack(_alarms_stack(synth, context))


def _topic_ids(template: Template) -> dict[str, str]:
    topics = template.find_resources("AWS::SNS::Topic")
    return {
        props["Properties"]["TopicName"].rsplit("-", 1)[1]: tid for tid, props in topics.items()
    }


FAILING = "gpu-insights-train-prod-notifier-failing"
REFUSED = "gpu-insights-train-prod-notifier-refused"


def _alarms(template: Template) -> dict[str, dict[str, Any]]:
    """The GPU alarms (all but the notifier's own failure and refused-events alarms)."""
    return {
        a["Properties"]["AlarmName"].removeprefix("gpu-insights-train-prod-"): a["Properties"]
        for a in template.find_resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"]["AlarmName"] not in (FAILING, REFUSED)
    }


def test_each_alarm_has_its_metric_threshold_periods_and_no_action(synth: Synth) -> None:
    template = _template(synth)
    alarms = _alarms(template)
    # No SNS action: the notifier (its EventBridge rule) sends the one message per GPU; an
    # action would also send CloudWatch's raw alarm JSON to every subscriber.
    for name, alarm in alarms.items():
        assert not {"AlarmActions", "OKActions", "InsufficientDataActions"} & set(alarm), name
    fatal = alarms["gpu-xid-fatal"]
    assert fatal["Namespace"] == "GpuInsights"
    assert fatal["MetricName"] == "gpu_xid_fatal_errors"
    assert fatal["Dimensions"] == [{"Name": "ClusterName", "Value": "train-prod"}]
    assert (fatal["Statistic"], fatal["Period"], fatal["Threshold"]) == ("Sum", 60, 1)
    assert (fatal["EvaluationPeriods"], fatal["DatapointsToAlarm"]) == (1, 1)
    assert fatal["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert fatal["TreatMissingData"] == "notBreaching"
    low = alarms["gpu-low-power"]
    (query,) = low["Metrics"]
    assert query["Expression"].startswith("SELECT MAX(gpu_allocated_power_utilization)")
    assert "GROUP BY ClusterName, NodeName, GpuIndex ORDER BY MAX() ASC" in query["Expression"]
    assert "LIMIT" not in query["Expression"]
    assert (query["Period"], low["Threshold"], low["EvaluationPeriods"]) == (300, 30, 12)
    assert low["ComparisonOperator"] == "LessThanThreshold"
    xid = alarms["gpu-xid"]
    assert [m["Id"] for m in xid["Metrics"]] == ["m1", "m2", "e1"]
    assert xid["Metrics"][2]["Expression"] == "m1 - FILL(m2, 0)"
    host = alarms["gpu-xid-host-log"]
    assert host["Namespace"] == "GpuInsights/HostLogs/train-prod"
    # The kind's fleet count: its query over every shard, and the count of its breaching
    # series the one series the alarm watches (90 of them: past 100 contributors in ALARM the
    # kind pages no more GPUs).
    cap = alarms["gpu-low-power-at-cap"]
    read, count = cap["Metrics"]
    assert (read["Id"], read["ReturnData"], read["Period"]) == ("q1", False, 300)
    assert read["Expression"] == query["Expression"].replace(" AND Shard = '0'", "")
    assert (count["Id"], count["ReturnData"]) == ("e1", True)
    assert count["Expression"] == "SUM(1 - CEIL(FLOOR(FILL(q1, 30) / 30) / 1000000000000000))"
    assert (cap["Threshold"], cap["ComparisonOperator"]) == (90, "GreaterThanOrEqualToThreshold")
    assert (cap["EvaluationPeriods"], cap["DatapointsToAlarm"]) == (12, 12)
    assert cap["AlarmDescription"].startswith("[warning] gpu-low-power-at-cap: 90 or more ")


def test_no_alarm_names_a_node_or_an_instance(synth: Synth) -> None:
    text = json.dumps(_template(synth).find_resources("AWS::CloudWatch::Alarm"))
    for dimension in ('"NodeName", "Value"', "InstanceId", '"GpuIndex", "Value"'):
        assert dimension not in text


def test_composite_sums_up_every_gpu_alarm(synth: Synth) -> None:
    template = _template(synth)
    (composite,) = template.find_resources("AWS::CloudWatch::CompositeAlarm").values()
    rule = composite["Properties"]["AlarmRule"]
    cluster = (GPU_PENDING, *NODE_ALARM_KINDS)  # the cluster's, each with its fleet count
    gpu = [n for n in _alarms(template) if n.startswith("gpu-") and not n.startswith(cluster)]
    for name in gpu:
        assert f'ALARM("gpu-insights-train-prod-{name}")' in rule
    assert rule.count(" OR ") == len(gpu) - 1
    assert "job-" not in rule  # the job alarms page jobs, not the GPUs' health
    assert "serving-" not in rule  # nor the serving alarms (they page models)
    # Nor the cluster's (cdk/alarms/cluster.py): its control plane and its pending pods.
    assert "control-plane-" not in rule
    assert GPU_PENDING not in rule
    assert not any(kind in rule for kind in NODE_ALARM_KINDS)  # nor the GPU nodes' pages


def test_otel_mode_deploys_the_serving_slo_alarms_as_promql_alarms(synth: Synth) -> None:
    """PROD is OTel mode (eu-west-1's default): the serving alarms are on by default, each a
    PromQL alarm on the servers' own series with its fleet count; no e2e alarm without an e2e
    target. Classic mode deploys none (its agent drops the latency histograms)."""
    alarms = _alarms(_template(synth))
    serving = {n: a for n, a in alarms.items() if n.startswith("serving-")}
    assert sorted(serving) == [
        f"{kind}{cap}"
        for kind in (
            "serving-errors",
            "serving-kv-cache-full",
            "serving-requests-waiting",
            "serving-ttft-p99",
        )
        for cap in ("", "-at-cap")
    ]
    ttft = serving["serving-ttft-p99"]["EvaluationCriteria"]["PromQLCriteria"]
    expected = latency_slo_query(Signal.TTFT, "train-prod", 2.0, ())
    assert expected is not None
    assert ttft["Query"] == expected.query
    assert ttft["Query"].startswith(
        '(histogram_quantile(0.99, sum by ("@resource.k8s.cluster.name", '
        '"@resource.k8s.namespace.name", "@resource.k8s.deployment.name", model_name) '
        '(rate({__name__=~"(ray_)?vllm[:_]time_to_first_token_seconds", '
        '"@resource.k8s.cluster.name"="train-prod"}[5m]))) > 2)'
    )
    assert (ttft["PendingPeriod"], ttft["RecoveryPeriod"]) == (300, 300)
    waiting = serving["serving-requests-waiting"]["EvaluationCriteria"]["PromQLCriteria"]
    assert waiting["Query"] == waiting_query("train-prod", 10, 5).query
    assert waiting["PendingPeriod"] == 240  # 10 waiting every sample of a minute, 5 minutes
    kv = serving["serving-kv-cache-full"]["EvaluationCriteria"]["PromQLCriteria"]
    assert kv["Query"] == kv_cache_full_query("train-prod").query
    assert '"(ray_)?vllm[:_]num_preemptions_total"' in kv["Query"]
    errors = serving["serving-errors"]["EvaluationCriteria"]["PromQLCriteria"]
    assert errors["Query"] == errors_query("train-prod", 5.0).query
    # vLLM's 5xx where its HTTP layer counts them, its engine's "error" finish reason elsewhere.
    assert '__name__="http_requests_total"' in errors["Query"]
    count = serving["serving-ttft-p99-at-cap"]["EvaluationCriteria"]["PromQLCriteria"]
    assert count["Query"] == f"count({ttft['Query']}) >= 90"
    assert serving["serving-ttft-p99"]["AlarmDescription"].startswith(
        "[critical] serving-ttft-p99: "
    )
    # Classic's are Metrics Insights alarms on the counters and gauges its agent keeps
    # (tests/unit/cdk/alarms/test_serving_classic.py), no PromQL and no latency.
    classic = _alarms(_template(synth, {**PROD, "container_insights_mode": "classic"}))
    classic_serving = {n: a for n, a in classic.items() if n.startswith("serving-")}
    assert sorted(classic_serving) == sorted(
        f"{kind}{suffix}" for kind in CLASSIC_SERVING_ALARM_KINDS for suffix in ("", "-at-cap")
    )
    assert all(
        "ContainerInsights/Prometheus" in a["Metrics"][0]["Expression"]
        for a in classic_serving.values()
    )


def test_job_alarms_one_per_kind_and_job_shard_grouped_by_job(synth: Synth) -> None:
    """Multi time series Metrics Insights alarms: GROUP BY ClusterName, JobName makes each job
    a contributor ("Create an alarm based on a Multi Time Series Metrics Insights query",
    https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/multi-time-series-alarm.html)."""
    alarms = _alarms(_template(synth, {**PROD, "job_hung_minutes": "20"}))
    jobs = {name: alarm for name, alarm in alarms.items() if name.startswith("job-")}
    assert len(jobs) == 6 * 8 + 6  # and each kind's fleet count
    assert jobs["job-hung-at-cap"]["Metrics"][1]["Expression"] == (
        "SUM(CEIL(FLOOR(q1 / 1200) / 1000000000000000))"
    )
    hung = jobs["job-hung-shard-03"]
    (query,) = hung["Metrics"]
    assert query["Expression"] == (
        'SELECT MIN(step_overdue_seconds) FROM SCHEMA("GpuInsights/Training", ClusterName, '
        "JobName, Shard) WHERE ClusterName = 'train-prod' AND Shard = '3' "
        "GROUP BY ClusterName, JobName ORDER BY MIN() DESC"
    )
    assert (query["Period"], hung["Threshold"], hung["EvaluationPeriods"]) == (60, 1200, 1)
    assert hung["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert hung["AlarmDescription"].startswith("[critical] job-hung: ")
    nan = jobs["job-loss-not-finite-shard-00"]
    assert nan["Metrics"][0]["Expression"].startswith("SELECT SUM(loss_not_finite)")
    assert nan["Threshold"] == 1
    slow = jobs["job-throughput-collapsed-shard-07"]
    assert slow["Metrics"][0]["Expression"].startswith("SELECT MAX(throughput_ratio)")
    assert (slow["Metrics"][0]["Period"], slow["EvaluationPeriods"]) == (300, 3)
    assert (slow["Threshold"], slow["ComparisonOperator"]) == (0.5, "LessThanThreshold")
    spike = jobs["job-loss-spike-shard-05"]
    assert spike["Threshold"] == 10
    assert all(len(a["AlarmDescription"]) <= 1024 for a in jobs.values())
    assert not {n for n in _alarms(_template(synth, {**PROD, "job_alarms": "false"}))
                if n.startswith("job-")}  # fmt: skip


def test_the_notifier_may_read_the_training_log_group_for_a_jobs_placement(synth: Synth) -> None:
    template = _template(synth)
    text = json.dumps(template.find_resources("AWS::IAM::Policy"))
    assert "log-group:/aws/gpu-insights/train-prod/training:*" in text


def test_refused_log_events_page_through_their_own_alarm(synth: Synth) -> None:
    """The notifier prints its refused count as EMF (lambdas/notifier/refused.py); one
    refused event in five minutes pages the critical topic, as the dead letters do."""
    template = _template(synth)
    (refused,) = [
        a["Properties"]
        for a in template.find_resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"]["AlarmName"] == REFUSED
    ]
    assert (refused["Namespace"], refused["MetricName"]) == (
        "GpuInsights",
        "notifier_refused_documents",
    )
    assert refused["Dimensions"] == [{"Name": "ClusterName", "Value": "train-prod"}]
    assert (refused["Statistic"], refused["Period"], refused["Threshold"]) == ("Sum", 300, 1)
    assert refused["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert refused["TreatMissingData"] == "notBreaching"
    assert refused["AlarmActions"] == [{"Ref": _topic_ids(template)["critical"]}]


def test_the_notifier_reads_the_kernel_log_and_is_told_the_confirmation_setting(
    synth: Synth,
) -> None:
    template = _template(synth, {**PROD, "xid_require_kernel_confirmation": "true"})
    statements = [
        st
        for policy in template.find_resources("AWS::IAM::Policy").values()
        for st in policy["Properties"]["PolicyDocument"]["Statement"]
        if st.get("Sid") == "KernelLogConfirms"
    ]
    (kernel,) = statements
    assert kernel["Action"] == "logs:FilterLogEvents"
    assert "log-group:/aws/containerinsights/train-prod/host:*" in json.dumps(kernel["Resource"])
    (function,) = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Handler": "lambdas.notifier.handler.handler"}},
    ).values()
    variables = function["Properties"]["Environment"]["Variables"]
    assert variables["HOST_LOG_GROUP"] == "/aws/containerinsights/train-prod/host"
    assert variables["REQUIRE_KERNEL_CONFIRMATION"] == "true"


def test_topics_are_encrypted_refuse_plain_http_and_subscribe_the_settings(synth: Synth) -> None:
    template = _template(synth)
    topics = _topic_ids(template)
    (key_id, key), = template.find_resources("AWS::KMS::Key").items()  # fmt: skip
    assert key["Properties"]["EnableKeyRotation"] is True
    statements = key["Properties"]["KeyPolicy"]["Statement"]
    cloudwatch = next(s for s in statements if s.get("Sid") == "CloudWatchAlarmsPublish")
    assert cloudwatch["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    for topic in template.find_resources("AWS::SNS::Topic").values():
        assert topic["Properties"]["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    policies = {
        p["Properties"]["Topics"][0]["Ref"]: p["Properties"]["PolicyDocument"]["Statement"]
        for p in template.find_resources("AWS::SNS::TopicPolicy").values()
    }
    for statements in policies.values():
        deny = statements[0]
        assert deny["Effect"] == "Deny"
        assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    # The warning topic: the notifier's role publishes (identity policy), CloudWatch never.
    assert len(policies[topics["warning"]]) == 1
    # The critical topic: CloudWatch publishes for the notifier's own two alarms only (the
    # full evaluation is in tests/infra/test_resource_policies).
    _, allow = policies[topics["critical"]]
    assert allow["Principal"] == {"Service": "cloudwatch.amazonaws.com"}
    assert allow["Action"] == "sns:Publish"
    assert allow["Condition"]["StringEquals"] == {"aws:SourceAccount": "123456789012"}
    sources = allow["Condition"]["ArnLike"]["aws:SourceArn"]
    assert [json.dumps(arn).endswith(f':alarm:{name}"]]}}') for arn, name in
            zip(sources, (FAILING, REFUSED), strict=True)] == [True, True]  # fmt: skip
    endpoints = {
        (s["Properties"]["Protocol"], s["Properties"]["Endpoint"])
        for s in template.find_resources("AWS::SNS::Subscription").values()
    }
    assert endpoints == {
        ("email", "oncall@example.com"),
        ("https", "https://events.pagerduty.example/integration/abc"),
        ("email", "gpu-team@example.com"),
    }


def test_notifier_reads_both_log_groups_and_is_least_privilege(synth: Synth) -> None:
    template = _template(synth)
    filters = template.find_resources("AWS::Logs::SubscriptionFilter")
    patterns = sorted(f["Properties"]["FilterPattern"] for f in filters.values())
    assert patterns == ['"NVRM: Xid"', '{ $.XidCode = "*" }']
    metric_filter = next(iter(template.find_resources("AWS::Logs::MetricFilter").values()))
    assert metric_filter["Properties"]["LogGroupName"] == "/aws/containerinsights/train-prod/host"
    for policy in template.find_resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = (
                statement["Action"]
                if isinstance(statement["Action"], list)
                else [statement["Action"]]
            )
            assert all("*" not in action for action in actions), actions
    (function,) = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Handler": "lambdas.notifier.handler.handler"}},
    ).values()
    assert "DeadLetterConfig" in function["Properties"]


def test_state_changes_reach_the_notifier_retried_and_dead_lettered(synth: Synth) -> None:
    """The rule takes both detail types of this app's GPU alarms (the alarm's own and each
    contributor's, https://docs.aws.amazon.com/eventbridge/latest/ref/events-ref-cloudwatch.html);
    a delivery that fails is retried, then kept in the notifier's dead-letter queue, and any
    dead letter pages the critical topic through the one alarm with an action."""
    template = _template(synth)
    (rule,) = template.find_resources(
        "AWS::Events::Rule", {"Properties": {"Description": Match.string_like_regexp("GPU alarms")}}
    ).values()
    pattern = rule["Properties"]["EventPattern"]
    assert pattern["source"] == ["aws.cloudwatch"]
    assert pattern["account"] == [PROD["account"]]  # another account's events on the bus: no
    assert pattern["detail-type"] == [
        "CloudWatch Alarm State Change",
        "CloudWatch Alarm Contributor State Change",
    ]
    prefixes = [p["prefix"] for p in pattern["detail"]["alarmName"]]
    for key in _alarms(template):
        assert any(f"gpu-insights-train-prod-{key}".startswith(p) for p in prefixes), key
    assert not any(FAILING.startswith(p) for p in prefixes)  # it pages by itself
    assert not any(REFUSED.startswith(p) for p in prefixes)
    # No prefix another one already matches (a fleet count alarm's name starts with its
    # kind's): the pattern grows with the kinds, not with their counts.
    assert not [p for p in prefixes if any(p != q and p.startswith(q) for q in prefixes)]
    (target,) = rule["Properties"]["Targets"]
    assert target["RetryPolicy"] == {"MaximumRetryAttempts": 8, "MaximumEventAgeInSeconds": 7200}
    (function,) = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Handler": "lambdas.notifier.handler.handler"}},
    ).values()
    queue = function["Properties"]["DeadLetterConfig"]["TargetArn"]
    assert target["DeadLetterConfig"] == {"Arn": queue}
    (queue_id,) = queue["Fn::GetAtt"][:1]
    failing = next(
        a["Properties"]
        for a in template.find_resources("AWS::CloudWatch::Alarm").values()
        if a["Properties"]["AlarmName"] == FAILING
    )
    assert failing["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}}
    ]
    assert failing["MetricName"] == "ApproximateNumberOfMessagesVisible"
    assert (failing["Threshold"], failing["Statistic"]) == (1, "Maximum")
    assert failing["AlarmActions"] == [{"Ref": _topic_ids(template)["critical"]}]
    retention = {
        g["Properties"].get("LogGroupName", "function"): g["Properties"]["RetentionInDays"]
        for g in template.find_resources("AWS::Logs::LogGroup").values()
    }
    assert retention == {"function": 30}  # the exporter's group: see test_agent_log_group


def test_container_insights_only_cluster_alarms_on_pod_power_in_watts(synth: Synth) -> None:
    """Classic mode (OTel mode's is a PromQL alarm: test_otel_mode_alarms_on_low_power_...)."""
    context = {
        **PROD,
        "exporter_enabled": "false",
        "gpu_instance_type": "p4d.24xlarge",
        "container_insights_mode": "classic",
    }
    alarms = _alarms(_template(synth, context))
    # The jobs' emitters' own, and the control plane's (tests/unit/cdk/alarms/test_cluster.py).
    gpu = {name for name in alarms if not name.startswith(("job-", "control-plane-", "serving-"))}
    assert gpu == {"gpu-low-power", "gpu-low-power-at-cap", "gpu-xid-host-log"}
    low = alarms["gpu-low-power"]
    assert low["Threshold"] == 120  # 30% of the A100's 400 W
    assert "pod_gpu_power_draw" in low["Metrics"][0]["Expression"]


def test_cfn_lint_passes_on_the_alarms_stack(synth: Synth) -> None:
    assert lint_errors(_alarms_stack(synth, PROD), ["eu-west-1"]) == []


def test_eight_dashboards_are_deployed_with_the_alarms_on_them(synth: Synth) -> None:
    """OTel mode (the default): the GPU, training, storage, findings and cluster dashboards,
    and the serving ones; Classic mode has no serving dashboard (its agent drops the servers'
    histograms: dashboards/serving.py)."""
    dashboards = _template(synth).find_resources("AWS::CloudWatch::Dashboard")
    names = sorted(d["Properties"]["DashboardName"] for d in dashboards.values())
    assert names == [
        f"gpu-insights-train-prod-{n}"
        for n in (
            "cluster",
            "findings",
            "gpu-fleet",
            "gpu-node",
            "serving",
            "serving-deployment",
            "storage",
            "training",
        )
    ]
    findings = next(
        d for d in dashboards.values() if d["Properties"]["DashboardName"].endswith("findings")
    )
    body = json.dumps(findings["Properties"]["DashboardBody"])
    assert body.count("Fn::GetAtt") == len(_alarms(_template(synth)))  # every alarm's ARN


def test_the_deployed_dashboards_draw_the_alarms_thresholds(synth: Synth) -> None:
    """The stack passes the catalog's thresholds to the bodies: the low-power alarm's line is
    drawn on the fleet's lowest-power widget at the alarm's threshold."""
    dashboards = _template(synth).find_resources("AWS::CloudWatch::Dashboard")
    fleet = next(
        d for d in dashboards.values() if d["Properties"]["DashboardName"].endswith("gpu-fleet")
    )
    widgets = json.loads(fleet["Properties"]["DashboardBody"])["widgets"]
    lines = {
        w["properties"]["title"]: w["properties"]["annotations"]["horizontal"]
        for w in widgets
        if "annotations" in w.get("properties", {})
    }
    assert lines["Lowest power in use (% of limit), 10 GPUs"] == [
        {"value": 30, "label": "gpu-low-power alarm: MAX < 30", "fill": "below"}
    ]


def test_the_cluster_dashboard_draws_the_control_plane_alarms_thresholds(synth: Synth) -> None:
    """The control-plane alarms' thresholds on the widgets that read their metric, statistic
    and period; the etcd size's in GiB, beside the limit it is a share of."""
    (dashboard,) = (
        _template(synth)
        .find_resources(
            "AWS::CloudWatch::Dashboard",
            {"Properties": {"DashboardName": "gpu-insights-train-prod-cluster"}},
        )
        .values()
    )
    body = json.loads(dashboard["Properties"]["DashboardBody"])
    lines = {
        w["properties"]["title"]: w["properties"]["annotations"]["horizontal"]
        for w in body["widgets"]
        if "annotations" in w.get("properties", {})
    }
    assert lines["API requests: 5XX a minute"] == [
        {"value": 10, "label": "control-plane-5xx alarm: >= 10", "fill": "above"}
    ]
    assert lines["API p99 latency, LIST (s)"] == [
        {"value": 30, "label": "control-plane-list-latency alarm: > 30", "fill": "above"}
    ]
    assert [round(a["value"], 3) for a in lines["etcd database size (GiB)"]] == [6.4, 8.0]


def _bodies(template: Template) -> dict[str, str]:
    """Each deployed dashboard's body (its alarm ARNs left as the template's references)."""
    return {
        d["Properties"]["DashboardName"].removeprefix("gpu-insights-train-prod-"): json.dumps(
            d["Properties"]["DashboardBody"]
        )
        for d in template.find_resources("AWS::CloudWatch::Dashboard").values()
    }


def test_otel_mode_deploys_dashboards_that_read_dcgm_by_promql_not_node_gpu(
    synth: Synth,
) -> None:
    """The stack passes the mode: in OTel mode the GPU widgets that read Classic's node_gpu_*
    read DCGM's series by PromQL (the fleet's hottest GPUs; the node's utilization,
    temperature and memory), and no body names node_gpu_*, which OTel mode turns off; the
    exporter's and the jobs' widgets are unchanged."""
    otel = _bodies(_template(synth, {**PROD, "container_insights_mode": "otel"}))
    classic = _bodies(_template(synth, {**PROD, "container_insights_mode": "classic"}))
    assert all("node_gpu_" not in body for body in otel.values())
    assert sum("node_gpu_" in body for body in classic.values()) == 2
    # A chart widget's PromQL query (dashboards/widgets.py), in a body inside a Fn::Join.
    marker = '\\"type\\":\\"cloudwatch-metrics\\",\\"language\\":\\"PromQL\\"'
    promql = {name: body.count(marker) for name, body in otel.items()}
    charts = {name: body.count('\\"type\\":\\"chart\\"') for name, body in otel.items()}
    # One query a chart on the GPU dashboards; the serving and cluster charts hold several.
    assert charts == {**promql, "cluster": 2, "serving": 22, "serving-deployment": 7}
    assert promql == {
        # DCGM's temperature, and the GPU-hour funnel's paid and allocated GPUs (Kube State
        # Metrics' capacity, DCGM's pod-labelled series: dashboards/funnel.py).
        "gpu-fleet": 3,
        "gpu-node": 3,
        "training": 0,
        "storage": 0,
        "findings": 0,
        # Kube State Metrics' GPU pods (pending, unschedulable) and nodes (not Ready,
        # cordoned): dashboards/cluster.py.
        "cluster": 4,
        # A query per server with the signal (contract/serving.py): 2 model counts, requests
        # 4, prompt and generation tokens 2 + 2, TTFT 3 x 3, inter-token 3 x 2, e2e 3 x 3,
        # running 3, waiting 4, KV cache 2, preemptions 1, errors 4; drift's mean prompt and
        # generation lengths 2 + 2 (vLLM and NIM) and truncated share 1 (vLLM labels finishes).
        "serving": 53,
        # Per replica: TTFT 3, inter-token 2, e2e 3, KV cache 2, waiting 4, running 3; DCGM's
        # power (the exporter sends EMF here, so no power against the limit).
        "serving-deployment": 18,
    }
    assert "serving" not in classic
    assert "DCGM_FI_DEV_GPU_TEMP" in otel["gpu-fleet"]
    assert {n: otel[n] for n in ("training", "storage")} == {
        n: classic[n] for n in ("training", "storage")
    }
    # The findings dashboard lists every alarm: OTel mode's pending GPU pods' and its count,
    # its 4 serving kinds' and its 4 GPU node kinds' and their counts too; Classic's 5 serving
    # kinds and counts.
    extra = 2 + 8 + 8 - 10
    assert otel["findings"].count("Fn::GetAtt") == classic["findings"].count("Fn::GetAtt") + extra


def test_the_silence_check_runs_every_five_minutes_with_its_one_declaration(
    synth: Synth,
) -> None:
    """The function's environment is its configuration declaration, written whole (the
    handler reads it back with the same class); its role reads instances and series and
    writes GpuInsights only; its two alarms are the catalog's, and both reach the notifier."""
    template = _template(synth, {**PROD, "exporter_interval_seconds": "300"})
    (function,) = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Handler": "lambdas.silence_check.handler.handler"}},
    ).values()
    environment = function["Properties"]["Environment"]["Variables"]
    assert SilenceCheckConfig.from_environ(environment) == SilenceCheckConfig(
        cluster_name="train-prod", lookback_s=900, grace_s=900, architectures=("x86_64",)
    )
    (schedule,) = template.find_resources(
        "AWS::Events::Rule", {"Properties": {"ScheduleExpression": "rate(5 minutes)"}}
    ).values()
    assert "SilenceCheck" in schedule["Properties"]["Targets"][0]["Arn"]["Fn::GetAtt"][0]
    role = function["Properties"]["Role"]["Fn::GetAtt"][0]
    statements = [
        s
        for p in template.find_resources("AWS::IAM::Policy").values()
        if {"Ref": role} in p["Properties"]["Roles"]
        for s in p["Properties"]["PolicyDocument"]["Statement"]
    ]
    granted = {s["Sid"]: (s["Action"], s.get("Condition")) for s in statements if "Sid" in s}
    assert granted == {
        "ReadGpuInstances": (["ec2:DescribeInstances", "ec2:DescribeInstanceTypes"], None),
        "ReadExporterSeries": (["cloudwatch:ListMetrics", "cloudwatch:GetMetricData"], None),
        "PublishSilence": (
            "cloudwatch:PutMetricData",
            {"StringEquals": {"cloudwatch:namespace": "GpuInsights"}},
        ),
    }
    alarms = _alarms(template)
    silent, heartbeat = alarms["gpu-silent"], alarms["gpu-silence-check"]
    assert silent["Metrics"][0]["Expression"].startswith("SELECT MAX(gpu_silent) FROM SCHEMA(")
    assert (heartbeat["MetricName"], heartbeat["Statistic"]) == ("gpu_silent", "SampleCount")
    assert heartbeat["Dimensions"] == [{"Name": "ClusterName", "Value": "train-prod"}]
    assert heartbeat["TreatMissingData"] == "breaching"
    assert heartbeat["AlarmDescription"].startswith("[warning] gpu-silence-check:")
    # Without the exporter there is no silence to check.
    context = {**PROD, "exporter_enabled": "false", "gpu_instance_type": "p4d.24xlarge"}
    assert not _template(synth, context).find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Handler": "lambdas.silence_check.handler.handler"}},
    )


def test_the_notifiers_stateful_resources_keep_their_logical_ids(synth: Synth) -> None:
    """The notifier's ledger and dead letters keep the IDs they were deployed with: a new
    logical ID would make CloudFormation replace the table (forgetting what was sent) and the
    queue (dropping the events nobody received)."""
    template = _template(synth)
    assert list(template.find_resources("AWS::DynamoDB::Table")) == ["XidNotifierSent8E6A4821"]
    queues = list(template.find_resources("AWS::SQS::Queue"))
    assert "XidNotifierDeadLetters76B32C15" in queues


def test_a_chat_webhook_is_read_from_its_one_parameter(synth: Synth) -> None:
    """The webhook's URL stays in its SecureString parameter: the template holds the
    parameter's name, and the role may read that parameter alone."""
    template = _template(synth, {**PROD, "webhook_url_parameter": "/gpu-insights/chat-hook"})
    (function,) = template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Handler": "lambdas.notifier.handler.handler"}},
    ).values()
    variables = function["Properties"]["Environment"]["Variables"]
    assert variables["WEBHOOK_URL_PARAMETER"] == "/gpu-insights/chat-hook"
    statements = [
        s
        for p in template.find_resources("AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Sid") == "WebhookUrl"
    ]
    assert [(s["Action"], s["Resource"]) for s in statements] == [
        (
            "ssm:GetParameter",
            {
                "Fn::Join": [
                    "",
                    [
                        "arn:",
                        {"Ref": "AWS::Partition"},
                        ":ssm:eu-west-1:123456789012:parameter/gpu-insights/chat-hook",
                    ],
                ]
            },
        )
    ]
    assert "WEBHOOK_URL_PARAMETER" not in json.dumps(_template(synth).to_json())


#: OTel Container Insights mode with the GPUs' power known (H100s, 700 W each).
OTEL = {**PROD, "container_insights_mode": "otel", "gpu_instance_type": "p5.48xlarge"}


def test_otel_mode_alarms_on_low_power_with_one_promql_alarm_for_every_gpu(synth: Synth) -> None:
    """In place of the low-power Metrics Insights alarm, on a fleet of one shard: one PromQL
    alarm on DCGM's power of pod-held GPUs, its EvaluationCriteria.PromQLCriteria and
    EvaluationInterval as PutMetricAlarm takes them, no metric, threshold or action. A larger
    fleet keeps the sharded alarm: every GPU can be idle at once, and a PromQL alarm evaluates
    at most 500 of the series its query returns (alarm-limits.html)."""
    larger = _alarms(_template(synth, {**OTEL, "fleet_gpus": "2000"}))  # 5 shards
    assert "gpu-low-power-shard-04" in larger
    assert "gpu-low-power" not in larger
    template = _template(synth, {**OTEL, "fleet_gpus": "400"})  # 1 shard
    alarms = _alarms(template)
    assert not [n for n in alarms if n.startswith("gpu-low-power-shard")]
    low = alarms["gpu-low-power"]
    criteria = low["EvaluationCriteria"]["PromQLCriteria"]
    assert criteria["Query"] == (
        'max by ("@resource.k8s.cluster.name", "@resource.k8s.node.name", gpu, '
        '"@resource.k8s.namespace.name", "@resource.k8s.pod.name") '
        '(max_over_time({__name__="DCGM_FI_DEV_POWER_USAGE", '
        '"@resource.k8s.cluster.name"="train-prod", "@resource.k8s.pod.name"!=""}[5m])) < 210'
    )  # 30% of the H100's 700 W
    # An hour under it: the first breach once a whole 5-minute range is under, then 55 min.
    assert criteria["PendingPeriod"] == 3300
    assert criteria["RecoveryPeriod"] == 300
    assert low["EvaluationInterval"] == 60
    assert not {"MetricName", "Metrics", "Threshold", "ComparisonOperator"} & set(low)
    assert not {"AlarmActions", "OKActions", "InsufficientDataActions"} & set(low)
    assert low["AlarmDescription"].startswith("[warning] gpu-low-power: ")
    # Its fleet count: the same breaching series counted, with the same pending period.
    count = alarms["gpu-low-power-at-cap"]["EvaluationCriteria"]["PromQLCriteria"]
    assert count["Query"] == f"count({criteria['Query']}) >= 90"
    assert (count["PendingPeriod"], count["RecoveryPeriod"]) == (3300, 300)
    # The exporter's per-GPU alarms stay Metrics Insights: their gauges go by EMF, not to PromQL.
    assert "gpu-lost-shard-04" in larger
    assert [n for n in alarms if n.startswith("gpu-lost")]
    assert "gpu-silent" in alarms
    (composite,) = template.find_resources("AWS::CloudWatch::CompositeAlarm").values()
    assert 'ALARM("gpu-insights-train-prod-gpu-low-power")' in composite["Properties"]["AlarmRule"]


def test_otel_mode_without_the_gpus_power_keeps_the_exporters_low_power_alarm(
    synth: Synth,
) -> None:
    """DCGM's power limit is not among the add-on's counters: without gpu_instance_type the
    limit is the exporter's, and so is the alarm."""
    alarms = _alarms(_template(synth, {**PROD, "container_insights_mode": "otel"}))
    assert "EvaluationCriteria" not in alarms["gpu-low-power"]
    assert "gpu_allocated_power_utilization" in alarms["gpu-low-power"]["Metrics"][0]["Expression"]


def test_cfn_lint_passes_on_the_otel_mode_alarms_stack(synth: Synth) -> None:
    assert lint_errors(_alarms_stack(synth, OTEL), ["eu-west-1"]) == []


OTLP = {
    **PROD,
    "container_insights_mode": "otel",
    "exporter_sink": "otlp",
    "fleet_gpus": "10000",
    "job_alarms": "false",  # the job alarms are cdk/alarms/jobs.py's
    "serving_alarms": "false",  # and the serving ones test_otel_mode_deploys_the_serving_...'s
}


def test_otel_mode_with_the_otlp_sink_makes_every_gpu_alarm_one_promql_alarm_at_10000_gpus(
    synth: Synth,
) -> None:
    """`cdk synth -c container_insights_mode=otel -c exporter_sink=otlp -c fleet_gpus=10000`:
    each GPU and node kind one PromQL alarm and its fleet count, no Metrics Insights alarm, no
    Shard, and no silence check (gpu-silent reads Kube State Metrics' GPU capacity). The kernel
    log's XID count stays a metric alarm: a log metric filter's metric, which PromQL does not
    read and which no shard divides."""
    template = _template(synth, OTLP)
    alarms = _alarms(template)
    kinds = [*GPU_PROMQL_KINDS, GPU_PENDING, *NODE_ALARM_KINDS]
    control_plane = [k for k in CLUSTER_ALARM_KINDS if k not in kinds]  # metric alarms
    assert sorted(alarms) == sorted(
        [*kinds, *(f"{k}-at-cap" for k in kinds), "gpu-xid-host-log", *control_plane]
    )
    promql = {n for n, a in alarms.items() if "EvaluationCriteria" in a}
    assert promql == set(alarms) - {"gpu-xid-host-log", *control_plane}
    assert alarms["gpu-xid-host-log"]["MetricName"] == "gpu_xid_host_log_lines"
    assert not [n for n, a in alarms.items() if "SCHEMA(" in json.dumps(a) or "Shard" in str(a)]
    template.resource_count_is("AWS::Events::Rule", 1)  # the alarms' state changes only
    assert not template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Handler": "lambdas.silence_check.handler.handler"}},
    )
    silent = alarms["gpu-silent"]["EvaluationCriteria"]["PromQLCriteria"]
    assert (
        'kube_node_status_capacity", "@resource.k8s.cluster.name"="train-prod", '
        in (silent["Query"])
    )
    assert (silent["PendingPeriod"], silent["RecoveryPeriod"]) == (300, 300)
    # The Classic and otel+emf alarms of the same fleet: sharded, with the silence check.
    emf = _alarms(_template(synth, {**OTLP, "exporter_sink": "emf"}))
    assert "gpu-lost-shard-24" in emf
    assert "gpu-silence-check" in emf


def test_the_default_synth_is_otel_mode_with_every_alarm_promql_and_no_silence_check(
    synth: Synth,
) -> None:
    """Neither mode nor sink set, in an OTel Region: OTel mode and the OTLP sink
    (settings.default_sink), so each of the 8 GPU and node kinds, the 6 job kinds, the 4
    serving kinds, the pending GPU pods and the 4 GPU node kinds (cdk/alarms/nodes.py) is one
    PromQL alarm with its fleet count (46); the kernel log's XID count and the control plane's
    10 are the metric alarms, and there is no silence check."""
    default = {k: v for k, v in PROD.items() if k != "exporter_sink"}
    template = _template(synth, default)
    alarms = _alarms(template)
    promql = {n for n, a in alarms.items() if "EvaluationCriteria" in a}
    assert len(promql) == 46
    metric = set(alarms) - promql
    assert metric - {n for n in metric if n.startswith("control-plane-")} == {"gpu-xid-host-log"}
    # The pending pods' and the GPU nodes' are PromQL.
    assert len(metric) == 1 + len(CLUSTER_ALARM_KINDS) - 1 - len(NODE_ALARM_KINDS)
    assert not [n for n in alarms if "shard" in n]
    assert not template.find_resources(
        "AWS::Lambda::Function",
        {"Properties": {"Handler": "lambdas.silence_check.handler.handler"}},
    )


def test_otel_mode_with_the_otlp_sink_has_one_promql_alarm_per_job_kind_and_no_job_shard(
    synth: Synth,
) -> None:
    """The training emitter's series go by OTLP there: each job alarm kind is one PromQL alarm
    on them, by cluster, namespace and job, and none is a Metrics Insights alarm in shards; the
    notifier may read a job's ranks with the PromQL API (GetMetricData and ListMetrics) and is
    told the job kinds are PromQL's."""
    template = _template(synth, {**OTEL, "exporter_sink": "otlp", "fleet_gpus": "10000"})
    alarms = _alarms(template)
    jobs = {n: a for n, a in alarms.items() if n.startswith("job-")}
    assert sorted(jobs) == [
        "job-goodput-low",
        "job-goodput-low-at-cap",
        "job-hung",
        "job-hung-at-cap",
        "job-loss-not-finite",
        "job-loss-not-finite-at-cap",
        "job-loss-spike",
        "job-loss-spike-at-cap",
        "job-step-time-rise",
        "job-step-time-rise-at-cap",
        "job-throughput-collapsed",
        "job-throughput-collapsed-at-cap",
    ]
    hung = jobs["job-hung"]
    criteria = hung["EvaluationCriteria"]["PromQLCriteria"]
    assert criteria == {
        "Query": 'min by ("@resource.k8s.cluster.name", "@resource.k8s.namespace.name", '
        'job_name) (last_over_time({__name__="step_overdue_seconds", '
        '"@resource.k8s.cluster.name"="train-prod"}[2m])) >= 600',
        "PendingPeriod": 0,
        "RecoveryPeriod": 300,
    }
    assert hung["EvaluationInterval"] == 60
    assert hung["AlarmDescription"].startswith("[critical] job-hung: ")
    throughput = jobs["job-throughput-collapsed"]["EvaluationCriteria"]["PromQLCriteria"]
    assert throughput["PendingPeriod"] == 600
    assert all("Metrics" not in a for a in jobs.values())
    policies = json.dumps(template.find_resources("AWS::IAM::Policy"))
    assert '"Sid": "JobPlacementPromQL"' in policies
    (function,) = [
        f["Properties"]
        for f in template.find_resources("AWS::Lambda::Function").values()
        if "PROMQL_ALARM_KINDS" in f["Properties"].get("Environment", {}).get("Variables", {})
    ]
    kinds = function["Environment"]["Variables"]["PROMQL_ALARM_KINDS"]
    assert {"job-hung", "job-throughput-collapsed"} <= set(kinds.split(","))
    # With the EMF sink the job alarms stay sharded, and the notifier reads no PromQL.
    emf = _template(synth, {**OTEL, "fleet_gpus": "10000"})
    assert "job-hung-shard-07" in _alarms(emf)
    assert "JobPlacementPromQL" not in json.dumps(emf.find_resources("AWS::IAM::Policy"))


def test_the_cluster_alarms_read_aws_eks_in_classic_and_kube_state_metrics_in_otel_mode(
    synth: Synth,
) -> None:
    """The control plane's metric alarms on AWS/EKS (dimension ClusterName) in both modes, and
    in OTel mode the pending GPU pods' PromQL alarm with the setting's pending period (the
    contexts other tests synthesize: no synth of its own)."""
    classic = _alarms(_template(synth, {**PROD, "container_insights_mode": "classic"}))
    etcd = classic["control-plane-etcd-size"]
    assert (etcd["Namespace"], etcd["MetricName"]) == ("AWS/EKS", "apiserver_storage_size_bytes")
    assert etcd["Dimensions"] == [{"Name": "ClusterName", "Value": "train-prod"}]
    assert (etcd["Statistic"], etcd["Threshold"]) == ("Maximum", 6_871_947_674)
    assert etcd["AlarmDescription"].startswith("[warning] control-plane-etcd-size: ")
    pending = classic["control-plane-unschedulable-pods"]
    assert (pending["MetricName"], pending["Statistic"]) == (
        "scheduler_pending_pods_UNSCHEDULABLE",
        "Sum",
    )
    assert (pending["Period"], pending["EvaluationPeriods"], pending["Threshold"]) == (60, 15, 0)
    assert pending["ComparisonOperator"] == "GreaterThanThreshold"
    assert GPU_PENDING not in classic  # Classic has no per-pod pending reason
    otel = _alarms(_template(synth))  # OTel mode: the default
    criteria = otel[GPU_PENDING]["EvaluationCriteria"]["PromQLCriteria"]
    assert criteria["Query"].startswith('count_values by ("@resource.k8s.cluster.name", ')
    assert '"@resource.k8s.cluster.name"="train-prod"' in criteria["Query"]
    assert (criteria["PendingPeriod"], criteria["RecoveryPeriod"]) == (900, 300)
    assert "control-plane-etcd-size" in otel
