"""The agent's tests' shared fixture: a local OTLP/HTTP endpoint (the training emitter's and the
quality proxy's senders post to it)."""

import threading
from collections.abc import Iterator

import pytest

from tests.unit.agent.otlp.otlp_endpoint import Endpoint


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    e = Endpoint()
    thread = threading.Thread(target=e.server.serve_forever, daemon=True)
    thread.start()
    yield e
    e.server.shutdown()
    e.server.server_close()
