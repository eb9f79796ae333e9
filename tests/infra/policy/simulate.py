"""Runs requests through AWS's policy evaluation logic as @cloud-copilot/iam-simulate implements
it (``simulate.mjs`` next to this file, on Node), in one process for a whole list."""

import json
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = Path(__file__).with_name("simulate.mjs")


class SimulatorMissingError(RuntimeError):
    """Node or the npm packages are not installed (``make test`` runs ``npm ci`` first)."""


@dataclass(frozen=True)
class Request:
    """One request as AWS authorizes it: who, what, on which ARN, with which context keys."""

    name: str
    principal: str
    action: str
    resource: str
    account_id: str
    context: dict[str, Any] = field(default_factory=dict)
    identity_policies: list[dict[str, Any]] = field(default_factory=list)
    resource_policy: dict[str, Any] | None = None


def simulate(requests: list[Request]) -> dict[str, str]:
    """Each request's name to Allowed, ImplicitlyDenied, ExplicitlyDenied or ``Error: ...``."""
    node = shutil.which("node")
    if node is None or not (ROOT / "node_modules" / "@cloud-copilot" / "iam-simulate").is_dir():
        raise SimulatorMissingError("node and node_modules are needed: run `npm ci` at the root")
    cases = []
    for request in requests:
        case = asdict(request)
        cases.append(
            {
                "name": case["name"],
                "principal": case["principal"],
                "action": case["action"],
                "resource": case["resource"],
                "accountId": case["account_id"],
                "context": case["context"],
                "identityPolicies": case["identity_policies"],
                "resourcePolicy": case["resource_policy"],
            }
        )
    completed = subprocess.run(
        [node, str(SCRIPT)],
        input=json.dumps({"cases": cases}),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=120,
    )
    return {r["name"]: r["result"] for r in json.loads(completed.stdout)}
