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

    def deliver(self, incident: Incident) -> Delivery:
        """Send one incident, or raise :class:`ChannelError`."""
        ...
