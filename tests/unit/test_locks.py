"""The locks `make install` installs from (requirements*.lock) against what the project asks for:
a lock that has fallen behind a pyproject.toml range, or that leaves a requirement out, would
install something other than what the suite was run with, or fail on a fresh clone only."""

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)", re.MULTILINE)


def pins(lock: str) -> dict[str, str]:
    return {canonicalize_name(n): v for n, v in PIN.findall((ROOT / lock).read_text())}


def _asked(pyproject: Path, extras: set[str]) -> list[Requirement]:
    project = tomllib.loads(pyproject.read_text())["project"]
    wanted = [Requirement(r) for r in project["dependencies"]]
    for extra, requirements in project.get("optional-dependencies", {}).items():
        if extra in extras:
            wanted += [Requirement(r) for r in requirements]
    own = {"eks-gpu-insights", "eks-gpu-insights-agent"}
    return [r for r in wanted if canonicalize_name(r.name) not in own]


def test_every_requirement_of_the_install_is_pinned_within_its_range() -> None:
    locked = pins("requirements.lock")
    asked = _asked(ROOT / "pyproject.toml", {"cdk", "analyzers", "demo", "dev"})
    asked += _asked(ROOT / "agent" / "pyproject.toml", {"exporter", "otlp"})
    assert asked
    for requirement in asked:
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{requirement} is not in requirements.lock: run make lock"
        assert requirement.specifier.contains(locked[name], prereleases=True), (
            f"requirements.lock pins {name}=={locked[name]}, outside {requirement}"
        )


def _makefile(name: str) -> str:
    found = re.search(rf"^{name} := (.+)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert found is not None, name
    return found.group(1).strip()


@pytest.mark.parametrize(
    ("lock", "asked"),
    [
        ("tests/requirements-checkov.lock", f"checkov=={_makefile('CHECKOV_VERSION')}"),
        ("tests/requirements-old-python.lock", _makefile("OLD_PYTHON_TOOLS")),
    ],
)
def test_the_tool_environments_locks_pin_what_the_makefile_asks_for(lock: str, asked: str) -> None:
    locked = pins(lock)
    for requirement in map(Requirement, asked.split()):
        name = canonicalize_name(requirement.name)
        assert name in locked, f"{requirement} is not in {lock}: run make lock"
        assert requirement.specifier.contains(locked[name], prereleases=True), lock
