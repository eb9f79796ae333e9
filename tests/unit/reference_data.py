"""Loaders for the contracts vendored in tests/data/ (sources in tests/data/README.md).

Tests hold the project's output to these files, AWS's and Kubernetes' own definitions, rather
than to the project's reading of them.
"""

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

DATA = Path(__file__).parents[1] / "data"


def _json(name: str) -> Any:
    return json.loads((DATA / name).read_text())


@cache
def agent_config_schema() -> dict[str, Any]:
    schema: dict[str, Any] = _json("cloudwatch-agent-config.schema.json")
    return schema


@cache
def nvidia_smi_allowlist() -> frozenset[str]:
    """The nvidia_gpu measurement names the agent's translator accepts on Linux."""
    return frozenset(_json("cloudwatch-agent-nvidia-smi-allowlist.json")["nvidia_smi"])


@cache
def translator_keys() -> frozenset[str]:
    lines = (DATA / "cloudwatch-agent-translator-keys.txt").read_text().splitlines()
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def _property_names(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        properties = node.get("properties")
        if isinstance(properties, dict):
            yield from properties
        for value in node.values():
            yield from _property_names(value)
    elif isinstance(node, list):
        for value in node:
            yield from _property_names(value)


@cache
def agent_schema_keys() -> frozenset[str]:
    """Every property name the agent's schema defines, at any depth."""
    return frozenset(_property_names(agent_config_schema()))


@cache
def emf_schema() -> dict[str, Any]:
    schema: dict[str, Any] = _json("cloudwatch-emf.schema.json")
    return schema


@cache
def observability_chart_values() -> dict[str, Any]:
    """The amazon-cloudwatch-observability chart's values.yaml (the add-on's defaults)."""
    values: dict[str, Any] = yaml.safe_load(
        (DATA / "amazon-cloudwatch-observability-values.yaml").read_text()
    )
    return values


#: Keys the agent reads that neither its schema nor its translator's key constants spell:
#: ``nvidia_gpu`` is the section the CloudWatch User Guide documents for NVIDIA GPUs
#: ("Collect NVIDIA GPU metrics", awsdocs/amazon-cloudwatch-user-guide
#: doc_source/CloudWatch-Agent-NVIDIA-GPU.md; the schema calls it ``nvidia_smi``), and the
#: four EC2 dimensions are the only keys ``append_dimensions`` supports (the schema's own
#: description of that field).
DOCUMENTED_AGENT_KEYS = frozenset(
    {"nvidia_gpu", "ImageId", "InstanceId", "InstanceType", "AutoScalingGroupName"}
)


def unknown_agent_keys(node: object, path: str = "") -> list[str]:
    """Paths of the keys in an agent configuration that the agent does not know."""
    known = translator_keys() | agent_schema_keys() | DOCUMENTED_AGENT_KEYS
    unknown: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key not in known:
                unknown.append(f"{path}/{key}")
            unknown += unknown_agent_keys(value, f"{path}/{key}")
    elif isinstance(node, list):
        for value in node:
            unknown += unknown_agent_keys(value, path)
    return unknown


@dataclass(frozen=True)
class FailureLogSample:
    """One excerpt of tests/data/failure_logs/corpus.json: lines as their programs print
    them, the public page they come from, and the cause that page's reader names."""

    id: str
    cause: str
    source: str
    format: str
    lines: tuple[str, ...]
    note: str = ""

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


@cache
def failure_log_corpus() -> tuple[FailureLogSample, ...]:
    entries = _json("failure_logs/corpus.json")["entries"]
    return tuple(
        FailureLogSample(
            id=e["id"],
            cause=e["cause"],
            source=e["source"],
            format=e["format"],
            lines=tuple(e["lines"]),
            note=e.get("note", ""),
        )
        for e in entries
    )
