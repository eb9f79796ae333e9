"""Clients for Lambda handlers and the CLI: adaptive retries, so throttling slows a run down
instead of failing it. Created on first use, never at import time."""

from typing import Any, cast

from botocore.config import Config

MAX_ATTEMPTS = 10
RETRIES = Config(
    retries={"mode": "adaptive", "max_attempts": MAX_ATTEMPTS}, connect_timeout=5, read_timeout=30
)


def client(service: str, *, session: Any = None) -> Any:
    if session is None:
        import boto3

        session = boto3.Session()
    # The stubs type each service name as a literal; the service is a parameter here.
    return cast(Any, session).client(service, config=RETRIES)


class ClientCache(dict[str, Any]):
    """A handler's clients, each made on first use and kept for the warm container; tests and
    the demo put moto-backed clients in under the service's name."""

    def __call__(self, service: str) -> Any:
        if service not in self:
            self[service] = client(service)
        return self[service]
