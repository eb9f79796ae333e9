"""The AWS SDK the tests and benchmarks run, shipped to every function as one Lambda layer.

Why: the analyzers' CPU goals (issue 15) hold only because botocore talks to CloudWatch in the
JSON protocol, which it does from 1.42.7 (getmoto/moto PR #9562; CloudWatch's service model
lists ``"protocols": ["smithy-rpc-v2-cbor", "json", "query"]`` and botocore takes the first it
supports). Parsing a datapoint took ~37.7 µs in Query against ~1.7 µs in JSON: 10,000 volumes x
14 days would spend ~280 s parsing instead of meeting the 60 s goal. The runtime's own boto3 is
whatever version Lambda bundles ("Runtime-included SDK versions",
https://docs.aws.amazon.com/lambda/latest/dg/lambda-python.html); AWS advises packaging the SDK
a function depends on: "To lock an SDK version and make it immutable, it's recommended that you
create a Lambda layer with a specific version of an SDK"
(https://serverlessland.com/content/service/lambda/guides/aws-lambda-operator-guide/sdks-functions),
the runtime's copy being "for deployment scenarios where you are unable to add your own
dependencies" (https://docs.aws.amazon.com/lambda/latest/dg/python-package.html).

How: made at synth with no network and no Docker, by copying the packages from the running
interpreter (found by each module's ``__file__``; all pure Python) into ``python/``, the folder
Lambda puts on ``sys.path`` for a Python layer ("Layer paths for each Lambda runtime",
https://docs.aws.amazon.com/lambda/latest/dg/packaging-layers.html#packaging-layers-paths).
botocore's and boto3's ``data/`` keep the models of the services the handlers use
(``HANDLER_SERVICES``, enforced by their ``ClientCache``) and every top-level file (endpoints,
partitions, retry and default configuration).
"""

import functools
import shutil
import tempfile
from importlib import import_module
from pathlib import Path

from aws_cdk import Stack
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from lambdas.shared.aws_clients import HANDLER_SERVICES

#: boto3 and what it imports, by import name (python-dateutil is ``dateutil``).
PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "six", "urllib3")

#: botocore's own credential providers (assume-role, web identity) make STS clients.
LAYER_SERVICES = HANDLER_SERVICES | {"sts"}

#: Packages whose ``data/`` holds one folder of models per service.
MODEL_PACKAGES = ("boto3", "botocore")


def _ignored(folder: str, names: list[str]) -> set[str]:
    """Bytecode everywhere, and the models of services no handler uses."""
    path = Path(folder)
    skipped = {n for n in names if n == "__pycache__" or n.endswith(".pyc")}
    if path.name == "data" and path.parent.name in MODEL_PACKAGES:
        skipped |= {n for n in names if (path / n).is_dir() and n not in LAYER_SERVICES}
    return skipped


@functools.cache
def stage_sdk() -> Path:
    """The layer's content, staged once a process: ``<staging>/python/<package>``."""
    python = Path(tempfile.mkdtemp(prefix="gpu-insights-sdk-")) / "python"
    python.mkdir()
    for name in PACKAGES:
        source = Path(str(import_module(name).__file__))
        if source.name != "__init__.py":
            shutil.copyfile(source, python / source.name)
            continue
        shutil.copytree(source.parent, python / name, ignore=_ignored)
    missing = LAYER_SERVICES - {e.name for e in (python / "botocore" / "data").iterdir()}
    if missing:
        raise FileNotFoundError(f"botocore has no model for {', '.join(sorted(missing))}")
    return python.parent


def sdk_layer(scope: Construct) -> lambda_.ILayerVersion:
    """The stack's one SDK layer, made on first use; every stack's copy has the same asset."""
    stack = Stack.of(scope)
    found = stack.node.try_find_child("SdkLayer")
    if isinstance(found, lambda_.LayerVersion):
        return found
    return lambda_.LayerVersion(
        stack,
        "SdkLayer",
        code=lambda_.Code.from_asset(str(stage_sdk())),
        compatible_runtimes=[lambda_.Runtime.PYTHON_3_14],
        description=f"boto3 {import_module('boto3').__version__} and botocore "
        f"{import_module('botocore').__version__}, as tested (CloudWatch in JSON)",
    )
