"""A real PromQL engine for tests: Debian's ``prometheus`` (2.42), fed series written as
OpenMetrics through ``promtool tsdb create-blocks-from openmetrics`` and started on a free
port, answering the same ``/api/v1/query_range`` the CloudWatch reader calls.

Prometheus 2.42 predates UTF-8 label names (Prometheus 3.0), so the series are stored under
legacy names (``@resource.k8s.pod.name`` as ``_resource_k8s_pod_name``, ``legacy_labels``)
and the reader is given those names: its functions, grouping, ranges and paging are what this
engine checks; CloudWatch's own label names are the realistic model's
(tests/realistic/otel.py) and the reader's default.
"""

import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path

import pytest

from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels

#: Written one sample a line: (metric, labels, epoch seconds, value).
Sample = tuple[str, Mapping[str, str], float, float]


def legacy_label(name: str) -> str:
    """A label name Prometheus 2 accepts ([a-zA-Z_][a-zA-Z0-9_]*)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def legacy_labels(labels: DcgmLabels = CLOUDWATCH) -> DcgmLabels:
    return DcgmLabels(**{f.name: legacy_label(getattr(labels, f.name)) for f in fields(labels)})


def binaries() -> tuple[str, str]:
    """promtool and prometheus, or the test is skipped saying how to get them."""
    promtool, prometheus = shutil.which("promtool"), shutil.which("prometheus")
    if promtool is None or prometheus is None:
        pytest.skip(
            "Prometheus is not installed: `apt-get install prometheus` (Debian's 2.42; "
            ".ci/run installs it) for the tests against a real PromQL engine"
        )
    return promtool, prometheus


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def write_openmetrics(path: Path, samples: Iterable[Sample]) -> int:
    """The samples as one OpenMetrics exposition (gauges, each metric's lines together),
    label names made legacy. Returns the lines written."""
    by_metric: dict[str, list[str]] = {}
    for metric, labels, at, value in samples:
        text = ",".join(f'{legacy_label(k)}="{_escape(v)}"' for k, v in sorted(labels.items()))
        by_metric.setdefault(metric, []).append(f"{metric}{{{text}}} {value:g} {at:.3f}\n")
    with path.open("w") as out:
        for metric, lines in by_metric.items():
            out.write(f"# TYPE {metric} gauge\n")
            out.writelines(lines)
        out.write("# EOF\n")
    return sum(len(lines) for lines in by_metric.values())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_ready(url: str, process: "subprocess.Popen[bytes]") -> None:
    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as ready:
                if ready.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                _, err = process.communicate(timeout=5)
                raise RuntimeError(f"prometheus did not start: {err.decode()[-2000:]}") from None
            time.sleep(0.1)


@contextmanager
def serve(openmetrics: Path, data: Path) -> Iterator[str]:
    """Prometheus serving the series of ``openmetrics`` on a free port; yields its URL."""
    promtool, prometheus = binaries()
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(openmetrics), str(data)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    config = data / "prometheus.yml"
    config.write_text("global: {}\n")
    url = f"http://127.0.0.1:{_free_port()}"
    process = subprocess.Popen(
        [
            prometheus,
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            # The blocks hold past weeks: kept, not expired by the default 15 days.
            "--storage.tsdb.retention.time=100y",
            f"--web.listen-address={url.removeprefix('http://')}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_ready(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
