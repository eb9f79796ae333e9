"""The demo draws its cluster from the realistic cluster model, which lives with the tests
(``tests/realistic/``: test oracles and the model never ship in a runtime package), so the demo
runs from a clone of the repository, as ``make demo`` does."""

import sys
from pathlib import Path
from typing import Final

#: The folder ``cli/`` sits in: the clone, where the package is installed editable from one.
CHECKOUT: Final = Path(__file__).resolve().parent.parent
#: The failure-log corpus: the demo's failed jobs print its lines (cli/demo_failures.py).
CORPUS: Final = "tests/data/failure_logs/corpus.json"
#: What the demo needs of the clone: the app's settings, the cluster model and the corpus.
NEEDS: Final = ("cdk.json", "tests/realistic/__init__.py", CORPUS)


class NotACheckoutError(ValueError):
    """The demo was started from an install that is not a clone of the repository."""


def use_checkout(root: Path | None = None) -> None:
    """Makes ``tests.realistic`` importable from the clone at ``root`` (by default the one
    ``cli/`` is in); outside a clone, one line that says what is missing and how to run the
    demo."""
    root = root or CHECKOUT
    missing = [need for need in NEEDS if not (root / need).is_file()]
    if missing:
        raise NotACheckoutError(
            f"the demo runs from a clone of the repository (git clone, then make demo); "
            f"{root} has no {' or '.join(missing)}"
        )
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
