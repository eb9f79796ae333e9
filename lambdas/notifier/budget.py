"""The notifier's time table: how long each of its calls may take at worst, and from that how
much of the invocation one delivery needs (``RESERVE_S``). One table, every figure derived from
the settings that bound the calls, so a change to a timeout moves the reserve with it.

The AWS calls (SNS publish, the ledger's claims and releases, SSM, Logs) are bounded by
``CLIENT_CONFIG``: ``CLIENT_ATTEMPTS`` attempts in all (standard mode's ``total_max_attempts``;
botocore's ``max_attempts`` would count retries only), each at most ``CONNECT_TIMEOUT_S`` to
connect and ``READ_TIMEOUT_S`` per read, with one backoff between them of at most
``FIRST_BACKOFF_S``: standard mode waits ``rand(0, 1) * min(base_scale * 2 ** i, 20)`` before
retry ``i`` (0 first), ``base_scale`` 1 s for throttling and less for any other error
(boto/botocore, botocore/retries/standard.py, ``ExponentialBackoff.delay_amount``). So one call
gives up within ``CLIENT_CALL_S``, and a slow publish cannot outlive the invocation after its
claim, as the shared RETRIES (10 adaptive attempts of 5 s + 30 s) would.
"""

from typing import Final

from botocore.config import Config

from lambdas.notifier.webhook import DEADLINE_S, LATE_DEADLINE_S

CLIENT_ATTEMPTS: Final = 2
CONNECT_TIMEOUT_S: Final = 1
READ_TIMEOUT_S: Final = 2
#: Standard mode's first backoff at most (``base_scale`` 1 s, ``2 ** 0``).
FIRST_BACKOFF_S: Final = 1.0
CLIENT_CONFIG: Final = Config(
    retries={"mode": "standard", "total_max_attempts": CLIENT_ATTEMPTS},
    connect_timeout=CONNECT_TIMEOUT_S,
    read_timeout=READ_TIMEOUT_S,
)
#: One AWS call at its worst: every attempt connecting and reading to its timeout, and the
#: backoff between them.
CLIENT_CALL_S: Final = (
    CLIENT_ATTEMPTS * (CONNECT_TIMEOUT_S + READ_TIMEOUT_S) + (CLIENT_ATTEMPTS - 1) * FIRST_BACKOFF_S
)


def delivery_s(deadline_s: float) -> float:
    """One delivery at its worst, each part at its bound: the claim (DynamoDB), the publish
    (an SNS call, or a webhook post given ``deadline_s``), and the write after it (the release
    of a claim whose publish failed, or the mark of one whose answer came late)."""
    return CLIENT_CALL_S + max(CLIENT_CALL_S, deadline_s) + CLIENT_CALL_S


#: No claim is made with less of the invocation left than this: a claim, a publish and a
#: release with DynamoDB, SNS and the webhook all as slow as their bounds let them be.
RESERVE_S: Final = delivery_s(DEADLINE_S)
#: The same for the one re-send of a page whose first answer came late.
RESEND_RESERVE_S: Final = delivery_s(LATE_DEADLINE_S)
