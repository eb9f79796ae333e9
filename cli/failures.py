"""How the command line ends on an AWS failure: one line on stderr and exit status 1 (bad input
is status 2). Kept apart so that commands raise it without importing the entry point."""


class AwsFailureError(Exception):
    """AWS could not be reached or refused (no region, an unknown profile, no credentials, an
    endpoint that does not answer, an API error), or an analysis read nothing; the message is
    the one line the command prints."""


class NoDataError(Exception):
    """A read-only command found nothing of the cluster it was named (no resources, no metrics):
    one line and exit status 3, never "No findings." and 0."""


#: The exit status of NoDataError.
NO_DATA_EXIT = 3


class ToolMissingError(Exception):
    """A program the command runs is not installed (Prometheus, which replays a ``--history``
    file: Debian's ``prometheus`` package): one line naming how to get it, exit status 4."""


#: The exit status of ToolMissingError.
TOOL_MISSING_EXIT = 4

#: What exit status 1 means where AWS is read; each command says its own (``Command.failed``).
AWS_FAILED = (
    "AWS could not be reached or refused (no credentials, an unknown profile, an API error)"
)

#: What each exit status means, the same for every command that can end with it; what 0 and
#: 1 mean is each command's own (``exit_status_help``'s ``done`` and ``failed``).
EXIT_STATUSES: dict[int, str] = {
    2: "bad input: an option, a setting or a file, named in one line",
    NO_DATA_EXIT: "nothing of the cluster was found to analyze (is its name right?)",
    TOOL_MISSING_EXIT: "a program it runs is not installed (Prometheus, for --history and "
    "demo --mode otel: apt-get install prometheus), named in one line",
}


def exit_status_help(
    command: str, statuses: tuple[int, ...], done: str = "done", failed: str = ""
) -> str:
    """The ``--help`` epilog that lists the command's exit statuses; 1, where it can end so,
    in the command's own words (``failed``)."""
    meanings = {**EXIT_STATUSES, 1: failed}
    lines = [f"exit status of {command}:", f"  0  {done}"]
    lines += [f"  {status}  {meanings[status]}" for status in sorted({2, *statuses})]
    return "\n".join(lines)
