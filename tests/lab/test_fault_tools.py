"""The tools under the alerts track's faults, on their own: the TCP proxy, throwaway
redis-server processes and failover pairs, and the alert sink. Everything runs against real
servers. What the stages do with them is the track's business (test_alerts_track.py).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import redis.asyncio
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from harness.fault_tools.failover import FailoverPair, start_failover_pair
from harness.fault_tools.proxy import TcpProxy
from harness.infra.redis_server import RedisServer, start_redis_server, wait_until
from harness.tracks.alerts.sink import AlertSink
from tests.helpers import ROOT, alive

# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    server = start_redis_server()
    yield server
    server.stop()


@pytest.fixture
def failover_pair() -> Iterator[FailoverPair]:
    pair = start_failover_pair()
    yield pair
    pair.stop()


@pytest.fixture
def sink() -> Iterator[AlertSink]:
    with AlertSink() as running:
        yield running


def _async_client(url: str) -> redis.asyncio.Redis:
    """The client the 01 app uses: 1.5 s timeouts, one attempt."""
    return redis.asyncio.Redis.from_url(
        url, socket_timeout=1.5, socket_connect_timeout=1.5, retry=Retry(NoBackoff(), 0)
    )


# -- fault tools ---------------------------------------------------------------------------


def test_proxy_passes_commands_through(redis_server: RedisServer) -> None:
    """Through a pass-through proxy a SET and GET reach the real server."""
    with (
        TcpProxy(redis_server.address) as proxy,
        redis.Redis(host=proxy.host, port=proxy.port, socket_timeout=5) as client,
    ):
        client.set("k", "v")
        assert client.get("k") == b"v"
    assert redis_server.client().get("k") == b"v"


def test_slow_proxy_makes_the_client_time_out_instead_of_hanging(
    redis_server: RedisServer,
) -> None:
    """With latency beyond 1.5 s, the app's client raises its own TimeoutError; then recovers."""
    with TcpProxy(redis_server.address) as proxy:
        proxy.set_latency(3.0)

        async def get_slow() -> None:
            async with _async_client(proxy.url) as client:
                await client.get("k")

        with pytest.raises(redis.exceptions.TimeoutError):
            asyncio.run(get_slow())

        proxy.pass_through()

        async def get_fast() -> bytes | None:
            async with _async_client(proxy.url) as client:
                await client.set("k", "v")
                return await client.get("k")

        assert asyncio.run(get_fast()) == b"v"


def test_closed_proxy_refuses_connections_and_reopens(redis_server: RedisServer) -> None:
    """A closed proxy is 'Redis down': ConnectionError at once; opened again, it serves."""
    with TcpProxy(redis_server.address) as proxy:
        with redis.Redis(host=proxy.host, port=proxy.port, socket_timeout=5) as client:
            assert client.ping() is True
            proxy.close()
            assert proxy.open_connections == 0

        async def ping() -> bool:
            async with _async_client(proxy.url) as client:
                return await client.ping()

        with pytest.raises(redis.exceptions.ConnectionError):
            asyncio.run(ping())
        proxy.open()
        assert asyncio.run(ping()) is True


def test_stopped_redis_server_refuses_connections() -> None:
    """A stopped redis-server is down for real: ConnectionError, and its temp dir is gone."""
    server = start_redis_server()
    url, workdir = server.url, server.workdir
    server.stop()
    assert workdir.exists() is False

    async def ping() -> bool:
        async with _async_client(url) as client:
            return await client.ping()

    with pytest.raises(redis.exceptions.ConnectionError):
        asyncio.run(ping())


def test_repointed_proxy_reaches_the_new_upstream(redis_server: RedisServer) -> None:
    """After repoint(), new connections land on the other server and old ones are dropped."""
    other = start_redis_server()
    try:
        redis_server.client().set("who", "first")
        other.client().set("who", "second")
        with (
            TcpProxy(redis_server.address) as proxy,
            redis.Redis(host=proxy.host, port=proxy.port, socket_timeout=5) as client,
        ):
            assert client.get("who") == b"first"
            proxy.repoint(other.address)
            assert proxy.open_connections == 0
            assert client.get("who") == b"second"  # redis-py reconnects through the proxy
    finally:
        other.stop()


def test_replica_receives_writes_while_the_link_is_up(failover_pair: FailoverPair) -> None:
    """Before the cut, a claim on the primary reaches the replica (the pair really replicates)."""
    assert failover_pair.primary.client().set("claim", "A", nx=True, px=60_000) is True
    failover_pair.wait_in_sync()
    assert failover_pair.replica.client().get("claim") == b"A"


def test_failover_after_a_cut_link_loses_the_claim(failover_pair: FailoverPair) -> None:
    """A claim written after the link is cut is absent on the promoted replica: claimable again."""
    failover_pair.cut_link()
    assert failover_pair.primary.client().set("claim", "A", nx=True, px=60_000) is True
    assert failover_pair.primary.client().set("claim", "B", nx=True, px=60_000) is None
    failover_pair.promote()
    new_primary = failover_pair.replica.client()
    assert new_primary.info("replication")["role"] == "master"
    assert new_primary.exists("claim") == 0
    assert new_primary.set("claim", "B", nx=True, px=60_000) is True


def test_fail_over_repoints_the_apps_proxy(failover_pair: FailoverPair) -> None:
    """fail_over(front) leaves the app's proxy talking to the promoted replica."""
    with TcpProxy(failover_pair.primary.address) as front:
        failover_pair.cut_link()
        with redis.Redis(host=front.host, port=front.port, socket_timeout=5) as app:
            assert app.set("claim", "A", nx=True, px=60_000) is True
            failover_pair.fail_over(front)
            assert front.upstream == failover_pair.replica.address
            assert app.set("claim", "B", nx=True, px=60_000) is True
        assert failover_pair.replica.client().get("claim") == b"B"
        assert failover_pair.primary.client().get("claim") == b"A"


def test_redis_server_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    """SIGKILL the harness process and its redis-server goes too (PR_SET_PDEATHSIG)."""
    script = textwrap.dedent(
        """
        import sys, time
        sys.path.insert(0, sys.argv[1])
        from harness.infra.redis_server import start_redis_server
        server = start_redis_server()
        print(server.process.pid, server.workdir, flush=True)
        time.sleep(60)
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script, str(ROOT)], stdout=subprocess.PIPE, text=True
    )
    workdir = None
    try:
        pid_text, workdir = parent.stdout.readline().split()
        pid = int(pid_text)
        assert alive(pid) is True
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        wait_until(lambda: not alive(pid), 10, f"redis-server {pid} to die")
    finally:
        parent.kill()
        parent.wait(10)
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)  # the killed parent could not remove it


# -- the sink ------------------------------------------------------------------------------


def _post(url: str, body: object) -> int:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_sink_records_every_delivery_and_listing(sink: AlertSink) -> None:
    """Each POST /alerts and GET /sandboxes is recorded once, with its key and replica."""
    alert = {"key": "low_credits:1", "creator": 1, "priority": "P2", "text": "t", "replica": "A"}
    assert _post(sink.alerts_url, alert) == 202
    assert _post(sink.alerts_url, {**alert, "replica": "B"}) == 202
    assert _post(sink.alerts_url, {"text": "no key"}) == 400
    request = urllib.request.Request(sink.sandboxes_url, headers={"X-Replica": "A"})
    with urllib.request.urlopen(request, timeout=5) as response:
        listed = json.loads(response.read())
    sink.wait_for(deliveries=2, listings=1)
    assert [s["id"] for s in listed] == ["sbx-1", "sbx-2", "sbx-3"]
    assert sink.sent_by_key() == {"low_credits:1": 2}
    assert [d.replica for d in sink.deliveries()] == ["A", "B"]
    assert [(entry.replica, sink.listing_count()) for entry in sink.listings()] == [("A", 1)]
    assert len(sink.rejected()) == 1
