"""What `cdk synth` says when cdk.json's ``app`` command (``python3 -m cdk.app``) finds a Python
without the project installed: the first ``python3`` on PATH is the system's unless the
project's environment is active, and its first import of the project's packages would end in a
``No module named 'gpu_insights_agent'`` traceback. Standard library only, and readable by an
older Python (annotations postponed): it runs first, whatever ``python3`` that is."""

from __future__ import annotations

import sys
from importlib.util import find_spec
from typing import Final

#: How to run synth with the project's Python (README, "Deploy").
HOW: Final = (
    "run `make install`, then `source .venv/bin/activate` and `cdk synth` again "
    "(cdk.json runs `python3 -m cdk.app` with the first python3 on PATH)"
)


def missing(packages: tuple[str, ...]) -> list[str]:
    """The ``packages`` this Python cannot import."""
    return [name for name in packages if find_spec(name) is None]


def require(packages: tuple[str, ...]) -> None:
    """One line and exit status 1 where this Python lacks any of ``packages``."""
    lacking = missing(packages)
    if lacking:
        names = ", ".join(repr(name) for name in lacking)
        raise SystemExit(
            f"gpu-insights: {sys.executable} does not have the project installed (no module "
            f"{names}): {HOW}"
        )
