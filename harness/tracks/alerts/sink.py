"""The alerts track's outside world: an alert webhook and a sandbox provider, recording calls.

One HTTP server on 127.0.0.1:<free port>, in a background thread of the harness process:

- `POST /alerts`    the alert webhook; every delivery is recorded (the checker counts these);
- `GET /sandboxes`  the sandbox provider's listing; every call is recorded and counted.

The checker reads deliveries and listings from here, never from what replicas say they sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.fault_tools.background import Background

HOST = "127.0.0.1"

DEFAULT_SANDBOXES: tuple[dict[str, str], ...] = (
    {"id": "sbx-1", "workspace": "ws-1", "state": "running"},
    {"id": "sbx-2", "workspace": "ws-2", "state": "paused"},
    {"id": "sbx-3", "workspace": "ws-3", "state": "running"},
)


@dataclass(frozen=True)
class Delivery:
    """One alert as it reached the webhook."""

    key: str
    creator: int | None
    priority: str
    text: str
    replica: str
    body: dict[str, Any]
    received_at: float  # time.monotonic() of the harness process


@dataclass(frozen=True)
class Listing:
    """One call to the sandbox provider's listing."""

    replica: str
    query: str
    received_at: float


@dataclass
class _Record:
    deliveries: list[Delivery] = field(default_factory=list)
    listings: list[Listing] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)


class AlertSink(Background):
    """Start with `start()` (or `with AlertSink() as sink`); accessors are thread-safe."""

    def __init__(
        self, *, host: str = HOST, port: int = 0, sandboxes: tuple[dict, ...] = DEFAULT_SANDBOXES
    ) -> None:
        self._record = _Record()
        self._changed = threading.Condition()
        self._sandboxes = [dict(s) for s in sandboxes]
        self._server = ThreadingHTTPServer((host, port), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(  # a short poll: stop() waits one poll interval
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
            name="racelab-sink", daemon=True,
        )

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> AlertSink:
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._server.shutdown()
            self._thread.join(5)
        self._server.server_close()

    # -- addresses (the env vars a stage reads) --------------------------------------------

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def alerts_url(self) -> str:
        """ALERT_WEBHOOK_URL."""
        return f"{self.url}/alerts"

    @property
    def sandboxes_url(self) -> str:
        """SANDBOX_API_URL."""
        return f"{self.url}/sandboxes"

    # -- what was recorded -----------------------------------------------------------------

    def deliveries(self) -> list[Delivery]:
        with self._changed:
            return list(self._record.deliveries)

    def listings(self) -> list[Listing]:
        with self._changed:
            return list(self._record.listings)

    def rejected(self) -> list[str]:
        """Requests the sink could not make sense of (a bad path or body), for diagnostics."""
        with self._changed:
            return list(self._record.rejected)

    def sent_by_key(self) -> Counter[str]:
        """Deliveries per alert key."""
        return Counter(d.key for d in self.deliveries())

    def listing_count(self) -> int:
        return len(self.listings())

    def clear(self) -> None:
        with self._changed:
            self._record = _Record()

    def wait_for(self, *, deliveries: int = 0, listings: int = 0, timeout: float = 10.0) -> None:
        """Block until at least that many deliveries and listings arrived, or TimeoutError."""
        with self._changed:
            done = self._changed.wait_for(
                lambda: (
                    len(self._record.deliveries) >= deliveries
                    and len(self._record.listings) >= listings
                ),
                timeout,
            )
        if not done:
            raise TimeoutError(
                f"sink waited {timeout}s for {deliveries} deliveries and {listings} listings"
            )

    # -- the HTTP side ---------------------------------------------------------------------

    def _add(self, item: Delivery | Listing) -> None:
        with self._changed:
            if isinstance(item, Delivery):
                self._record.deliveries.append(item)
            else:
                self._record.listings.append(item)
            self._changed.notify_all()

    def _reject(self, why: str) -> None:
        with self._changed:
            self._record.rejected.append(why)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                if self.path.split("?")[0] != "/alerts":
                    sink._reject(f"POST {self.path}")
                    return self._reply(404, {"error": "not found"})
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"null")
                    delivery = Delivery(
                        key=str(body["key"]),
                        creator=body.get("creator"),
                        priority=str(body["priority"]),
                        text=str(body["text"]),
                        replica=str(body["replica"]),
                        body=body,
                        received_at=time.monotonic(),
                    )
                except (ValueError, KeyError, TypeError) as exc:
                    sink._reject(f"POST /alerts: {exc!r}")
                    return self._reply(400, {"error": "bad alert"})
                sink._add(delivery)
                self._reply(202, {"ok": True})

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                path, _, query = self.path.partition("?")
                if path != "/sandboxes":
                    sink._reject(f"GET {self.path}")
                    return self._reply(404, {"error": "not found"})
                replica = self.headers.get("X-Replica", "?")
                sink._add(Listing(replica=replica, query=query, received_at=time.monotonic()))
                self._reply(200, sink._sandboxes)

            def _reply(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # the recorded deliveries are the log

        return Handler
