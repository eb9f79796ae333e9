"""Each function's asset holds the modules its handler imports, found from the imports; a
missing one would deploy a function that fails on its first invocation, so each handler is
imported from its staged folder alone."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cdk.constructs.lambda_code import LambdaImportError, handler_modules, stage_modules

# The repository is installed editable; its finder would hide a module missing from the asset.
IMPORT_ALONE = (
    "import sys, importlib;"
    "sys.meta_path[:] = [f for f in sys.meta_path"
    " if 'editable' not in getattr(f, '__module__', '')];"
    "sys.path[:] = [p for p in sys.path if not p.endswith('/agent')];"
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


#: Every function's handler, as its construct names it.
HANDLERS = [
    "lambdas.notifier.handler.handler",
    "lambdas.storage_analyzer.handler.handler",
    "lambdas.training_analyzer.handler.handler",
    "lambdas.weekly_report.handler.handler",
    "lambdas.silence_check.handler.handler",
]


@pytest.mark.parametrize("handler", HANDLERS)
def test_each_handler_imports_from_its_asset_alone(handler: str) -> None:
    import_alone(handler.rsplit(".", 1)[0], stage_modules(handler_modules(handler)))


def test_an_asset_holds_what_its_handler_imports_and_nothing_else() -> None:
    """The silence check reads the metric contract but not the XID table or another function."""
    modules = handler_modules("lambdas.silence_check.handler.handler")
    assert "gpu_insights_agent/contract/metrics.py" in modules
    assert "gpu_insights_agent/__init__.py" in modules
    assert "lambdas/silence_check/silence.py" in modules
    assert "gpu_insights_agent/contract/xid.py" not in modules
    assert not [m for m in modules if m.startswith(("lambdas/weekly_report", "lambdas/notifier"))]


def test_a_handler_that_does_not_exist_is_named() -> None:
    with pytest.raises(FileNotFoundError, match=r"lambdas\.nowhere\.handler"):
        handler_modules("lambdas.nowhere.handler.handler")


def test_lambda_code_that_imports_synth_time_code_fails_at_synth(tmp_path: Path) -> None:
    package = tmp_path / "lambdas" / "fn"
    package.mkdir(parents=True)
    (tmp_path / "lambdas" / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "handler.py").write_text("from .rules import LIMIT\n")
    (package / "rules.py").write_text("from cdk.settings import Settings\nLIMIT = 1\n")
    with pytest.raises(LambdaImportError, match=r"lambdas/fn/rules\.py imports cdk\.settings"):
        handler_modules("lambdas.fn.handler.handler", {"lambdas": tmp_path})
