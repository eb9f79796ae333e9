"""Lambda code as a plain asset holding exactly the modules a function imports.

The modules are found from the handler's own imports (followed through the project's packages,
so a new module ships the day a handler imports it, with no list to keep), and staged into a
fresh folder with those files only (the repository root holds .venv, caches and cdk.out, which no
exclude list keeps out reliably); CDK fingerprints the content, so an unchanged function keeps its
asset hash. No Docker, no pip: the runtime brings the standard library, and the SDK comes from the
app's own layer (cdk/constructs/sdk_layer.py: the boto3 and botocore the tests ran, not the
runtime's, since the CPU goals depend on it).
"""

import ast
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

from aws_cdk import aws_lambda as lambda_

REPO = Path(__file__).resolve().parents[2]
#: The packages a Lambda asset may hold, by top-level name, and the folder each is found under:
#: the functions' own code and the metric contract they read (agent/, installed alone).
SOURCES: Final[Mapping[str, Path]] = {"lambdas": REPO, "gpu_insights_agent": REPO / "agent"}
#: Project packages that never ship in a function: synth time, the operator's machine, tests.
NOT_SHIPPED: Final = frozenset({"cdk", "cli", "dashboards", "benchmarks", "tests"})


class LambdaImportError(ValueError):
    """A function's module imports project code that does not ship with a function."""


def lambda_code(handler: str) -> lambda_.Code:
    """The asset of the function whose handler is ``handler`` (``package.module.function``)."""
    return lambda_.Code.from_asset(str(stage_modules(handler_modules(handler))))


def handler_modules(handler: str, sources: Mapping[str, Path] = SOURCES) -> list[str]:
    """The files (relative to the asset's root) the handler's module imports, transitively
    within ``sources``, with the ``__init__.py`` of every package on the way."""
    start = handler.rsplit(".", 1)[0]
    if _module_file(start, sources) is None:
        raise FileNotFoundError(f"Lambda handler module {start} does not exist")
    found: dict[str, Path] = {}
    todo = [start]
    while todo:
        name = todo.pop()
        file = _module_file(name, sources)
        if file is None or name in found:
            continue
        found[name] = file
        parent = name.rpartition(".")[0]
        if parent:
            todo.append(parent)
        for imported in _imports(file, name):
            top = imported.split(".")[0]
            if top in NOT_SHIPPED:
                raise LambdaImportError(
                    f"{file.relative_to(sources[name.split('.')[0]])} imports {imported}: "
                    f"Lambda code never imports {top}/ (it does not ship with a function)"
                )
            if top in sources:
                todo.append(imported)
    return sorted(str(f.relative_to(sources[n.split(".")[0]])) for n, f in found.items())


def stage_modules(modules: list[str], sources: Mapping[str, Path] = SOURCES) -> Path:
    """Copies ``modules`` (paths relative to an asset's root, such as
    ``gpu_insights_agent/contract/xid.py``) from where ``sources`` keeps them into a new folder."""
    staging = Path(tempfile.mkdtemp(prefix="gpu-insights-lambda-"))
    for relative in modules:
        source = sources[Path(relative).parts[0]] / relative
        if not source.is_file():
            raise FileNotFoundError(f"Lambda module {relative} does not exist")
        target = staging / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return staging


def _module_file(name: str, sources: Mapping[str, Path]) -> Path | None:
    """The file that defines module ``name``, or None when it is not a project module (an
    attribute imported from a module, or a package outside ``sources``)."""
    root = sources.get(name.split(".", maxsplit=1)[0])
    if root is None:
        return None
    path = root.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imports(file: Path, name: str) -> Iterator[str]:
    """Every module name ``file`` (module ``name``) may import: ``from a import b`` yields
    ``a`` and ``a.b`` (b may be a module); relative imports are resolved against ``name``."""
    package = name if file.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(file.read_text(), str(file))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)
