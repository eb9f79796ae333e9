"""Clients for Lambda handlers and the CLI: adaptive retries, so throttling slows a run down
instead of failing it. Created on first use, never at import time."""

from collections.abc import Iterable, Mapping
from typing import Any, cast

from botocore.client import BaseClient
from botocore.config import Config

MAX_ATTEMPTS = 10
RETRIES = Config(
    retries={"mode": "adaptive", "max_attempts": MAX_ATTEMPTS}, connect_timeout=5, read_timeout=30
)


class NotABotocoreClientError(TypeError):
    """Something other than a botocore client was handed to a handler."""


def client(service: str, *, session: Any = None) -> Any:
    if session is None:
        import boto3

        session = boto3.Session()
    # The stubs type each service name as a literal; the service is a parameter here.
    return cast(Any, session).client(service, config=RETRIES)


class ClientCache(dict[str, Any]):
    """A handler's clients, each made on first use and kept for the warm container; tests and
    the demo put moto-backed clients in under the service's name.

    Only botocore clients get in: a wrapper or stand-in would accept calls that botocore
    refuses against the service model, and a test would pass where AWS fails."""

    def __call__(self, service: str) -> Any:
        if service not in self:
            self[service] = client(service)
        return self[service]

    def __setitem__(self, service: str, value: Any) -> None:
        if not isinstance(value, BaseClient):
            raise NotABotocoreClientError(
                f"the {service} client is a {type(value).__name__}, not a botocore client: "
                "answer what moto lacks with botocore's Stubber or an event hook on a real client"
            )
        super().__setitem__(service, value)

    def update(self, *args: Any, **kwargs: Any) -> None:
        pairs: Iterable[tuple[str, Any]] = cast(Mapping[str, Any], args[0]).items() if args else ()
        for service, value in [*pairs, *kwargs.items()]:
            self[service] = value

    def setdefault(self, service: str, default: Any = None) -> Any:
        if service not in self:
            self[service] = default
        return self[service]
