"""The lines the layout draws (docs/layout.md, after the design card): a folder shows where its
code runs, and dependencies run one way. A runtime package that imports across a line would ship
code where it cannot run (Lambda code importing the CDK app), or make the agent need more than
a training image has."""

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Each runtime folder, the top-level names of the project its modules may import, and the
#: third-party packages they may import beyond the standard library.
PROJECT = {"gpu_insights_agent", "cdk", "lambdas", "dashboards", "cli", "tests", "benchmarks"}
RULES: dict[str, tuple[set[str], set[str]]] = {
    # Runs in the cluster and installs alone: itself only; the exporter reads NVML and may send
    # with boto3 (its extra), or over OTLP with the OpenTelemetry SDK (the otlp extra), whose
    # OTLP/HTTP exporter sends with requests (the exporter reads each answer's status from
    # that session: exporter/otlp_sink.py).
    "agent/gpu_insights_agent": (
        {"gpu_insights_agent"},
        {"pynvml", "boto3", "botocore", "opentelemetry", "requests"},
    ),
    # The Lambda runtime: the functions' code and the metric contract they read.
    "lambdas": ({"lambdas", "gpu_insights_agent"}, {"boto3", "botocore"}),
    # Pure functions the CDK app and the demo render.
    "dashboards": ({"dashboards", "lambdas", "gpu_insights_agent"}, set()),
    # Synth time: builds what the others define.
    "cdk": (
        {"cdk", "lambdas", "dashboards", "gpu_insights_agent"},
        {"aws_cdk", "constructs", "cdk_nag", "jsii", "botocore"},
    ),
}


def imports(path: Path) -> Iterator[tuple[int, str]]:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module


def crossings(folder: str) -> list[str]:
    own, third_party = RULES[folder]
    allowed = own | third_party | set(sys.stdlib_module_names)
    return [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, name in imports(path)
        if name.split(".")[0] not in allowed
    ]


@pytest.mark.parametrize("folder", sorted(RULES))
def test_no_runtime_package_imports_across_its_line(folder: str) -> None:
    assert crossings(folder) == []


def test_a_function_never_imports_another_functions_handler() -> None:
    """Each function ships alone (cdk/constructs/lambda_code.py); what two share is in shared/."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted((ROOT / "lambdas").rglob("*.py"))
        for line, name in imports(path)
        if name.startswith("lambdas.")
        and name.endswith(".handler")
        and name.split(".")[1] != path.relative_to(ROOT / "lambdas").parts[0]
    ]
    assert offenders == []


#: The folders a packaged install ships: none may import the tests, which it would not have.
SHIPPED = ("agent", "cdk", "cli", "dashboards", "lambdas")


@pytest.mark.parametrize("folder", SHIPPED)
def test_shipped_code_never_imports_the_tests(folder: str) -> None:
    """The demo's cluster model ships with the command (cli/demo/realistic/); test oracles stay
    in tests/ (benchmarks/ may read the tests' data, as the classifier's accuracy on the
    failure-log corpus does)."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line, name in imports(path)
        if name.split(".")[0] == "tests"
    ]
    assert offenders == []


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT / "agent" if path.is_relative_to(ROOT / "agent") else ROOT)
    parts = rel.with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Each project module and the project modules it imports, at module level or inside a
    function (an import moved into a function hides a circle, it does not end it)."""
    paths = [
        p
        for folder in ("agent/gpu_insights_agent", *SHIPPED[1:])
        for p in (ROOT / folder).rglob("*.py")
    ]
    modules = {module_name(p): p for p in paths}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        targets: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets.add(node.module)
                targets |= {f"{node.module}.{alias.name}" for alias in node.names}
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of two or more modules (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                members.append(w)
                if w == v:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_no_import_circles() -> None:
    assert circles(import_graph()) == []


def test_a_circle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_a_crossing_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker itself: Lambda code that imports the CDK settings is named by file and line."""
    (tmp_path / "lambdas").mkdir()
    (tmp_path / "lambdas" / "rules.py").write_text("import json\n\nfrom cdk.settings import X\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert crossings("lambdas") == ["lambdas/rules.py:3: cdk.settings"]


def test_the_top_level_is_the_design_cards() -> None:
    top = {p.name for p in ROOT.iterdir() if not p.name.startswith(".")}
    expected = {
        "pyproject.toml", "cdk", "agent", "lambdas", "dashboards", "tests", "cdk.json",
        "README.md", "cli", "benchmarks", "docs", "Makefile",
    }  # fmt: skip
    # The policy tests' Node dependencies (tests/infra/policy), the Python lock make install
    # installs from, and what a checkout grows that git ignores (environments, outputs), are
    # not layout.
    ignored = {
        "package.json", "package-lock.json", "requirements.lock", "node_modules", "out",
        "cdk.out", "build", "dist", "cdk.context.json",
    }  # fmt: skip
    assert {name for name in top if not name.endswith(".egg-info")} - ignored == expected


def _picture() -> str:
    """The fenced picture at the top of docs/layout.md."""
    return (ROOT / "docs" / "layout.md").read_text().split("```")[1]


def test_the_picture_shows_where_every_command_and_cli_module_lives() -> None:
    """A newcomer finds a command's code from the picture alone: every command is drawn, every
    path the picture names exists, and every module or package at cli/'s top level is named.
    Issue: `status`, `explain-failure` and `agent-config` were missing, and manifest's module
    was drawn as cli/main.py after it moved."""
    from cli.main import COMMANDS

    picture = _picture()
    for name in COMMANDS:
        assert re.search(rf"^   [\w ,|-]*\b{re.escape(name)}\b", picture, re.M), name
    named = set(re.findall(r"\bcli/[\w/]+(?:\.py|/)", picture))
    assert named, "the picture names no cli path"
    for path in named:
        assert (ROOT / path).exists(), path
    top = {
        p.name + ("/" if p.is_dir() else "")
        for p in (ROOT / "cli").iterdir()
        if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").exists()
    }
    assert {f"cli/{name}" for name in top} <= named
    # The bound: the command line in rooms, at most 12 Python files at its top level.
    assert len(list((ROOT / "cli").glob("*.py"))) <= 12
