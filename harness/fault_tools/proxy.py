"""A small TCP proxy between an app and Redis, for the alerts track's faults.

It runs an asyncio loop in a background thread of the harness process (so it dies with it) and
has four modes, switched from outside the stage code at any moment:

- pass-through: bytes flow both ways untouched;
- slow: every chunk waits `latency` seconds before it is forwarded (beyond the app's 1.5 s
  client timeout this is "Redis slower than the timeout": the request hangs, it does not fail);
- closed: the port stops listening and every open connection is dropped (connection refused);
- re-pointed: new connections go to another upstream (a promoted replica), old ones are dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any

from harness.fault_tools.background import Background

HOST = "127.0.0.1"
CONTROL_TIMEOUT = 5.0
CHUNK = 65536


class TcpProxy(Background):
    """Forward 127.0.0.1:`port` to `upstream`; control methods are thread-safe and synchronous."""

    def __init__(self, upstream: tuple[str, int], *, host: str = HOST, port: int = 0) -> None:
        self.host = host
        self.port = port
        self._upstream = upstream
        self._latency = 0.0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"racelab-proxy-{upstream[1]}", daemon=True
        )
        self._server: asyncio.Server | None = None
        self._links: set[_Link] = set()
        self.accepted = 0

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> TcpProxy:
        self._thread.start()
        self._call(self._listen())
        return self

    def stop(self) -> None:
        """Drop every connection, stop listening and end the loop thread. Idempotent."""
        if not self._thread.is_alive():
            return
        self._call(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(CONTROL_TIMEOUT)
        self._loop.close()

    # -- what the app connects to ----------------------------------------------------------

    @property
    def address(self) -> tuple[str, int]:
        return (self.host, self.port)

    @property
    def url(self) -> str:
        """A Redis URL pointing at the proxy (db 0)."""
        return f"redis://{self.host}:{self.port}/0"

    @property
    def upstream(self) -> tuple[str, int]:
        return self._upstream

    @property
    def latency(self) -> float:
        return self._latency

    @property
    def listening(self) -> bool:
        return self._server is not None

    @property
    def open_connections(self) -> int:
        return len(self._links)

    # -- faults ----------------------------------------------------------------------------

    def pass_through(self) -> None:
        """No added latency, listening again if closed."""
        self._latency = 0.0
        self.open()

    def set_latency(self, seconds: float) -> None:
        """Delay every chunk read from now on by `seconds`, both directions."""
        if seconds < 0:
            raise ValueError("latency must be >= 0")
        self._latency = seconds

    def close(self) -> None:
        """Refuse new connections and drop every open one (the store is down)."""
        self._call(self._close())

    def open(self) -> None:
        """Listen again on the same port."""
        self._call(self._listen())

    def drop_connections(self) -> None:
        self._call(self._drop_all())

    def repoint(self, upstream: tuple[str, int], *, drop_existing: bool = True) -> None:
        """Send new connections to `upstream`; by default drop the ones bound to the old one."""
        self._upstream = upstream
        if drop_existing:
            self.drop_connections()

    # -- inside the loop thread ------------------------------------------------------------

    def _call(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(CONTROL_TIMEOUT)

    async def _listen(self) -> None:
        if self._server is not None:
            return
        self._server = await asyncio.start_server(
            self._accept, self.host, self.port, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        await self._drop_all()

    async def _shutdown(self) -> None:
        await self._close()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _drop_all(self) -> None:
        for link in list(self._links):
            link.abort()
        self._links.clear()

    async def _accept(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self.accepted += 1
        try:
            up_r, up_w = await asyncio.wait_for(
                asyncio.open_connection(*self._upstream), CONTROL_TIMEOUT
            )
        except (TimeoutError, OSError):
            client_w.transport.abort()
            return
        link = _Link(client_w, up_w)
        self._links.add(link)
        try:
            await asyncio.gather(self._pump(client_r, up_w), self._pump(up_r, client_w))
        except asyncio.CancelledError:
            pass  # stop(): end quietly (asyncio logs a cancelled connection handler as an error)
        finally:
            link.abort()
            self._links.discard(link)

    async def _pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(CHUNK):
                if self._latency:
                    await asyncio.sleep(self._latency)
                if dst.is_closing():
                    return
                dst.write(data)
                await dst.drain()
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(OSError, RuntimeError):
                if not dst.is_closing() and dst.can_write_eof():
                    dst.write_eof()


class _Link:
    """The two sockets of one proxied connection."""

    def __init__(self, client: asyncio.StreamWriter, upstream: asyncio.StreamWriter) -> None:
        self.client = client
        self.upstream = upstream

    def abort(self) -> None:
        self.client.transport.abort()
        self.upstream.transport.abort()
