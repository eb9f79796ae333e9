"""The ``gpu-insights`` console script. It is installed by the core install too (the training
emitter, Python 3.9+, no dependencies), where the command line cannot run: say so in one line
instead of a traceback. Kept to syntax Python 3.9 reads."""

import sys
from typing import Optional

NEEDS = "gpu-insights needs Python 3.11+ and pip install 'eks-gpu-insights[analyzers]'"


def main(argv: Optional[list[str]] = None) -> int:
    if sys.version_info < (3, 11):
        print(f"{NEEDS} (this is Python {sys.version.split()[0]})", file=sys.stderr)
        return 2
    try:
        from cli.main import main as command_line
    except ModuleNotFoundError as err:
        print(f"{NEEDS} (missing: {err.name})", file=sys.stderr)
        return 2
    return command_line(argv)
