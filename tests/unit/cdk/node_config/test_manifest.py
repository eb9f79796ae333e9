import json
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from cdk.node_config.gpu_instance_types import node_instance_types
from cdk.node_config.manifest import ManifestError, exporter_manifests
from cli.main import main
from gpu_insights_agent.contract.metrics import ExporterSink
from gpu_insights_agent.exporter.cli import parser as exporter_parser
from tests.unit.reference_data import observability_chart_values


def _daemon_set(**kwargs: object) -> dict:  # type: ignore[type-arg]
    objects = exporter_manifests(image="123.dkr.ecr/x:1", cluster_name="train", **kwargs)  # type: ignore[arg-type]
    assert [o["kind"] for o in objects] == ["Namespace", "ServiceAccount", "DaemonSet"]
    return objects[2]


def test_exporter_takes_no_gpu_from_jobs_and_sees_them_through_the_runtime() -> None:
    pod = _daemon_set()["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    for section in ("requests", "limits"):
        assert "nvidia.com/gpu" not in container["resources"][section]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert env["NVIDIA_DRIVER_CAPABILITIES"] == "utility"
    assert container["resources"]["limits"] == {"cpu": "200m", "memory": "128Mi"}


def test_exporter_runs_with_no_privilege_it_does_not_need() -> None:
    pod = _daemon_set()["spec"]["template"]["spec"]
    security = pod["containers"][0]["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["runAsNonRoot"] is True
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert "privileged" not in security
    assert pod["automountServiceAccountToken"] is False
    assert "hostPID" not in pod
    assert "hostNetwork" not in pod
    assert "volumes" not in pod


def test_pod_attribution_shares_the_host_pid_namespace_and_nothing_else() -> None:
    """The host's PIDs (whose cgroups name the pod UIDs) and, read-only, the kubelet's pod log
    directories (whose names give each UID's namespace and name); nothing else of the host."""
    pod = _daemon_set(pod_attribution=True)["spec"]["template"]["spec"]
    assert pod["hostPID"] is True
    (container,) = pod["containers"]
    assert container["args"][-4:] == [
        "--proc-root", "/proc", "--pod-log-root", "/host/var/log/pods",
    ]  # fmt: skip
    assert pod["volumes"] == [
        {"name": "pod-logs", "hostPath": {"path": "/var/log/pods", "type": "Directory"}}
    ]
    assert container["volumeMounts"] == [
        {"name": "pod-logs", "mountPath": "/host/var/log/pods", "readOnly": True}
    ]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert "--container-log-root" not in container["args"]  # EMF has no container field


def test_over_otlp_pod_attribution_also_reads_the_container_log_names_read_only() -> None:
    """Over OTLP (the only sink with ``k8s.container.name``) the exporter names the container on
    a GPU from the kubelet's /var/log/containers link names, so that directory is mounted too,
    read-only, and passed as ``--container-log-root``; nothing else of the host is added."""
    daemon_set = _daemon_set(pod_attribution=True, sink=ExporterSink.OTLP)
    pod = daemon_set["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["volumes"] == [
        {"name": "pod-logs", "hostPath": {"path": "/var/log/pods", "type": "Directory"}},
        {
            "name": "container-logs",
            "hostPath": {"path": "/var/log/containers", "type": "Directory"},
        },
    ]
    assert container["volumeMounts"] == [
        {"name": "pod-logs", "mountPath": "/host/var/log/pods", "readOnly": True},
        {"name": "container-logs", "mountPath": "/host/var/log/containers", "readOnly": True},
    ]
    parsed = exporter_parser().parse_args(
        [a.replace("$(NODE_NAME)", "ip-10-0-1-5") for a in container["args"]]
    )
    assert (parsed.sink, str(parsed.pod_log_root), str(parsed.container_log_root)) == (
        "otlp",
        "/host/var/log/pods",
        "/host/var/log/containers",
    )
    kubernetes_validate.validate(daemon_set, KUBERNETES_VERSION, strict=True)
    # Without pod attribution OTLP mounts nothing of the host, and shares no PID namespace.
    bare = _daemon_set(sink=ExporterSink.OTLP)["spec"]["template"]["spec"]
    assert not {"volumes", "hostPID"} & set(bare)
    assert "volumeMounts" not in bare["containers"][0]
    assert "--container-log-root" not in bare["containers"][0]["args"]


def test_gpu_nodes_are_selected_by_label_or_instance_type_and_gpu_taints_tolerated() -> None:
    pod = _daemon_set(
        gpu_taint_keys=("nvidia.com/gpu", "example.com/h200"), tolerate_all_taints=False
    )["spec"]["template"]["spec"]
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    # One term per GPU mark (terms are ORed); every term also needs an amd64 node outside EKS
    # Auto Mode: the image is built for linux/amd64 only, and Auto Mode nodes give unprivileged
    # containers no GPU.
    assert [t["matchExpressions"][0]["key"] for t in terms] == [
        "nvidia.com/gpu.present",
        "nvidia.com/gpu.count",
        "feature.node.kubernetes.io/pci-10de.present",
        "feature.node.kubernetes.io/pci-0302_10de.present",
        "feature.node.kubernetes.io/pci-0300_10de.present",
        "karpenter.k8s.aws/instance-gpu-manufacturer",
        "node.kubernetes.io/instance-type",
    ]
    assert terms[0] == {
        "matchExpressions": [
            {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]},
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
            {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["auto"]},
        ]
    }
    assert terms[1]["matchExpressions"][0] == {
        "key": "nvidia.com/gpu.count",
        "operator": "Gt",
        "values": ["0"],
    }
    assert terms[-1]["matchExpressions"][0]["values"] == node_instance_types()
    assert "p5.48xlarge" in node_instance_types()
    assert all(t["matchExpressions"][1:] == terms[0]["matchExpressions"][1:] for t in terms)
    assert "eks.amazonaws.com/instance-gpu-manufacturer" not in str(terms)
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists"},
        {"key": "example.com/h200", "operator": "Exists"},
    ]


def test_with_tolerate_all_taints_the_exporter_tolerates_every_taint_as_the_addons_agents() -> None:
    """tolerate_all_taints=true (the default): a GPU node with a taint of any key runs the
    exporter beside the add-on's agents, whose chart tolerates every taint (the values' root
    ``tolerations: [{operator: Exists}]``, reference_data.observability_chart_values)."""
    chart = observability_chart_values()
    pod = _daemon_set(gpu_taint_keys=("nvidia.com/gpu",))["spec"]["template"]["spec"]
    assert pod["tolerations"] == chart["tolerations"] == [{"operator": "Exists"}]


def test_manifest_command_follows_tolerate_all_taints(capsys: pytest.CaptureFixture[str]) -> None:
    def printed(*args: str) -> object:
        (*_, daemon_set) = _printed_objects(capsys, "-c", "gpu_taint_keys=example.com/h200", *args)
        return daemon_set["spec"]["template"]["spec"]["tolerations"]

    assert printed() == [{"operator": "Exists"}]
    assert printed("-c", "tolerate_all_taints=false") == [
        {"key": "example.com/h200", "operator": "Exists"}
    ]


def test_args_carry_cluster_node_and_interval() -> None:
    container = _daemon_set(interval_s=30)["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][:6] == [
        "--cluster-name", "train", "--node-name", "$(NODE_NAME)", "--interval", "30",
    ]  # fmt: skip
    assert "--proc-root" not in container["args"]


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [({"gpu_node_labels": ["nvidia"]}, "not key=value"),
     ({"interval_s": 0}, "must be 1 to 3600 s")],
)  # fmt: skip
def test_bad_manifest_settings_are_named(kwargs: dict, problem: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ManifestError, match=problem):
        exporter_manifests(image="x", cluster_name="train", **kwargs)


#: The Kubernetes version the project's kubectl layer targets (KubectlV33Layer in
#: cdk/constructs/gpu_exporter.py); kubernetes-validate bundles its schemas, so this runs offline.
KUBERNETES_VERSION = "1.33.0"


def _printed_objects(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    assert main(["manifest", "--image", "123.dkr.ecr/x:1", "--cluster-name", "train", *args]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["apiVersion"], printed["kind"]) == ("v1", "List")
    items: list[dict[str, Any]] = printed["items"]
    return items


@pytest.mark.parametrize(
    "args",
    [
        (),
        (
            *("-c", "exporter_pod_attribution=true", "-c", "exporter_interval_seconds=30"),
            *("-c", "gpu_taint_keys=example.com/h200"),
        ),
    ],
)
def test_printed_objects_pass_kubernetes_strict_schemas(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    """What `gpu-insights manifest` prints, held to Kubernetes' own OpenAPI schemas with
    kubernetes-validate --strict (no unknown field, every type right)."""
    objects = _printed_objects(capsys, *args)
    assert [o["kind"] for o in objects] == ["Namespace", "ServiceAccount", "DaemonSet"]
    for obj in objects:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_strict_schemas_refuse_a_misspelt_field() -> None:
    daemon_set = _daemon_set()
    daemon_set["spec"]["template"]["spec"]["hostPid"] = True
    with pytest.raises(kubernetes_validate.ValidationError, match="hostPid"):
        kubernetes_validate.validate(daemon_set, KUBERNETES_VERSION, strict=True)


def test_strict_schemas_refuse_a_wrong_type() -> None:
    daemon_set = _daemon_set()
    daemon_set["spec"]["template"]["spec"]["containers"][0]["securityContext"]["runAsUser"] = "1"
    with pytest.raises(kubernetes_validate.ValidationError, match="integer"):
        kubernetes_validate.validate(daemon_set, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize(
    ("sink", "sent_to"),
    [
        (ExporterSink.EMF, ("emf", "tcp://cloudwatch-agent.amazon-cloudwatch:25888")),
        (ExporterSink.OTLP, ("otlp", "http://cloudwatch-agent.amazon-cloudwatch:4318/v1/metrics")),
    ],
)
def test_the_exporter_sink_setting_is_what_the_exporters_own_parser_reads(
    sink: ExporterSink, sent_to: tuple[str, str]
) -> None:
    """The DaemonSet's args, as the exporter parses them (the downward API fills NODE_NAME)."""
    container = _daemon_set(sink=sink)["spec"]["template"]["spec"]["containers"][0]
    args = [a.replace("$(NODE_NAME)", "ip-10-0-1-5") for a in container["args"]]
    parsed = exporter_parser().parse_args(args)
    endpoint = parsed.otlp_endpoint if parsed.sink == "otlp" else parsed.emf_endpoint
    assert (parsed.sink, endpoint) == sent_to


def test_over_otlp_the_add_ons_k8sattributes_leaves_the_exporters_own_pod_out() -> None:
    """The agent's k8sattributes processor finds a sender's pod by the connection's IP and fills
    what the sender left unset (open-telemetry/opentelemetry-collector-contrib
    processor/k8sattributesprocessor): the exporter's pod opts out, so a GPU no pod holds is not
    labelled with the exporter's pod; and the XID events' listener stays the EMF one."""
    template = _daemon_set(sink=ExporterSink.OTLP)["spec"]["template"]
    assert template["metadata"]["annotations"] == {"opentelemetry.io/k8s-processor/ignore": "true"}
    kubernetes_validate.validate(
        _daemon_set(sink=ExporterSink.OTLP), KUBERNETES_VERSION, strict=True
    )
    assert "annotations" not in _daemon_set(sink=ExporterSink.EMF)["spec"]["template"]["metadata"]
    container = template["spec"]["containers"][0]
    parsed = exporter_parser().parse_args(
        [a.replace("$(NODE_NAME)", "ip-10-0-1-5") for a in container["args"]]
    )
    assert parsed.emf_endpoint == "tcp://cloudwatch-agent.amazon-cloudwatch:25888"


@pytest.mark.parametrize(
    ("sink", "shards"),
    [("emf", 25), ("otlp", 1)],
)
def test_the_exporter_shards_its_series_only_where_an_alarm_is_sharded(
    capsys: pytest.CaptureFixture[str], sink: str, shards: int
) -> None:
    """At 10,000 GPUs the EMF sink's Metrics Insights alarms are 25 shards, and the exporter
    puts each GPU in one; over OTLP every GPU and node kind is one PromQL alarm, so the exporter
    gets one shard, and a fleet_gpus changed there rolls no DaemonSet."""
    context = ("-c", "container_insights_mode=otel", "-c", "fleet_gpus=10000")
    items = _printed_objects(capsys, *context, "-c", f"exporter_sink={sink}")
    (container,) = items[2]["spec"]["template"]["spec"]["containers"]
    args = [a.replace("$(NODE_NAME)", "ip-10-0-1-5") for a in container["args"]]
    assert exporter_parser().parse_args(args).alarm_shards == shards
