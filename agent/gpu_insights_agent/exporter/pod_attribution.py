"""Which pod uses a GPU: from the PIDs NVML reports to the pod UID in their cgroup path.

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
