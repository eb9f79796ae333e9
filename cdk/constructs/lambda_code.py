"""Lambda code as a plain asset holding exactly the modules a function imports.

The asset is staged into a fresh folder with the listed files only (the repository root holds
.venv, caches and cdk.out, which no exclude list keeps out reliably); CDK fingerprints the
content, so an unchanged function keeps its asset hash. No Docker, no pip: the runtime brings
the standard library, and the SDK comes from the app's own layer (cdk/constructs/sdk_layer.py:
the boto3 and botocore the tests ran, not the runtime's, since the CPU goals depend on it).
"""

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from aws_cdk import aws_lambda as lambda_

REPO = Path(__file__).resolve().parents[2]


def lambda_code(modules: Sequence[str]) -> lambda_.Code:
    return lambda_.Code.from_asset(str(stage_modules(modules)))


def stage_modules(modules: Sequence[str]) -> Path:
    """``modules`` are paths relative to the repository root, such as ``contract/xid.py``; the
    ``__init__.py`` of each package on the way is added."""
    staging = Path(tempfile.mkdtemp(prefix="gpu-insights-lambda-"))
    wanted = set(modules)
    for module in modules:
        for parent in Path(module).parents:
            if parent != Path("."):
                wanted.add(str(parent / "__init__.py"))
    for relative in sorted(wanted):
        source = REPO / relative
        if not source.is_file():
            raise FileNotFoundError(f"Lambda module {relative} does not exist")
        target = staging / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return staging
