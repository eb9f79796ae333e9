"""OTel mode with the exporter's OTLP sink: every per-GPU and node kind one PromQL alarm at any
fleet size, within AlarmPromQLCriteria's and the PromQL alarm limits (alarm-limits.html), and
Classic and otel+emf as before. Replayed on a real engine in
tests/functional/cli/backtest/test_promql_otlp_alarms.py."""

from cdk.alarms.catalog import (
    AlarmSettings,
    alarm_sizing,
    deployed_alarms,
    gpu_alarms,
    promql_alarms,
)
from cdk.alarms.model import insights_query
from cdk.alarms.promql import MAX_QUERY_CHARS, PromQLQuery, node_label_matchers
from cdk.alarms.sizing import CAP_ALARM_SERIES, MAX_CONTRIBUTORS_IN_ALARM, shards_for
from cdk.node_config.manifest import REQUIRED_NODE_EXPRESSIONS
from lambdas.shared.promql import MAX_SERIES

OTLP = AlarmSettings(cluster_name="train", promql=True, otlp=True, jobs=None)
KINDS = [
    "gpu-low-power",
    "gpu-xid-fatal",
    "gpu-xid",
    "gpu-ecc-uncorrected",
    "gpu-thermal-throttling",
    "gpu-power-brake",
    "gpu-lost",
    "gpu-silent",
]


def test_at_10000_gpus_each_kind_is_one_promql_alarm_and_no_metrics_insights_alarm_is_left() -> (
    None
):
    sized = alarm_sizing(OTLP, 10_000)
    assert (sized.shards, sized.insights_alarms, sized.promql_alarms) == (1, 0, 16)
    specs = deployed_alarms(AlarmSettings(**{**OTLP.__dict__, "shards": shards_for(10_000)}))
    assert [s.key for s in specs if isinstance(s.metric, PromQLQuery) and not s.counts] == KINDS
    assert [s.key for s in specs if not isinstance(s.metric, PromQLQuery)] == ["gpu-xid-host-log"]
    assert not [s for s in specs if insights_query(s.metric) or s.shard is not None]
    # No silence check, no heartbeat: gpu-silent reads Kube State Metrics' capacity.
    assert "gpu-silence-check" not in {s.key for s in specs}


def test_which_limit_binds_at_10000_gpus_is_the_contributor_cap_not_the_fleet() -> None:
    """A query returns only the breaching GPUs (or nodes): at 10,000 GPUs in 1,250 eight-GPU
    nodes the 500-series PARTIAL_DATA limit is 5% of the GPUs (40% of the nodes) breaching at
    once, and the first limit reached is the 100 contributors in ALARM, which the fleet count
    alarm pages 10 before. Each query is far within AlarmPromQLCriteria's 10,000 characters."""
    fleet, nodes = 10_000, 10_000 // 8
    assert MAX_SERIES / fleet == 0.05
    assert MAX_SERIES / nodes == 0.4
    assert CAP_ALARM_SERIES < MAX_CONTRIBUTORS_IN_ALARM < MAX_SERIES
    specs = promql_alarms(AlarmSettings(**{**OTLP.__dict__, "shards": shards_for(fleet)}))
    lengths = {s.key: len(s.metric.query) for s in specs if isinstance(s.metric, PromQLQuery)}
    assert max(lengths.values()) < 1300 < MAX_QUERY_CHARS
    caps = [s for s in specs if s.counts]
    assert [s.counts for s in caps] == KINDS
    for cap in caps:
        assert isinstance(cap.metric, PromQLQuery)
        assert cap.metric.query.endswith(f") >= {CAP_ALARM_SERIES}")


def test_each_kind_keeps_only_the_labels_a_page_needs_and_its_window() -> None:
    by_key = {s.key: s.metric for s in promql_alarms(OTLP) if isinstance(s.metric, PromQLQuery)}
    gpu = 'max by ("@resource.k8s.cluster.name", "@resource.k8s.node.name", gpu, '
    assert by_key["gpu-low-power"].query == (
        gpu + '"@resource.k8s.namespace.name", "@resource.k8s.pod.name") '
        '(max_over_time({__name__="gpu_allocated_power_utilization", '
        '"@resource.k8s.cluster.name"="train"}[5m])) < 30'
    )  # each GPU against its own enforced limit: no instance type needed
    assert by_key["gpu-low-power"].pending_period_s == 3300
    assert by_key["gpu-lost"].query.endswith("[2m])) == 0")
    assert by_key["gpu-thermal-throttling"].pending_period_s == 1800
    assert by_key["gpu-ecc-uncorrected"].pending_period_s == 0
    assert "xid_code" in by_key["gpu-xid"].query
    assert "xid_code" in by_key["gpu-xid-fatal"].query
    assert by_key["gpu-silent"].query.startswith(
        '(max by ("@resource.k8s.cluster.name", "@resource.k8s.node.name") '
        '(last_over_time({__name__="kube_node_status_capacity", '
        '"@resource.k8s.cluster.name"="train", resource="nvidia_com_gpu", '
    )


def test_the_silent_alarm_reads_only_the_nodes_the_exporter_runs_on() -> None:
    """An arm64 or EKS Auto Mode node has no exporter by design; a node whose series lacks the
    label is read (a silent node is never taken for one the exporter does not run on)."""
    assert node_label_matchers(REQUIRED_NODE_EXPRESSIONS) == (
        '"@resource.k8s.node.label.kubernetes.io/arch"=~"amd64|"',
        '"@resource.k8s.node.label.eks.amazonaws.com/compute-type"!~"auto"',
    )


def test_classic_and_otel_with_the_emf_sink_keep_their_metrics_insights_alarms() -> None:
    for settings in (
        AlarmSettings(cluster_name="train", jobs=None, otlp=True),  # Classic: no PromQL
        AlarmSettings(cluster_name="train", jobs=None, promql=True),  # otel+emf
        AlarmSettings(cluster_name="train", jobs=None, promql=True, otlp=True, exporter=False,
                      gpu_instance_type="p5.48xlarge"),
    ):  # fmt: skip
        keys = {s.key for s in deployed_alarms(settings)}
        assert not settings.promql_gpu
        if settings.exporter:
            assert {"gpu-silent", "gpu-silence-check", "gpu-lost", "gpu-xid-fatal"} <= keys
            assert insights_query(
                next(s for s in gpu_alarms(settings) if s.key == "gpu-lost").metric
            )
