"""What the demo reads from the clone besides code: the app's settings (cdk.json) and the
failure-log corpus its failed jobs print (tests/data/failure_logs/, each log with its source).
The cluster model it runs on ships with the command (cli/demo/realistic/); these two files are
the clone's, so the demo runs from a clone, as ``make demo`` does, and says so in one line
elsewhere."""

from pathlib import Path
from typing import Final

#: The folder ``cli/`` sits in: the clone, where the package is installed editable from one.
CHECKOUT: Final = Path(__file__).resolve().parent.parent
#: The failure-log corpus: the demo's failed jobs print its lines (cli/demo/failures.py).
CORPUS: Final = "tests/data/failure_logs/corpus.json"
#: What the demo needs of the clone: the app's settings and the corpus.
NEEDS: Final = ("cdk.json", CORPUS)


class NotACheckoutError(ValueError):
    """The demo was started from an install that is not a clone of the repository."""


def use_checkout(root: Path | None = None) -> None:
    """Nothing, where the clone at ``root`` (by default the one ``cli/`` is in) has what the
    demo reads; else one line that says what is missing and how to run the demo."""
    root = root or CHECKOUT
    missing = [need for need in NEEDS if not (root / need).is_file()]
    if missing:
        raise NotACheckoutError(
            f"the demo runs from a clone of the repository (git clone, then make demo); "
            f"{root} has no {' or '.join(missing)}"
        )
