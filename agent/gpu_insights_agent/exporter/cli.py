"""``python -m gpu_insights_agent.exporter``: run the GPU exporter on a node (or on a
recorded trace)."""

import argparse
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from gpu_insights_agent.contract.metrics import (
    DEFAULT_EMF_ENDPOINT,
    DEFAULT_OTLP_ENDPOINT,
    EXPORTER_MAX_INTERVAL_S,
    dimension_value_problem,
)
from gpu_insights_agent.contract.resource_names import cluster_name_problem
from gpu_insights_agent.emf.sinks import (
    BufferedSender,
    PutMetricDataSink,
    Sender,
    Sink,
    StdoutSink,
    TcpEmfSink,
)
from gpu_insights_agent.exporter.exporter import Exporter, ExporterConfig, NvmlUnavailableError
from gpu_insights_agent.exporter.nvml_source import NvmlSource
from gpu_insights_agent.exporter.xid_event_log import XidEventLog
from gpu_insights_agent.otlp.http_sink import endpoint_problem


class OneLineParser(argparse.ArgumentParser):
    """A usage error is one line naming the option and where help is, like every other refusal
    of bad input (argparse prints the whole usage block first); subcommands inherit it.
    ``gpu-insights`` uses it too."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


#: OpenTelemetry's variable for an OTLP metrics endpoint ("OTLP Exporter Configuration",
#: https://opentelemetry.io/docs/specs/otel/protocol/exporter/): the default of --otlp-endpoint.
OTLP_ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"

#: Shorter cycles are a busy loop, not monitoring: a trace replay in a test is the fastest use.
MIN_INTERVAL_S = 0.1


def parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="python -m gpu_insights_agent.exporter",
        description="GPU node exporter (NVML to EMF, or to OTLP in OTel Container Insights)",
    )
    p.add_argument("--cluster-name", required=True)
    p.add_argument("--node-name", required=True, help="the Kubernetes node (downward API)")
    p.add_argument("--interval", type=float, default=10.0, help="seconds between cycles (10)")
    p.add_argument(
        "--sink",
        choices=("emf", "otlp", "stdout", "cloudwatch"),
        default="emf",
        help="emf: the CloudWatch agent's listener; otlp: its OTLP/HTTP endpoint (OTel mode; "
        "XID events still go to the listener as log lines); stdout; cloudwatch: PutMetricData",
    )
    p.add_argument("--emf-endpoint", default=DEFAULT_EMF_ENDPOINT, help="tcp://host:port")
    p.add_argument(
        "--otlp-endpoint",
        default=os.environ.get(OTLP_ENDPOINT_ENV) or DEFAULT_OTLP_ENDPOINT,
        help=f"OTLP/HTTP metrics URL for --sink otlp (${OTLP_ENDPOINT_ENV}, else "
        f"{DEFAULT_OTLP_ENDPOINT})",
    )
    p.add_argument("--buffer", type=int, default=10_000, help="documents kept while a sink is down")
    p.add_argument(
        "--proc-root",
        type=Path,
        help="a /proc showing GPU processes (hostPID), for pod attribution",
    )
    p.add_argument(
        "--pod-log-root",
        type=Path,
        help="the kubelet's pod log directory (the host's /var/log/pods), to name pods",
    )
    p.add_argument(
        "--container-log-root",
        type=Path,
        help="the kubelet's container log symlinks (the host's /var/log/containers), to name "
        "the container on a GPU over OTLP",
    )
    p.add_argument(
        "--alarm-shards",
        type=int,
        default=1,
        help="alarm shards of the deployment (from its fleet_gpus setting); at least 1",
    )
    p.add_argument("--pod-dimension", action="store_true", help="publish a PodUid series too")
    p.add_argument("--trace", type=Path, help="replay an NVML trace instead of the real GPUs")
    p.add_argument("--region", help="AWS region for --sink cloudwatch")
    return p


def _sender(args: argparse.Namespace) -> Sender:
    if args.sink == "stdout":
        return BufferedSender(StdoutSink(), capacity=args.buffer)
    if args.sink == "cloudwatch":
        import boto3

        sink = PutMetricDataSink(boto3.client("cloudwatch", region_name=args.region))
        return BufferedSender(sink, capacity=args.buffer)
    listener = _emf_listener(args.emf_endpoint)
    if args.sink == "otlp":
        # The XID events' log lines still go to the listener, buffered on their own: the XID
        # page path, whatever the OTLP endpoint does.
        return XidEventLog(_otlp_sink(args.otlp_endpoint), listener, capacity=args.buffer)
    return BufferedSender(listener, capacity=args.buffer)


def _emf_listener(emf_endpoint: str) -> TcpEmfSink:
    endpoint = urlsplit(emf_endpoint)
    if endpoint.scheme != "tcp" or not endpoint.hostname or not endpoint.port:
        raise ValueError(f"--emf-endpoint {emf_endpoint!r} is not tcp://host:port")
    return TcpEmfSink(endpoint.hostname, endpoint.port)


class MissingExtraError(Exception):
    """An option needs a dependency of an extra that is not installed."""


def _otlp_sink(endpoint: str) -> Sink:
    problem = endpoint_problem(endpoint)
    if problem:
        raise ValueError(f"--otlp-endpoint: {problem}")
    try:
        from gpu_insights_agent.exporter.otlp_sink import OtlpSink
    except ModuleNotFoundError as err:
        raise MissingExtraError(
            "--sink otlp needs the OpenTelemetry SDK: pip install "
            "'eks-gpu-insights-agent[exporter,otlp]' (the exporter's image has it)"
        ) from err
    return OtlpSink(endpoint)


def _nvml(args: argparse.Namespace) -> Any:
    if args.trace is None:
        try:
            import pynvml
        except ModuleNotFoundError as err:
            raise NvmlUnavailableError(
                "needs nvidia-ml-py: pip install 'eks-gpu-insights-agent[exporter]' "
                "(the exporter's image has it)"
            ) from err
        return pynvml
    from gpu_insights_agent.exporter.fake_nvml import FakeNvml, TraceError

    started = time.monotonic()
    fake = FakeNvml.from_file(str(args.trace), clock=lambda: time.monotonic() - started)
    skipped = (
        f"{fake.malformed_lines} line(s) skipped, the first {fake.first_malformed}"
        if fake.malformed_lines
        else "no line skipped"
    )
    if fake.nvmlDeviceGetCount() == 0:
        # One line for a file that is not a trace, not a warning for each of its lines.
        raise TraceError(f"trace {args.trace} has no usable gpu record ({skipped})")
    if fake.malformed_lines:
        logging.getLogger(__name__).warning("trace %s: %s", args.trace, skipped)
    return fake


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.alarm_shards < 1:
        p.error(f"--alarm-shards {args.alarm_shards}: must be at least 1")
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s"
    )
    for bad, message in (
        (not MIN_INTERVAL_S <= args.interval <= EXPORTER_MAX_INTERVAL_S,
         f"--interval {args.interval} must be {MIN_INTERVAL_S} to {EXPORTER_MAX_INTERVAL_S} s"),
        (not 1 <= args.buffer <= 10_000_000, f"--buffer {args.buffer} must be 1 to 10,000,000"),
        (bool(cluster_name_problem(args.cluster_name)),
         f"--cluster-name: {cluster_name_problem(args.cluster_name)}"),
        (bool(dimension_value_problem("--node-name", args.node_name)),
         str(dimension_value_problem("--node-name", args.node_name))),
    ):  # fmt: skip
        if bad:
            print(f"gpu exporter: {message}", file=sys.stderr)
            return 2
    try:
        sender = _sender(args)
        nvml = _nvml(args)
    except ValueError as err:  # TraceError among them
        print(f"gpu exporter: {err}", file=sys.stderr)
        return 2
    except NvmlUnavailableError as err:
        print(f"gpu exporter: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # botocore's NoRegionError, ProfileNotFound: one line, exit 1
        print(f"gpu exporter: {err}", file=sys.stderr)
        return 1
    exporter = Exporter(
        NvmlSource(nvml),
        sender,
        ExporterConfig(
            cluster_name=args.cluster_name,
            node_name=args.node_name,
            interval_s=args.interval,
            proc_root=args.proc_root,
            pod_log_root=args.pod_log_root,
            container_log_root=args.container_log_root,
            # Only OTLP has a container label; EMF's documents keep their fields.
            name_containers=args.sink == "otlp",
            pod_dimension=args.pod_dimension,
            alarm_shards=args.alarm_shards,
        ),
    )
    try:
        exporter.start()
    except NvmlUnavailableError as err:
        print(f"gpu exporter: {err}", file=sys.stderr)
        return 1
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    exporter.run(stop)
    return 0 if exporter.shutdown() else 1
