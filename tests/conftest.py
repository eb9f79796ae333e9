"""Shared fixtures: the agent's official JSON schema, and quiet jsii on old Node."""

import json
import os
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data"

# Set before any test imports aws_cdk, whichever way pytest is started.
os.environ.setdefault("JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION", "1")
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")


@pytest.fixture(scope="session")
def agent_schema() -> dict[str, Any]:
    """The CloudWatch agent's configuration schema; see tests/data/README.md for its source."""
    schema: dict[str, Any] = json.loads((DATA / "cloudwatch-agent-config.schema.json").read_text())
    return schema
