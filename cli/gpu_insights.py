"""The ``gpu-insights`` console script: the one module the distribution installs. It runs the
command line of the clone it was installed from (``pip install -e .``, as ``make install`` does),
so the project's packages never sit in site-packages under names another project could use."""

import sys
from pathlib import Path

#: The clone this module lives in (an editable install runs it from there).
CHECKOUT = Path(__file__).resolve().parent.parent
NEEDS = "gpu-insights runs from a clone of the repository: git clone, then make install"


def main(argv: list[str] | None = None) -> int:
    if not (CHECKOUT / "cli" / "main.py").is_file():
        print(f"{NEEDS} ({CHECKOUT} is not one)", file=sys.stderr)
        return 2
    if str(CHECKOUT) not in sys.path:
        sys.path.append(str(CHECKOUT))
    try:
        from cli.main import main as command_line
    except ModuleNotFoundError as err:
        print(f"{NEEDS} (missing: {err.name})", file=sys.stderr)
        return 2
    return command_line(argv)
