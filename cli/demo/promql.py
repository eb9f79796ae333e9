"""A real PromQL engine where the demo and the tests have no account: Debian's ``prometheus``
(2.42), fed series written as OpenMetrics through ``promtool tsdb create-blocks-from
openmetrics``, started on a free port, and answering the requests a ``PromQLClient`` sends to
CloudWatch's monitoring host (``answering``), as moto answers the botocore clients beside it.

Prometheus 2.42 predates UTF-8 label names (Prometheus 3.0), so the series are stored under
legacy names (``@resource.k8s.pod.name`` as ``_resource_k8s_pod_name``); ``answering`` renames a
query's quoted label names on the way in and the answer's on the way out, so the readers send
CloudWatch's own names ("PromQL querying", CloudWatch-PromQL-Querying.html): the engine is
Prometheus's, only the label spelling is translated.
"""

import io
import json
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import urllib.response
from collections.abc import Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from email.message import Message
from pathlib import Path
from typing import Any, Final

from lambdas.shared.promql import PromQLClient, endpoint_for

#: Written one sample a line: (metric, labels, epoch seconds, value).
Sample = tuple[str, Mapping[str, str], float, float]
#: Debian's package: it holds both ``prometheus`` and ``promtool``.
PACKAGE: Final = "prometheus"
#: A quoted label name in a query: what CloudWatch's attribute names need ("@resource....").
_QUOTED: Final = re.compile(r'"((?:[^"\\]|\\.)*)"')


class PrometheusMissingError(Exception):
    """``prometheus`` or ``promtool`` is not on PATH."""


def binaries() -> tuple[str, str]:
    """promtool and prometheus, or ``PrometheusMissingError`` naming the package."""
    promtool, prometheus = shutil.which("promtool"), shutil.which("prometheus")
    if promtool is None or prometheus is None:
        raise PrometheusMissingError(
            f"needs Prometheus (prometheus and promtool on PATH): apt-get install {PACKAGE}"
        )
    return promtool, prometheus


def legacy_label(name: str) -> str:
    """A label name Prometheus 2 accepts ([a-zA-Z_][a-zA-Z0-9_]*)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def write_openmetrics(path: Path, samples: Iterable[Sample]) -> int:
    """The samples as one OpenMetrics exposition (gauges, each metric's lines together),
    label names made legacy. Returns the lines written."""
    by_metric: dict[str, list[str]] = {}
    # A series' labels are written once, not once a sample (weeks of samples share a few
    # hundred label sets).
    texts: dict[tuple[tuple[str, str], ...], str] = {}
    for metric, labels, at, value in samples:
        key = tuple(sorted(labels.items()))
        text = texts.get(key)
        if text is None:
            text = texts[key] = ",".join(f'{legacy_label(k)}="{_escape(v)}"' for k, v in key)
        # ``repr``: every digit of the value, as CloudWatch keeps the float it was sent.
        by_metric.setdefault(metric, []).append(f"{metric}{{{text}}} {value!r} {at:.3f}\n")
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


def _wait_ready(url: str, process: "subprocess.Popen[bytes]", log: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as ready:
                if ready.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                process.wait(timeout=5)
                said = log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"prometheus did not start: {said}") from None
            time.sleep(0.1)


#: promtool's block length (tsdb.DefaultBlockDuration, 2 hours, from the epoch): its import
#: reads the whole input once for each block it writes (prometheus/prometheus
#: cmd/promtool/backfill.go, ``createBlocks``), so a week's exposition was read 84 times.
BLOCK_MS: Final = 2 * 3_600_000


def _pieces(openmetrics: Path, folder: Path) -> list[Path]:
    """``openmetrics`` cut at promtool's block edges (a sample's block: its timestamp in
    milliseconds, as promtool reads it, over ``BLOCK_MS``): one exposition a block, each
    metric's lines together under its TYPE line, as in the whole."""
    pieces: dict[int, dict[str, list[str]]] = {}
    family = ""
    with openmetrics.open() as lines:
        for line in lines:
            if line.startswith("# TYPE "):
                family = line
            elif not line.startswith("#"):
                block = int(float(line.rsplit(" ", 1)[1]) * 1000) // BLOCK_MS
                pieces.setdefault(block, {}).setdefault(family, []).append(line)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for block, families in sorted(pieces.items()):
        path = folder / f"{block}.om"
        with path.open("w") as out:
            for header, samples in families.items():
                out.write(header)
                out.writelines(samples)
            out.write("# EOF\n")
        paths.append(path)
    return paths


def create_blocks(openmetrics: Path, data: Path) -> None:
    """``openmetrics``'s series as TSDB blocks in ``data``: another exposition's blocks added
    to the same folder are served beside them (Prometheus 2.39 and later read overlapping
    blocks, merging their series at query time), so a load adds only what is new. Each block's
    samples are imported from a file of their own (``_pieces``): the same blocks, the input
    read once instead of once a block."""
    promtool, _ = binaries()
    with tempfile.TemporaryDirectory(prefix="openmetrics-") as folder:
        for piece in _pieces(openmetrics, Path(folder)):
            subprocess.run(
                [promtool, "tsdb", "create-blocks-from", "openmetrics", str(piece), str(data)],
                check=True,
                capture_output=True,
                timeout=300,
            )


@contextmanager
def serve(openmetrics: Path, data: Path) -> Iterator[str]:
    """Prometheus serving the series of ``openmetrics`` on a free port; yields its URL."""
    create_blocks(openmetrics, data)
    with serve_blocks(data) as url:
        yield url


@contextmanager
def serve_blocks(data: Path) -> Iterator[str]:
    """Prometheus serving the blocks in ``data`` on a free port; yields its URL."""
    _, prometheus = binaries()
    config = data / "prometheus.yml"
    config.write_text("global: {}\n")
    url = f"http://127.0.0.1:{_free_port()}"
    # Its log to a file: a pipe nobody reads fills (a line a block loaded) and then blocks
    # every goroutine that logs, queries among them.
    log = data / "prometheus.log"
    with log.open("wb") as log_file:
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
            stderr=log_file,
        )
    try:
        _wait_ready(url, process, log)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


class LocalPromQL(urllib.request.BaseHandler):
    """Answers ``https://monitoring.<region>.amazonaws.com/api/v1/...`` from the local engine
    at ``url``: the (SigV4-signed, form-encoded) request's query with its quoted label names
    made legacy, the answer's label names given back as the query spelt them."""

    handler_order = 100  # before urllib's own HTTPS handler

    def __init__(self, region: str, url: str) -> None:
        self.host = f"monitoring.{region}.amazonaws.com"
        self.url = url
        #: The requests it answered, as they were sent (headers, signature and body).
        self.answered: list[urllib.request.Request] = []

    def https_open(self, request: urllib.request.Request) -> Any:
        parts = urllib.parse.urlsplit(request.full_url)
        if parts.hostname != self.host or not parts.path.startswith("/api/v1/"):
            return None  # the next handler's
        self.answered.append(request)
        data = request.data if isinstance(request.data, bytes) else b""
        form = urllib.parse.parse_qs(data.decode(), keep_blank_values=True)
        names: dict[str, str] = {}

        def rename(match: re.Match[str]) -> str:
            name = match.group(1)
            if not name.startswith("@"):  # a label value, or a legacy name
                return match.group(0)
            names[legacy_label(name)] = name
            return legacy_label(name)

        form = {
            k: [_QUOTED.sub(rename, v) if k == "query" else v for v in vs] for k, vs in form.items()
        }
        body = urllib.parse.urlencode(form, doseq=True).encode()
        local = urllib.request.Request(
            self.url + parts.path,
            data=body,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
            method="POST",
        )
        try:
            # Generous: a loaded machine's engine, whose answer the reader waits for.
            with urllib.request.build_opener().open(local, timeout=300) as response:
                status, answer = int(response.status), response.read()
        except urllib.error.HTTPError as err:
            status, answer = int(err.code), err.read()
        document = json.loads(answer)
        for item in document.get("data", {}).get("result", []) or []:
            if isinstance(item, dict) and "metric" in item:
                item["metric"] = {names.get(k, k): v for k, v in item["metric"].items()}
        headers = Message()
        headers["Content-Type"] = "application/json"
        response = urllib.response.addinfourl(
            io.BytesIO(json.dumps(document).encode()), headers, request.full_url, status
        )
        # urllib's error processor reads a response's msg, which addinfourl does not set.
        response.msg = "OK" if status == 200 else "Error"  # type: ignore[attr-defined]
        return response


@contextmanager
def serving(samples: Iterable[Sample], region: str) -> Iterator[PromQLClient]:
    """A local Prometheus holding ``samples`` that answers ``region``'s PromQL host (an
    alarm's replay and the notifier's reads alike); yields a client of it (unsigned: the
    engine takes any request)."""
    client = PromQLClient(endpoint=endpoint_for(region), region=region, credentials=None)
    with tempfile.TemporaryDirectory(prefix="promql-") as folder, ExitStack() as stack:
        path = Path(folder) / "series.om"
        write_openmetrics(path, samples)
        url = stack.enter_context(serve(path, Path(folder) / "data"))
        stack.enter_context(answering(region, url))
        yield client


@contextmanager
def answering(region: str, url: str) -> Iterator[LocalPromQL]:
    """Within it, urllib's requests to ``region``'s monitoring host's query API go to the
    engine at ``url`` (``serve``'s); every other request as before."""
    previous = urllib.request._opener  # type: ignore[attr-defined]
    local = LocalPromQL(region, url)
    urllib.request.install_opener(urllib.request.build_opener(local))
    try:
        yield local
    finally:
        urllib.request._opener = previous  # type: ignore[attr-defined]
