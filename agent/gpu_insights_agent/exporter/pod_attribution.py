"""Which pod and container use a GPU: from the PIDs NVML reports to the pod UID and container
ID in their cgroup path, and from those to the pod's namespace and name and the container's
name in the kubelet's log directories.

Needs the host's PID namespace (the DaemonSet's hostPID when attribution is on): NVML
reports no processes of other namespaces to a container. Where a PID cannot be read the
GPU simply has no attribution. Kubelet cgroup paths name the pod as ``pod<uid>`` with dashes
(cgroupfs) or underscores (systemd driver).

A container's cgroup is its pod's with one more step, the container runtime's: ``<pod
cgroup>/<id>`` with cgroupfs, and with the systemd driver the scope ``<prefix>-<id>.scope`` under
the pod's slice, ``cri-containerd-<id>.scope`` for containerd (containerd/containerd,
internal/cri/server/podsandbox/helpers_linux.go, ``getCgroupsPath``: ``filepath.Join(
cgroupsParent, id)``, or the runc systemd path ``slice:cri-containerd:id``, which runc makes
the unit ``<prefix>-<name>.scope``: opencontainers/runc docs/systemd.md), ``docker-<id>.scope``
for Docker, ``crio-<id>.scope`` for CRI-O. A container ID is 64 hex digits. The path may start
``/../..`` where the reader's cgroup namespace is not the host's; only the steps from the pod's
are read.
"""

import re
from collections.abc import Iterable
from pathlib import Path

_POD_UID = re.compile(
    r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})"
)
#: The pod's cgroup step, then the container's: ``<id>`` or ``<runtime prefix>-<id>.scope``.
_CONTAINER_ID = re.compile(
    _POD_UID.pattern + r"(?:\.slice)?/(?:[a-z][a-z-]*-)?([0-9a-f]{64})(?:\.scope)?(?=/|$)",
    re.MULTILINE,
)
#: The kubelet's name for a container's log symlink in /var/log/containers,
#: ``<pod>_<namespace>_<container>-<id>.log``, cut to 255 characters (ext4's longest name) where
#: longer (kubernetes/kubernetes, pkg/kubelet/kuberuntime/legacy.go, ``logSymlink``: "%s_%s-%s"
#: of the pod's full name ``<pod>_<namespace>``, the container's name and its ID, with suffix
#: ".log"). A cut name holds no whole ID, so matches none.
_LOG_SUFFIX = ".log"


def pod_uid_from_cgroup(text: str) -> str | None:
    match = _POD_UID.search(text)
    return match[1].replace("_", "-") if match else None


def container_id_from_cgroup(text: str) -> str | None:
    """The ID of the container whose cgroup ``text`` (a /proc/<pid>/cgroup) names, or None
    where it names a pod's cgroup without a container's below it, or no pod's."""
    match = _CONTAINER_ID.search(text)
    return match[2] if match else None


def pod_containers(pids: Iterable[int], proc_root: Path) -> dict[str, list[str]]:
    """Each distinct pod UID of these host PIDs, in PID order, with the distinct container IDs
    their cgroups name (none where a cgroup names the pod only)."""
    found: dict[str, list[str]] = {}
    for pid in pids:
        try:
            text = (proc_root / str(pid) / "cgroup").read_text()
        except OSError:
            continue
        uid = pod_uid_from_cgroup(text)
        if uid is None:
            continue
        ids = found.setdefault(uid, [])
        container = container_id_from_cgroup(text)
        if container is not None and container not in ids:
            ids.append(container)
    return found


def pod_uids(pids: Iterable[int], proc_root: Path) -> list[str]:
    """Distinct pod UIDs of these host PIDs, in PID order."""
    return list(pod_containers(pids, proc_root))


def pod_names(uids: Iterable[str], pod_log_root: Path) -> list[str]:
    """``namespace/name`` of each pod UID found, in the order given. The kubelet keeps one
    log directory per pod on its node, named ``<namespace>_<name>_<uid>`` under
    ``/var/log/pods`` (kubernetes/kubernetes, pkg/kubelet/kuberuntime/helpers.go,
    ``BuildPodLogsDirectory``, with ``logPathDelimiter`` "_"); a namespace and a pod name are
    DNS names, which hold no "_", so the split is exact. A UID without a directory (a pod
    already gone, a directory that cannot be listed) is left out."""
    wanted = list(dict.fromkeys(uids))
    found: dict[str, str] = {}
    for entry in _names(pod_log_root):
        parts = entry.split("_")
        if len(parts) == 3 and parts[2] in wanted:
            found[parts[2]] = f"{parts[0]}/{parts[1]}"
    return [found[uid] for uid in wanted if uid in found]


def container_name(
    uid: str, container_ids: list[str], *, pod_log_root: Path, container_log_root: Path | None
) -> str | None:
    """The name of the one container of pod ``uid`` whose processes (``container_ids``, from
    their cgroups) use the GPU, or None where it is not known for sure (never a guess).

    From the kubelet's log symlink of that container ID (``_LOG_SUFFIX``), where
    ``container_log_root`` (the host's /var/log/containers) is given; else from the pod's log
    directory when it holds one container's folder only: the kubelet keeps each container's
    logs in ``/var/log/pods/<namespace>_<pod>_<uid>/<container>/`` (kubernetes/kubernetes,
    pkg/kubelet/kuberuntime/helpers.go, ``BuildContainerLogsDirectory``), so a pod with one
    folder has run one container (init containers have folders too), the one with the GPU.
    A container name is a DNS label, with no "_"."""
    if len(container_ids) > 1:
        return None  # two containers' processes on one GPU: neither is "the" container
    if container_ids and container_log_root is not None:
        tail = f"-{container_ids[0]}{_LOG_SUFFIX}"
        for entry in _names(container_log_root):
            parts = entry.split("_")
            if len(parts) == 3 and parts[2].endswith(tail) and len(parts[2]) > len(tail):
                return parts[2][: -len(tail)]
    pod_dir = next((e for e in _names(pod_log_root) if e.endswith(f"_{uid}")), None)
    if pod_dir is None:
        return None
    folders = _names(pod_log_root / pod_dir)
    return folders[0] if len(folders) == 1 else None


def _names(directory: Path) -> list[str]:
    """The entries of a directory, none where it cannot be listed."""
    try:
        return [entry.name for entry in directory.iterdir()]
    except OSError:
        return []
