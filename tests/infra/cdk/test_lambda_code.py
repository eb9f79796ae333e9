"""Each function's asset holds only the modules it lists; a missing one would deploy a function
that fails on its first invocation, so each handler is imported from its staged folder alone."""

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from cdk.constructs.lambda_code import stage_modules
from cdk.constructs.silence_check import MODULES as SILENCE_MODULES
from cdk.constructs.xid_notifier import MODULES as XID_MODULES
from cdk.stacks.analyzers_stack import REPORT_MODULES, STORAGE_MODULES, TRAINING_MODULES

# The repository is installed editable; its finder would hide a module missing from the asset.
IMPORT_ALONE = (
    "import sys, importlib;"
    "sys.meta_path[:] = [f for f in sys.meta_path"
    " if 'editable' not in getattr(f, '__module__', '')];"
    "m = importlib.import_module(sys.argv[1]); print(m.__file__)"
)


def import_alone(module: str, folder: Path, *, layer: Path | None = None) -> None:
    """Import ``module`` in a fresh interpreter that sees ``folder`` and site-packages only;
    with ``layer``, ``folder`` and that layer's ``python/`` only (``-S``: no site-packages)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    flags = []
    if layer is not None:
        flags, env["PYTHONPATH"] = ["-S"], str(layer)
    done = subprocess.run(
        [sys.executable, *flags, "-c", IMPORT_ALONE, module],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"{module}: {done.stderr}"
    assert done.stdout.strip().startswith(str(folder)), module


HANDLERS = [
    (XID_MODULES, "lambdas.xid_notifier.handler"),
    (STORAGE_MODULES, "lambdas.storage_analyzer.handler"),
    (TRAINING_MODULES, "lambdas.training_analyzer.handler"),
    (REPORT_MODULES, "lambdas.weekly_report.handler"),
    (SILENCE_MODULES, "lambdas.silence_check.handler"),
]


@pytest.mark.parametrize(("modules", "handler"), HANDLERS)
def test_each_handler_imports_from_its_asset_alone(modules: Sequence[str], handler: str) -> None:
    import_alone(handler, stage_modules(modules))


def test_a_module_that_does_not_exist_is_named() -> None:
    with pytest.raises(FileNotFoundError, match=r"lambdas/nowhere\.py"):
        stage_modules(["lambdas/nowhere.py"])
