"""The training emitter installs light and runs on Python 3.9: what ``emitter.training`` imports
is the standard library and three small packages (``emitter``, ``emf``, ``contract``), the
distribution's core install needs nothing else, and vermin finds nothing in those modules that
needs a newer Python."""

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
#: The oldest Python the emitter supports (README, "Training metrics").
MINIMUM = "3.9"
#: ``X | Y`` (3.10) flagged anywhere, annotations evaluated as Python 3.9 evaluates them.
FLAGS = ("--feature", "union-types", "--eval-annotations")


def emitter_modules() -> list[str]:
    """Every module ``import emitter.training`` loads, found in a fresh interpreter without
    site-packages (``-S``), as in a training image that has nothing else."""
    loaded = subprocess.run(
        [sys.executable, "-S", "-c", "import sys, emitter.training; print(*sorted(sys.modules))"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    builtin = {*sys.stdlib_module_names, "__main__"}
    return [m for m in loaded if m.split(".")[0] not in builtin]


def test_the_emitter_imports_the_standard_library_and_its_three_packages_only() -> None:
    """Not the exporter, the CDK app or the analyzers: a training image gets none of them."""
    assert sorted(emitter_modules()) == [
        "contract",
        "contract.metrics",
        "emf",
        "emf.document",
        "emf.sinks",
        "emitter",
        "emitter.background_sender",
        "emitter.training",
    ]


def test_the_core_install_has_no_dependencies_and_extras_hold_the_rest() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] == []
    assert project["requires-python"] == f">={MINIMUM}"
    extras = project["optional-dependencies"]
    assert any(d.startswith("aws-cdk-lib") for d in extras["cdk"])
    assert any(d.startswith("nvidia-ml-py") for d in extras["exporter"])
    assert "eks-gpu-insights[cdk,exporter,analyzers,demo]" in extras["dev"]


def test_vermin_finds_the_emitter_runs_on_python_3_9() -> None:
    """vermin (https://github.com/netromdk/vermin) reads each file's syntax and library use."""
    vermin = shutil.which("vermin", path=str(Path(sys.executable).parent)) or shutil.which("vermin")
    if vermin is None:
        pytest.fail("vermin is not installed: pip install -e '.[dev]'")
    files = [str(ROOT / (m.replace(".", "/") + ".py")) for m in emitter_modules()]
    files = [f for f in files if Path(f).exists()]
    result = subprocess.run(
        [vermin, f"-t={MINIMUM}-", "--no-tips", "--violations", *FLAGS, *files],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
