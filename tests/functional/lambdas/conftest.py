"""The app synthesized once per session: the IAM-enforced tests read each function's role
policy from these templates."""

from typing import Any

import pytest

from cli.demo.storage import DEMO_CLUSTER
from tests.functional.lambdas.iam import ACCOUNT, REGION

#: The deployment the functional tests run as: the demo's cluster, the storage tests' buckets.
CONTEXT = {
    "cluster_name": DEMO_CLUSTER,
    "account": ACCOUNT,
    "region": REGION,
    "storage_buckets": "train-data,checkpoints",
    # The storage role with the fleet state machine's grants (shards/*), for its modes.
    "storage_fleet_volumes": "100000",
    # The training role with the same grants, for its modes.
    "training_fleet_jobs": "10000",
    # The EMF sink (OTLP is OTel mode's default): every function deploys, the silence check's
    # role too.
    "exporter_sink": "emf",
}


@pytest.fixture(scope="session")
def templates(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    from aws_cdk import App

    from cdk.app import build
    from cdk.settings import settings_from_context

    app = App(outdir=str(tmp_path_factory.mktemp("cdk.out")))
    build(app, settings_from_context(CONTEXT))
    return [stack.template for stack in app.synth().stacks]
