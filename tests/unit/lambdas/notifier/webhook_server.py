"""A chat webhook on localhost: records each POST and answers with the statuses it is given
(then 200), or waits past the caller's timeout, or answers with one of the faults a real
server or the path to it can show (``FAULTS``)."""

import contextlib
import json
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

#: garbage: an answer that is not HTTP (http.client's BadStatusLine); redirect: a 302 to a
#: page that takes GETs; drip: a whole 200 answer, one byte every ``drip_s``; reset: the
#: connection reset (an RST, SO_LINGER 0) instead of an answer.
FAULTS: Final = ("garbage", "redirect", "drip", "reset")
_OK: Final = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"


@dataclass
class Webhook:
    url: str
    posts: list[dict[str, Any]] = field(default_factory=list)
    #: The posts answered 200 (a dripped 200 too): what a chat would show.
    shown: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    #: Paths GET from this server (where a followed redirect lands).
    gets: list[str] = field(default_factory=list)
    #: Statuses for the next POSTs, in order; 200 once they are used up.
    statuses: list[int] = field(default_factory=list)
    #: Faults for the next POSTs, in order (before ``statuses``): names from FAULTS.
    faults: list[str] = field(default_factory=list)
    #: Seconds to wait before answering (a webhook that hangs).
    delay_s: float = 0.0
    #: Seconds between two bytes of a dripped answer.
    drip_s: float = 0.5
    released: threading.Event = field(default_factory=threading.Event)


def _fault(handler: BaseHTTPRequestHandler, hook: Webhook, fault: str) -> None:
    handler.close_connection = True
    if fault == "garbage":
        handler.wfile.write(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
    elif fault == "redirect":
        handler.send_response(302)
        handler.send_header("Location", "/moved")
        handler.send_header("Content-Length", "0")
        handler.end_headers()
    elif fault == "drip":
        hook.shown.append(hook.posts[-1])  # answered 200, however slowly: the chat took it
        for byte in _OK:
            if hook.released.wait(hook.drip_s):
                return
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
    elif fault == "reset":
        linger = struct.pack("ii", 1, 0)
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
        handler.connection.close()  # with SO_LINGER 0: an RST, no FIN
    else:
        raise ValueError(f"no fault {fault!r}: one of {FAULTS}")


@contextmanager
def webhook_server() -> Iterator[Webhook]:
    hook = Webhook(url="")

    class Handler(BaseHTTPRequestHandler):
        def handle(self) -> None:
            # The client gave up: what the tests of timeouts do.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                super().handle()

        def finish(self) -> None:
            with contextlib.suppress(OSError):  # the connection was reset on purpose
                super().finish()

        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            hook.posts.append(json.loads(self.rfile.read(length)))
            hook.headers.append(dict(self.headers))
            if hook.faults:
                _fault(self, hook, hook.faults.pop(0))
                return
            if hook.delay_s:
                hook.released.wait(hook.delay_s)
            status = hook.statuses.pop(0) if hook.statuses else 200
            if status == 200:
                hook.shown.append(hook.posts[-1])
            self.send_response(status)
            self.end_headers()
            self.wfile.write(b"ok" if status == 200 else b"invalid_token")

        def do_GET(self) -> None:
            hook.gets.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    hook.url = f"http://127.0.0.1:{server.server_address[1]}/services/T000/B000/secret-token"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        hook.released.set()
        server.shutdown()
        server.server_close()
