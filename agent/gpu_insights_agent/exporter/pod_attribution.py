"""Which pod uses a GPU: from the PIDs NVML reports to the pod UID in their cgroup path, and
from the UID to the pod's namespace and name in the kubelet's pod log directories.

Needs the host's PID namespace (the DaemonSet's hostPID when attribution is on): NVML
reports no processes of other namespaces to a container. Where a PID cannot be read the
GPU simply has no attribution. Kubelet cgroup paths name the pod as ``pod<uid>`` with dashes
(cgroupfs) or underscores (systemd driver).
"""

import re
from collections.abc import Iterable
from pathlib import Path

_POD_UID = re.compile(
    r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})"
)


def pod_uid_from_cgroup(text: str) -> str | None:
    match = _POD_UID.search(text)
    return match[1].replace("_", "-") if match else None


def pod_uids(pids: Iterable[int], proc_root: Path) -> list[str]:
    """Distinct pod UIDs of these host PIDs, in PID order."""
    found: list[str] = []
    for pid in pids:
        try:
            uid = pod_uid_from_cgroup((proc_root / str(pid) / "cgroup").read_text())
        except OSError:
            continue
        if uid and uid not in found:
            found.append(uid)
    return found


def pod_names(uids: Iterable[str], pod_log_root: Path) -> list[str]:
    """``namespace/name`` of each pod UID found, in the order given. The kubelet keeps one
    log directory per pod on its node, named ``<namespace>_<name>_<uid>`` under
    ``/var/log/pods`` (kubernetes/kubernetes, pkg/kubelet/kuberuntime/helpers.go,
    ``BuildPodLogsDirectory``, with ``logPathDelimiter`` "_"); a namespace and a pod name are
    DNS names, which hold no "_", so the split is exact. A UID without a directory (a pod
    already gone, a directory that cannot be listed) is left out."""
    wanted = list(dict.fromkeys(uids))
    try:
        entries = [entry.name for entry in pod_log_root.iterdir()]
    except OSError:
        return []
    found: dict[str, str] = {}
    for entry in entries:
        parts = entry.split("_")
        if len(parts) == 3 and parts[2] in wanted:
            found[parts[2]] = f"{parts[0]}/{parts[1]}"
    return [found[uid] for uid in wanted if uid in found]
