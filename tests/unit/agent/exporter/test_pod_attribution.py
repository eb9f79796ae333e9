"""A GPU process's pod and container, from its cgroup and the kubelet's log names, on tmp_path
trees shaped as a node's /proc, /var/log/pods and /var/log/containers."""

from pathlib import Path

import pytest

from gpu_insights_agent.exporter.pod_attribution import (
    container_id_from_cgroup,
    container_name,
    pod_containers,
)

UID = "1f2e3d4c-5b6a-4789-8abc-def012345678"
SYSTEMD_UID = UID.replace("-", "_")
TRAINER = "3f4c0e5a9b1d2c7e8f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6"
SIDECAR = "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"


@pytest.mark.parametrize(
    "cgroup",
    [
        # cgroup v1, cgroupfs driver: the container's cgroup is <pod cgroup>/<id>.
        f"12:memory:/kubepods/burstable/pod{UID}/{TRAINER}\n11:cpu,cpuacct:/kubepods/burstable/pod{UID}/{TRAINER}\n",
        # cgroup v2, systemd driver, containerd: <pod slice>/cri-containerd-<id>.scope.
        f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{SYSTEMD_UID}.slice/cri-containerd-{TRAINER}.scope\n",
        # dockershim's scope, and a path relative to the reader's own cgroup namespace.
        f"0::/kubepods.slice/kubepods-pod{SYSTEMD_UID}.slice/docker-{TRAINER}.scope\n",
        f"0::/../../kubepods-besteffort-pod{SYSTEMD_UID}.slice/cri-containerd-{TRAINER}.scope\n",
    ],
)
def test_the_container_id_is_the_cgroup_below_the_pods(cgroup: str) -> None:
    assert container_id_from_cgroup(cgroup) == TRAINER


@pytest.mark.parametrize(
    "cgroup",
    [
        f"0::/kubepods.slice/kubepods-pod{SYSTEMD_UID}.slice\n",  # the pod's, no container's
        f"0::/system.slice/containerd.service/{TRAINER}\n",  # not under a pod
        f"0::/kubepods.slice/kubepods-pod{SYSTEMD_UID}.slice/cri-containerd-abc.scope\n",
    ],
)
def test_no_container_id_where_the_cgroup_names_none(cgroup: str) -> None:
    assert container_id_from_cgroup(cgroup) is None


def _proc(root: Path, cgroups: dict[int, str]) -> Path:
    for pid, text in cgroups.items():
        (root / str(pid)).mkdir(parents=True)
        (root / str(pid) / "cgroup").write_text(text)
    return root


def test_each_pods_containers_in_pid_order(tmp_path: Path) -> None:
    other = "0a0a0a0a-0000-4000-8000-000000000000"
    trainer = f"0::/kubepods.slice/kubepods-pod{SYSTEMD_UID}.slice/cri-containerd-{TRAINER}.scope\n"
    proc = _proc(
        tmp_path,
        {
            10: trainer,
            11: trainer,
            12: f"0::/kubepods/pod{other}\n",
        },
    )
    assert pod_containers([10, 11, 12, 13], proc) == {UID: [TRAINER], other: []}


def _logs(tmp_path: Path, pod_dirs: list[str], links: list[str]) -> tuple[Path, Path]:
    pods, containers = tmp_path / "pods", tmp_path / "containers"
    for container in pod_dirs:
        (pods / f"nlp_bert-worker-0_{UID}" / container).mkdir(parents=True)
    containers.mkdir()
    for name in links:  # the kubelet's symlinks; only their names are read
        (containers / name).symlink_to(f"/var/log/pods/nlp_bert-worker-0_{UID}/x/0.log")
    return pods, containers


def test_the_kubelets_log_symlink_names_the_container(tmp_path: Path) -> None:
    """/var/log/containers/<pod>_<namespace>_<container>-<id>.log (kubernetes/kubernetes
    pkg/kubelet/kuberuntime/legacy.go, logSymlink)."""
    pods, containers = _logs(
        tmp_path,
        ["data-loader", "trainer"],
        [
            f"bert-worker-0_nlp_data-loader-{SIDECAR}.log",
            f"bert-worker-0_nlp_trainer-{TRAINER}.log",
        ],
    )
    found = container_name(UID, [TRAINER], pod_log_root=pods, container_log_root=containers)
    assert found == "trainer"
    found = container_name(UID, [SIDECAR], pod_log_root=pods, container_log_root=containers)
    assert found == "data-loader"


def test_a_pod_with_one_container_is_named_from_its_log_directory(tmp_path: Path) -> None:
    """/var/log/pods/<namespace>_<pod>_<uid>/<container>/: one folder, one container, whatever
    the cgroup said (no /var/log/containers mounted)."""
    pods, _ = _logs(tmp_path, ["trainer"], [])
    assert container_name(UID, [], pod_log_root=pods, container_log_root=None) == "trainer"


@pytest.mark.parametrize(
    ("ids", "links"),
    [
        ([TRAINER, SIDECAR], []),  # two containers' processes on one GPU
        ([TRAINER], []),  # two containers, no symlink for this one
        ([], [f"bert-worker-0_nlp_trainer-{TRAINER}.log"]),  # no container ID read
        # The kubelet cut the name at 255 characters (ext4): the ID is not whole.
        ([TRAINER], [f"{'p' * 200}_nlp_trainer-{TRAINER[:10]}.log"]),
    ],
)
def test_an_unknown_container_is_left_unnamed(
    tmp_path: Path, ids: list[str], links: list[str]
) -> None:
    pods, containers = _logs(tmp_path, ["data-loader", "trainer"], links)
    assert container_name(UID, ids, pod_log_root=pods, container_log_root=containers) is None


def test_unreadable_log_roots_name_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    assert container_name(UID, [TRAINER], pod_log_root=missing, container_log_root=missing) is None
