"""A local OTLP/HTTP metrics endpoint for the senders' tests (the training emitter, the
quality proxy): it keeps each request's path, content type and body, and answers ``status``;
and one that never answers."""

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.unit.agent.otlp.otlp_json import Row, parse, rows


class Endpoint:
    """An OTLP/HTTP metrics endpoint on a free local port; answers ``status``."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.headers: list[tuple[str, str]] = []
        self.status = 200
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                endpoint.headers.append((self.path, self.headers["Content-Type"]))
                if endpoint.status == 200:
                    endpoint.bodies.append(body)
                self.send_response(endpoint.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/metrics"

    def rows(self) -> list[Row]:
        return [row for body in self.bodies for row in rows(parse(body))]


@contextmanager
def silent_endpoint() -> Iterator[str]:
    """The URL of a listener that takes connections and never reads nor answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1/metrics"
    finally:
        listener.close()
