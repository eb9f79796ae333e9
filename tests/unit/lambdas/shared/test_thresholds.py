"""Each threshold default is written once (lambdas/shared/thresholds.py): no module spells it
as a literal beside the name it defaults, and the README's Settings table shows that value."""

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from lambdas.shared import thresholds

ROOT = Path(__file__).parents[4]
#: Where a default can be spelt: every folder that ships.
SOURCES = ("agent", "cdk", "cli", "dashboards", "lambdas")
#: Setting (or field) name -> the one default.
DEFAULTS = {
    "low_power_percent": thresholds.LOW_POWER_PERCENT,
    "low_power_window_minutes": thresholds.LOW_POWER_WINDOW_MINUTES,
    "throttle_window_minutes": thresholds.THROTTLE_WINDOW_MINUTES,
    "sm_active_percent": thresholds.IDLE_SM_ACTIVE_PERCENT,
}


def _literal(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, int | float)


def spelt_defaults(tree: ast.AST) -> Iterator[tuple[str, int]]:
    """(name, line) of each literal number given as a default of a threshold: a field or
    variable ``low_power_percent: float = 30.0``, a parameter default, a keyword argument, or
    a Lambda variable ``variable("LOW_POWER_PERCENT", ..., default=30.0)``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            for target in targets:
                name = target.id if isinstance(target, ast.Name) else None
                if name and name.lower() in DEFAULTS and _literal(node.value):
                    yield name, node.lineno
        elif isinstance(node, ast.arguments):
            args = [*node.posonlyargs, *node.args]
            pairs = list(zip(args[len(args) - len(node.defaults) :], node.defaults, strict=True))
            pairs += [(a, d) for a, d in zip(node.kwonlyargs, node.kw_defaults, strict=True) if d]
            yield from ((a.arg, a.lineno) for a, d in pairs if a.arg in DEFAULTS and _literal(d))
        elif isinstance(node, ast.Call):
            first = node.args[0] if node.args else None
            env = first.value if isinstance(first, ast.Constant) else None
            for kw in node.keywords:
                named = kw.arg in DEFAULTS or (
                    kw.arg == "default" and isinstance(env, str) and env.lower() in DEFAULTS
                )
                if named and _literal(kw.value):
                    yield str(kw.arg if kw.arg != "default" else env), node.lineno


def test_the_check_finds_a_default_spelt_again() -> None:
    code = (
        "class S:\n    low_power_window_minutes: int = 60\n"
        "def f(throttle_window_minutes=30): ...\n"
        'x = variable("LOW_POWER_PERCENT", PERCENT, default=30.0)\n'
        "y = T(sm_active_percent=10.0)\n"
        "z = T(low_power_percent=LOW_POWER_PERCENT)\n"
    )
    found = sorted(name for name, _ in spelt_defaults(ast.parse(code)))
    assert found == [
        "LOW_POWER_PERCENT",
        "low_power_window_minutes",
        "sm_active_percent",
        "throttle_window_minutes",
    ]


def test_no_shipped_module_spells_a_threshold_default() -> None:
    spelt = [
        f"{path.relative_to(ROOT)}:{line} {name}"
        for folder in SOURCES
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != Path(thresholds.__file__)
        for name, line in spelt_defaults(ast.parse(path.read_text(), str(path)))
    ]
    assert spelt == []


@pytest.mark.parametrize(
    "setting", ["low_power_percent", "low_power_window_minutes", "throttle_window_minutes"]
)
def test_the_settings_page_shows_the_default(setting: str) -> None:
    readme = (ROOT / "docs" / "settings.md").read_text()
    row = re.search(rf"^\| `{setting}` \| `([^`]*)` \|", readme, re.M)
    assert row is not None, setting
    assert float(row.group(1)) == DEFAULTS[setting]
