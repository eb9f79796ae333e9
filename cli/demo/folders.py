"""Where `gpu-insights demo` may write: a folder the user named that is new, empty, or a previous
demo's output it recognizes, never a folder of other files (an empty ``--out`` once wrote
sixteen files into the repository root, five of them into the ``dashboards`` package).

Checked before the demo's work starts, and made (with a mark that says the demo made it) once
the checkout is found, so a path that cannot be made is one line, not a traceback at the end.
"""

from pathlib import Path
from typing import Final

#: The file the demo leaves in each folder it writes: a later run recognizes the folder by it.
MARK: Final = ".gpu-insights-demo"
#: What else marks a previous output: the files every demo writes into --out last, and CDK's
#: own cloud assembly (its ``cdk.out`` version file and ``manifest.json``) in --cdk-out.
PREVIOUS_OUTPUT: Final = (("stacks.json", "agent-config.json"), ("cdk.out", "manifest.json"))


def recognized(path: Path) -> bool:
    """A folder this demo (or CDK, for the templates) wrote before."""
    return (path / MARK).is_file() or any(
        all((path / name).is_file() for name in names) for names in PREVIOUS_OUTPUT
    )


def check_folder(option: str, raw: str) -> Path:
    """The folder ``raw`` names, if the demo may write there; else ValueError naming why."""
    if not raw.strip():
        raise ValueError(f"{option} is empty: name a new or empty folder for the demo's files")
    path = Path(raw)
    existing = path
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        where = "" if existing == path else f": {existing}"
        raise ValueError(f"{option} {path}{where} is a file, not a folder")
    if path.is_dir() and any(path.iterdir()) and not recognized(path):
        raise ValueError(
            f"{option} {path} holds files the demo did not write: name a new or empty folder "
            "(or a previous demo's)"
        )
    return path


def make_folder(option: str, path: Path) -> None:
    """Make the folder and mark it the demo's; a path that cannot be made is one line."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        (path / MARK).write_text("Written by gpu-insights demo; it may write here again.\n")
    except OSError as err:
        raise ValueError(f"{option} {path}: cannot make the folder: {err.strerror or err}") from err
