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
