"""The demo runs from a clone: it draws its cluster from tests/realistic/, which no runtime
package ships."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import cli.checkout
from cli.checkout import NotACheckoutError, use_checkout
from cli.main import main

# A fresh interpreter that knows nothing of the clone (not on sys.path, no PYTHONPATH), loads
# cli/checkout.py by its path, and imports the model through it.
FRESH = (
    "import importlib.util, sys;"
    "root = sys.argv[1];"
    "sys.path[:] = [p for p in sys.path if p not in ('', root)];"
    "spec = importlib.util.spec_from_file_location('checkout', root + '/cli/checkout.py');"
    "checkout = importlib.util.module_from_spec(spec); spec.loader.exec_module(checkout);"
    "checkout.use_checkout();"
    "import tests.realistic.pods as pods; print(pods.__file__)"
)


def test_from_a_clone_the_model_imports_wherever_the_command_starts(tmp_path: Path) -> None:
    root = cli.checkout.CHECKOUT
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", FRESH, str(root)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(root / "tests" / "realistic" / "pods.py")


def test_outside_a_clone_the_demo_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(NotACheckoutError, match=r"has no cdk\.json or tests/realistic"):
        use_checkout(tmp_path)
    monkeypatch.setattr(cli.checkout, "CHECKOUT", tmp_path)
    assert main(["demo", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("gpu-insights demo: the demo runs from a clone of the repository")
