"""The agent installs alone and light: what ``gpu_insights_agent.emitter.training`` (training
images) and ``gpu_insights_agent.quality.recorder`` (serving images) import is the standard
library and the agent's own packages, the agent's distribution needs nothing else, and vermin
finds nothing in those modules that needs a newer Python than those images have.
(`make test-old-python` installs agent/ alone into Python 3.9 and runs both senders' tests.)"""

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
AGENT = ROOT / "agent"
#: The oldest Python the emitter supports (docs/analyzers.md, "Three lines in a training script").
MINIMUM = "3.9"
#: ``X | Y`` (3.10) flagged anywhere, annotations evaluated as Python 3.9 evaluates them.
FLAGS = ("--feature", "union-types", "--eval-annotations")


#: The modules a user's image imports: the training emitter, the serving quality proxy.
EMITTER = "gpu_insights_agent.emitter.training"
QUALITY = "gpu_insights_agent.quality.recorder"


def emitter_modules(entry: str = EMITTER) -> list[str]:
    """Every module ``import <entry>`` loads, found in a fresh interpreter without
    site-packages (``-S``) that sees agent/ alone, as a training or serving image."""
    loaded = subprocess.run(
        [sys.executable, "-S", "-c", f"import sys, {entry}; print(*sorted(sys.modules))"],
        cwd=AGENT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    builtin = {*sys.stdlib_module_names, "__main__"}
    return [m for m in loaded if m.split(".")[0] not in builtin]


def test_the_emitter_imports_the_standard_library_and_the_agent_only() -> None:
    """Not the exporter, the CDK app or the analyzers: a training image gets none of them."""
    assert sorted(emitter_modules()) == [
        "gpu_insights_agent",
        "gpu_insights_agent.contract",
        "gpu_insights_agent.contract.metrics",
        "gpu_insights_agent.emf",
        "gpu_insights_agent.emf.document",
        "gpu_insights_agent.emf.sinks",
        "gpu_insights_agent.emitter",
        "gpu_insights_agent.emitter.background_sender",
        "gpu_insights_agent.emitter.otlp",
        "gpu_insights_agent.emitter.training",
        "gpu_insights_agent.otlp",
        "gpu_insights_agent.otlp.http_sink",
        "gpu_insights_agent.otlp.json_encoding",
    ]


def test_the_quality_proxy_imports_the_standard_library_and_the_agent_only() -> None:
    """A serving image gets the sender, the serving contract and the emitter's OTLP path, and
    neither the exporter nor the training loop."""
    quality, emitter = set(emitter_modules(QUALITY)), set(emitter_modules(EMITTER))
    assert quality - emitter == {
        "gpu_insights_agent.contract.serving",
        "gpu_insights_agent.quality",
        "gpu_insights_agent.quality.histogram",
        "gpu_insights_agent.quality.recorder",
    }
    assert emitter - quality == {EMITTER}


def test_the_agent_installs_alone_with_no_dependencies_and_the_exporter_as_an_extra() -> None:
    agent = tomllib.loads((AGENT / "pyproject.toml").read_text())
    assert agent["project"]["dependencies"] == []
    assert agent["project"]["requires-python"] == f">={MINIMUM}"
    assert any(
        d.startswith("nvidia-ml-py") for d in agent["project"]["optional-dependencies"]["exporter"]
    )
    assert agent["tool"]["setuptools"]["packages"]["find"]["include"] == ["gpu_insights_agent*"]


def test_the_operators_distribution_installs_one_module_and_no_package() -> None:
    """Only what a user imports is a top-level name: the agent (above) and the console script's
    module; ``cdk``, ``cli``, ``lambdas`` and ``dashboards`` run from the clone."""
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert root["tool"]["setuptools"]["packages"] == []
    assert root["tool"]["setuptools"]["py-modules"] == ["gpu_insights"]
    assert root["project"]["scripts"] == {"gpu-insights": "gpu_insights:main"}
    assert "eks-gpu-insights[cdk,analyzers,demo]" in root["project"]["optional-dependencies"]["dev"]


def test_ruff_holds_every_module_the_emitter_loads_to_python_3_9() -> None:
    """ruff's per-file target version (pyproject.toml) keeps its fixes and rules to what 3.9
    runs (``zip(strict=...)`` is 3.10: B905's fix would break the emitter) on each module a
    training image imports."""
    from fnmatch import fnmatch

    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    targets = root["tool"]["ruff"]["per-file-target-version"]
    py39 = [pattern for pattern, version in targets.items() if version == "py39"]
    unheld = []
    for path in emitter_files(EMITTER) + emitter_files(QUALITY):
        relative = str(Path(path).relative_to(ROOT))
        if Path(path).stat().st_size and not any(fnmatch(relative, p) for p in py39):
            unheld.append(relative)
    assert unheld == []


def emitter_files(entry: str = EMITTER) -> list[str]:
    """The file of each module ``emitter_modules`` names."""
    files = []
    for module in emitter_modules(entry):
        path = AGENT.joinpath(*module.split("."))
        files.append(str(path / "__init__.py" if path.is_dir() else path.with_suffix(".py")))
    return files


@pytest.mark.parametrize("entry", [EMITTER, QUALITY])
def test_vermin_finds_the_emitter_runs_on_python_3_9(entry: str) -> None:
    """vermin (https://github.com/netromdk/vermin) reads each file's syntax and library use."""
    vermin = shutil.which("vermin", path=str(Path(sys.executable).parent)) or shutil.which("vermin")
    if vermin is None:
        pytest.fail("vermin is not installed: pip install -e '.[dev]'")
    files = emitter_files(entry)
    result = subprocess.run(
        [vermin, f"-t={MINIMUM}-", "--no-tips", "--violations", *FLAGS, *files],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
