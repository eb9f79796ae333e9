"""Where an incident is delivered: each channel behind one interface, so that the handler
sends every incident to every configured channel the same way and the sent ledger claims each
(incident, channel) pair once (``sent_ledger.claim_key``). A new channel is one module with a
class that has a ``name`` and a ``deliver``, added to the handler's ``channels``."""

from dataclasses import dataclass
from typing import Protocol

from lambdas.notifier.notification import Incident


class ChannelError(Exception):
    """A channel refused or could not take a message; the message names the channel and why.
    The handler releases the claim and raises, so that Lambda's retry delivers it."""


class ChannelTimeoutError(ChannelError):
    """The channel did not answer in time: the handler skips it for the rest of the
    invocation (each later page would wait out the same deadline) and the retry tries again."""


class AnswerLateError(ChannelTimeoutError):
    """The request was sent whole and its answer did not come in time: the page may have been
    shown. The handler keeps the claim, marked late, and a later invocation re-sends it once
    (``sent_ledger.Claim.LATE``), never more."""


@dataclass(frozen=True)
class Delivery:
    """What a channel says it did with one message."""

    channel: str
    #: The channel's own reference: SNS's message ID, the webhook's HTTP status.
    reference: str


class Channel(Protocol):
    @property
    def name(self) -> str:
        """Stable across deployments: it is part of every ledger key the channel claims."""
        ...

    def deliver(self, incident: Incident, *, deadline_s: float | None = None) -> Delivery:
        """Send one incident, or raise :class:`ChannelError`; ``deadline_s``: longer than the
        channel's own bound, for the one re-send of a page whose answer came late (a channel
        bounded otherwise, as SNS by its client's config, takes no notice)."""
        ...
