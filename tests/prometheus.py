"""A real PromQL engine for tests: Debian's ``prometheus`` (2.42), as the demo runs it
(cli/demo/promql.py), skipped (saying how to get it) where it is not installed.

Prometheus 2.42 predates UTF-8 label names (Prometheus 3.0), so the series are stored under
legacy names (``@resource.k8s.pod.name`` as ``_resource_k8s_pod_name``): a reader is given those
names (``legacy_labels``), or queries through ``cli.demo.promql.answering``, which translates
CloudWatch's own names (the realistic model's, cli/demo/realistic/otel.py, and the reader's
default) on the way in and out.
"""

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from cli.demo import promql as demo_promql
from cli.demo.promql import Sample, legacy_label, write_openmetrics
from gpu_insights_agent.emitter.otlp import training_points
from lambdas.shared.dcgm import CLOUDWATCH, DcgmLabels

__all__ = [
    "Sample",
    "binaries",
    "emitter_openmetrics",
    "legacy_label",
    "legacy_labels",
    "serve",
    "write_openmetrics",
]


def legacy_labels(labels: DcgmLabels = CLOUDWATCH) -> DcgmLabels:
    return DcgmLabels(**{f.name: legacy_label(getattr(labels, f.name)) for f in fields(labels)})


def binaries() -> tuple[str, str]:
    """promtool and prometheus, or the test is skipped saying how to get them."""
    try:
        return demo_promql.binaries()
    except demo_promql.PrometheusMissingError:
        pytest.skip(
            "Prometheus is not installed: `apt-get install prometheus` (Debian's 2.42; "
            ".ci/run installs it) for the tests against a real PromQL engine"
        )


@contextmanager
def serve(openmetrics: Path, data: Path) -> Iterator[str]:
    """Prometheus serving the series of ``openmetrics`` on a free port; yields its URL."""
    binaries()
    with demo_promql.serve(openmetrics, data) as url:
        yield url


def emitter_openmetrics(path: Path, documents: Sequence[Any], namespace: str) -> None:
    """The training emitter's OTLP points of ``documents`` (emitter/otlp.py
    ``training_points``) as an OpenMetrics exposition, each value exactly (``repr``: the writer
    of cli/demo/promql.py keeps 6 digits), label names as CloudWatch's PromQL names them
    ("@resource." before a resource attribute, a datapoint attribute bare), stored legacy."""
    lines: dict[str, list[str]] = {}
    for point in training_points(documents, namespace):
        labels = {f"@resource.{k}": v for k, v in point.resource} | dict(point.attributes)
        text = ",".join(f'{legacy_label(k)}="{v}"' for k, v in sorted(labels.items()))
        at = point.time_ns / 1e9
        lines.setdefault(point.name, []).append(f"{point.name}{{{text}}} {point.value!r} {at:.3f}")
    body = "".join(
        f"# TYPE {name} gauge\n" + "".join(f"{line}\n" for line in values)
        for name, values in lines.items()
    )
    path.write_text(body + "# EOF\n")
