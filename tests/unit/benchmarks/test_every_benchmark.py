"""Every benchmark module has its smoke run here, so that none can rot unseen between two runs
of ``make bench`` (analyze_cli.py patched a name that had moved, and ``make bench`` crashed
after its storage section), and ``make bench`` runs every benchmark that has a ``main``."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BENCHMARKS = ROOT / "benchmarks"
#: The runner itself: ``make bench``, smoke-run at its benchmarks' small sizes by
#: test_run_all.py.
RUNNER = "run_all"


def _modules() -> list[str]:
    return sorted(p.stem for p in BENCHMARKS.glob("*.py") if p.stem not in ("__init__", RUNNER))


def test_every_benchmark_module_has_a_smoke_run() -> None:
    missing = [m for m in _modules() if not (Path(__file__).parent / f"test_{m}.py").exists()]
    assert missing == []


def test_make_bench_runs_every_benchmark_with_a_main() -> None:
    tree = ast.parse((BENCHMARKS / f"{RUNNER}.py").read_text())
    imported = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == "benchmarks"
        for alias in node.names
    }
    with_main = {
        m
        for m in _modules()
        if any(
            isinstance(n, ast.FunctionDef) and n.name == "main"
            for n in ast.parse((BENCHMARKS / f"{m}.py").read_text()).body
        )
    }
    assert with_main - imported == set()
