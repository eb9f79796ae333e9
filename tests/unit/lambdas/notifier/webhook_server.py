"""A chat webhook on localhost: records each POST and answers with the statuses it is given
(then 200), or waits past the caller's timeout."""

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Webhook:
    url: str
    posts: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    #: Statuses for the next POSTs, in order; 200 once they are used up.
    statuses: list[int] = field(default_factory=list)
    #: Seconds to wait before answering (a webhook that hangs).
    delay_s: float = 0.0
    released: threading.Event = field(default_factory=threading.Event)


@contextmanager
def webhook_server() -> Iterator[Webhook]:
    hook = Webhook(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers["Content-Length"])
            hook.posts.append(json.loads(self.rfile.read(length)))
            hook.headers.append(dict(self.headers))
            if hook.delay_s:
                hook.released.wait(hook.delay_s)
            status = hook.statuses.pop(0) if hook.statuses else 200
            self.send_response(status)
            self.end_headers()
            self.wfile.write(b"ok" if status == 200 else b"invalid_token")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    hook.url = f"http://127.0.0.1:{server.server_address[1]}/services/T000/B000/secret-token"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        hook.released.set()
        server.shutdown()
        server.server_close()
