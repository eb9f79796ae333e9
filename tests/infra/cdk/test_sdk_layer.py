"""The SDK layer: every function of the app carries it, and what it holds is the SDK the tests
ran, enough for the handlers on its own.

Lambda puts a Python layer's ``python/`` folder on ``sys.path`` ("Layer paths for each Lambda
runtime", https://docs.aws.amazon.com/lambda/latest/dg/packaging-layers.html#packaging-layers-paths);
a function and its layers together must stay under 250 MB unzipped ("Deployment package (.zip
file archive) size ... 250 MB (unzipped, including layers)",
https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html)."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3
import botocore
import pytest
from aws_cdk.assertions import Template

from cdk.constructs.lambda_code import handler_modules, stage_modules
from cdk.constructs.sdk_layer import LAYER_SERVICES, stage_sdk
from lambdas.shared.aws_clients import HANDLER_SERVICES
from tests.infra.cdk.test_lambda_code import HANDLERS, import_alone
from tests.infra.conftest import Synth
from tests.infra.test_security_review import FULL

#: What the layer is allowed to weigh: a tenth of Lambda's 250 MB (function plus layers).
LAYER_BUDGET_BYTES = 25 * 1024 * 1024
LAMBDA_UNZIPPED_LIMIT_BYTES = 250 * 1024 * 1024

# Clients made as a handler makes them (lambdas/shared/aws_clients.py), from the layer alone.
CLIENTS_FROM_THE_LAYER = """
import json, sys, boto3, botocore
from lambdas.shared.aws_clients import client, new_session
session = new_session(region_name="us-east-1")
clients = {s: client(s, session=session) for s in sys.argv[1].split(",")}
plain = boto3.client("cloudwatch", region_name="us-east-1")
print(json.dumps({
    "boto3": boto3.__file__,
    "botocore": botocore.__version__,
    "plain": plain.meta.service_model.resolved_protocol,
    "handler": clients["cloudwatch"].meta.service_model.resolved_protocol,
    "available": session.get_available_services(),
}))
"""


def _layer() -> Path:
    return stage_sdk() / "python"


def _size(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def _asset(handler: str) -> Path:
    return stage_modules(handler_modules(handler))


@pytest.mark.parametrize("handler", HANDLERS)
def test_each_handler_imports_from_its_asset_and_the_layer_alone(handler: str) -> None:
    import_alone(handler.rsplit(".", 1)[0], _asset(handler), layer=_layer())


def test_the_layer_alone_makes_every_handler_client_and_cloudwatch_speaks_json() -> None:
    """CloudWatch's model lists ``smithy-rpc-v2-cbor``, ``json`` and ``query``; botocore from
    1.42.7 takes ``json`` (getmoto/moto PR #9562), the protocol the CPU goals were measured in.
    ``resolved_protocol`` is what botocore speaks; ``protocol`` is the model's first entry."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(_layer())
    done = subprocess.run(
        [sys.executable, "-S", "-c", CLIENTS_FROM_THE_LAYER, ",".join(sorted(HANDLER_SERVICES))],
        cwd=_asset("lambdas.storage_analyzer.handler.handler"),
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["boto3"].startswith(str(_layer()))
    assert found["botocore"] == botocore.__version__
    assert found["plain"] == found["handler"] == "json"
    assert sorted(found["available"]) == sorted(LAYER_SERVICES)


def test_the_layer_holds_the_tested_sdk_without_bytecode_and_well_under_the_size_limit() -> None:
    layer = _layer()
    assert not [p for p in layer.rglob("*") if p.name == "__pycache__" or p.suffix == ".pyc"]
    data = layer / "botocore" / "data"
    top_level = {p.name for p in data.iterdir() if p.is_file()}
    installed = Path(botocore.__file__).parent / "data"
    assert top_level == {p.name for p in installed.iterdir() if p.is_file()}
    assert {"endpoints.json", "partitions.json", "_retry.json"} <= top_level
    assert (layer / "botocore" / "__init__.py").read_text() == (Path(botocore.__file__).read_text())
    assert (layer / "boto3" / "__init__.py").read_text() == Path(boto3.__file__).read_text()
    size = _size(layer)
    biggest_asset = max(_size(_asset(handler)) for handler in HANDLERS)
    print(f"SDK layer: {size / 1e6:.1f} MB unzipped; largest function asset {biggest_asset:,} B")
    assert size < LAYER_BUDGET_BYTES, f"{size:,} bytes"
    assert size + biggest_asset < LAMBDA_UNZIPPED_LIMIT_BYTES


def _app_functions(template: Template) -> dict[str, Any]:
    return {
        name: function
        for name, function in template.find_resources("AWS::Lambda::Function").items()
        if function["Properties"].get("Handler", "").startswith("lambdas.")
    }


def test_every_function_of_the_app_carries_the_stacks_one_sdk_layer(synth: Synth) -> None:
    functions = 0
    for stack in synth(FULL):
        template = Template.from_stack(stack)
        layers = template.find_resources("AWS::Lambda::LayerVersion")
        ours = _app_functions(template)
        if not ours:
            continue
        ((layer_id, layer),) = layers.items()
        assert layer["Properties"]["CompatibleRuntimes"] == ["python3.14"]
        assert botocore.__version__ in layer["Properties"]["Description"]
        for name, function in ours.items():
            assert function["Properties"]["Runtime"] == "python3.14", name
            assert function["Properties"]["Layers"] == [{"Ref": layer_id}], name
        functions += len(ours)
    # The notifier, the silence check, the storage and training analyzers (also the fleet's
    # plan, shard and merge steps) and the weekly report.
    assert functions == 5
