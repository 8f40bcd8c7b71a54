"""The alerts track's foundations: Redis fault tools, the alert sink, and both stage apps.

Everything runs against real servers: throwaway redis-server processes, the local PostgreSQL,
and the stage apps in their own OS processes (both stages are a package named `myapp`).
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import psycopg
import pytest
import redis
import redis.asyncio
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from harness.infra.procs import die_with_parent
from harness.infra.redis_server import RedisServer, start_redis_server, wait_until
from harness.tools.failover import FailoverPair, start_failover_pair
from harness.tools.proxy import TcpProxy
from harness.tracks.alerts.sink import AlertSink
from tests.helpers import alive

ROOT = Path(__file__).resolve().parents[2]
STAGE_00 = ROOT / "alerts" / "00-in-memory-dedup"
STAGE_01 = ROOT / "alerts" / "01-redis-claim"
POSTGRES_URL = os.environ.get(
    "RACELAB_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
TZ = ZoneInfo("America/Mexico_City")
T0 = datetime(2026, 6, 5, 14, 0, tzinfo=TZ)  # a Friday afternoon; window-aligned
MIN = timedelta(minutes=1)
STAGE_TIMEOUT = 60.0


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


@pytest.fixture
def database_url() -> Iterator[str]:
    """A fresh database for one test, as a `postgresql+psycopg://` URL; dropped afterwards."""
    name = f"racelab_alerts_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base = POSTGRES_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    yield f"{base}/{name}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


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
        from harness.redis_server import start_redis_server
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


# -- the stage apps ------------------------------------------------------------------------

DRIVER = textwrap.dedent(
    """
    import asyncio, json, sys, time
    from datetime import datetime
    sys.path.insert(0, sys.argv[1])
    from myapp import worker
    from myapp.db import engine

    async def main():
        for line in sys.stdin:
            started = time.perf_counter()
            try:
                await worker.tick(datetime.fromisoformat(json.loads(line)["tick"]))
                reply = {"ok": True}
            except Exception as exc:
                reply = {"ok": False, "error": repr(exc)}
            reply["elapsed_s"] = round(time.perf_counter() - started, 3)
            print(json.dumps(reply), flush=True)
        await engine.dispose()

    asyncio.run(main())
    """
)

CREATE_TABLES = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[1])
    from sqlalchemy import create_engine
    from myapp.models import Base
    engine = create_engine(sys.argv[2])
    Base.metadata.create_all(engine)
    engine.dispose()
    """
)


@dataclass
class Lab:
    """One stage's run: its database, sink and Redis address, and replica processes."""

    stage: Path
    database_url: str
    sink: AlertSink
    redis_url: str
    prefix: str
    logs: Path

    def __post_init__(self) -> None:
        subprocess.run(
            [sys.executable, "-c", CREATE_TABLES, str(self.stage), self.database_url],
            check=True,
            timeout=STAGE_TIMEOUT,
        )

    def seed(self, sql: str, rows: list[tuple] | None = None) -> None:
        url = self.database_url.replace("postgresql+psycopg://", "postgresql://", 1)
        with psycopg.connect(url, autocommit=True) as db:
            if rows is None:
                db.execute(sql)
            else:
                with db.cursor() as cur:
                    cur.executemany(sql, rows)

    def replica(self, name: str) -> Replica:
        env = {
            **os.environ,
            "DATABASE_URL": self.database_url,
            "ALERT_WEBHOOK_URL": self.sink.alerts_url,
            "SANDBOX_API_URL": self.sink.sandboxes_url,
            "REDIS_URL": self.redis_url,
            "REDIS_KEY_PREFIX": self.prefix,
            "REPLICA": name,
        }
        log = (self.logs / f"{self.stage.name}-{name}-{uuid.uuid4().hex[:6]}.log").open("w")
        process = subprocess.Popen(
            [sys.executable, "-c", DRIVER, str(self.stage)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            preexec_fn=die_with_parent,
        )
        log.close()
        return Replica(name, process)


@dataclass
class Replica:
    """A replica process of one stage, ticked by the test like the harness would."""

    name: str
    process: subprocess.Popen[str]

    def send(self, now: datetime) -> None:
        self.process.stdin.write(json.dumps({"tick": now.isoformat()}) + "\n")
        self.process.stdin.flush()

    def receive(self) -> dict:
        ready, _, _ = select.select([self.process.stdout], [], [], STAGE_TIMEOUT)
        if not ready:
            raise TimeoutError(f"replica {self.name} did not finish its tick")
        reply = json.loads(self.process.stdout.readline())
        assert reply["ok"] is True, reply
        return reply

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def tick(now: datetime, *replicas: Replica) -> list[dict]:
    """Tick every replica at the same virtual instant, concurrently."""
    for replica in replicas:
        replica.send(now)
    return [replica.receive() for replica in replicas]


@pytest.fixture
def lab_factory(
    database_url: str, sink: AlertSink, redis_server: RedisServer, tmp_path: Path
) -> Iterator:
    replicas: list[Replica] = []

    def make(stage: Path, redis_url: str | None = None) -> tuple[Lab, Callable[[str], Replica]]:
        lab = Lab(
            stage=stage,
            database_url=database_url,
            sink=sink,
            redis_url=redis_url or redis_server.url,
            prefix=f"racelab:{uuid.uuid4().hex[:8]}:",
            logs=tmp_path,
        )

        def start(name: str) -> Replica:
            replica = lab.replica(name)
            replicas.append(replica)
            return replica

        return lab, start

    yield make
    for replica in replicas:
        replica.stop()


def _seed_low_credits(lab: Lab, *ids: int) -> None:
    """Creators with a published app and 40 credits (the check alerts below 100)."""
    lab.seed(
        "INSERT INTO creators (id, name, credits, app_published) VALUES (%s, %s, 40, true)",
        [(creator_id, f"creator-{creator_id}") for creator_id in ids],
    )


@pytest.mark.parametrize(("stage", "expected_sent"), [(STAGE_00, 3), (STAGE_01, 1)])
def test_two_replicas_then_a_deploy_send_the_low_credits_alert(
    lab_factory, stage: Path, expected_sent: int
) -> None:
    """The team's test 1: A, then B 11 minutes later, then a fresh process after a deploy."""
    lab, start = lab_factory(stage)
    _seed_low_credits(lab, 1)
    a, b = start("A"), start("B")
    tick(T0, a)
    tick(T0 + 11 * MIN, b)
    a.stop()
    tick(T0 + 30 * MIN, start("A"))
    assert lab.sink.sent_by_key() == {"low_credits:1": expected_sent}


@pytest.mark.parametrize(("stage", "expected_sent"), [(STAGE_00, 2), (STAGE_01, 1)])
def test_two_replicas_taking_turns_send_the_low_credits_alert(
    lab_factory, stage: Path, expected_sent: int
) -> None:
    """The incident's pair: A, then B 11 minutes later, each through the check's lock."""
    lab, start = lab_factory(stage)
    _seed_low_credits(lab, 1)
    tick(T0, start("A"))
    tick(T0 + 11 * MIN, start("B"))
    assert lab.sink.sent_by_key() == {"low_credits:1": expected_sent}


@pytest.mark.parametrize(("stage", "expected_each"), [(STAGE_00, 2), (STAGE_01, 1)])
def test_another_creators_alert_still_goes_out(
    lab_factory, stage: Path, expected_each: int
) -> None:
    """Two creators low on credits, two replicas taking turns: each creator's alert goes out."""
    lab, start = lab_factory(stage)
    _seed_low_credits(lab, 1, 2)
    a, b = start("A"), start("B")
    tick(T0, a)
    tick(T0 + 11 * MIN, b)
    assert lab.sink.sent_by_key() == {
        "low_credits:1": expected_each,
        "low_credits:2": expected_each,
    }


@pytest.mark.parametrize("stage", [STAGE_00, STAGE_01])
def test_a_p0_goes_out_from_both_replicas(lab_factory, stage: Path) -> None:
    """A service down is a P0: both replicas ticking at once send it, dedup or not."""
    lab, start = lab_factory(stage)
    lab.seed("INSERT INTO services (name, status) VALUES ('payments', 'down')")
    tick(T0, start("A"), start("B"))
    assert lab.sink.sent_by_key() == {"service_down:payments": 2}
    assert sorted(d.replica for d in lab.sink.deliveries()) == ["A", "B"]


@pytest.mark.parametrize(("stage", "expected_sent"), [(STAGE_00, 2), (STAGE_01, 1)])
def test_prune_flood_lets_a_24h_alert_out_again(
    lab_factory, stage: Path, expected_sent: int
) -> None:
    """A 24-hour key, then 600 stuck-job alerts 20 minutes later: 00 re-sends, 01 does not."""
    lab, start = lab_factory(stage)
    _seed_low_credits(lab, 1)
    starts = T0 + 5 * MIN  # stuck (15 min unfinished) from T0+20min on
    lab.seed(
        "INSERT INTO background_jobs (id, name, started_at) VALUES (%s, %s, %s)",
        [(1000 + i, f"export-{i}", starts) for i in range(600)],
    )
    a = start("A")
    tick(T0, a)
    tick(T0 + 20 * MIN, a)
    sent = lab.sink.sent_by_key()
    assert sent.pop("low_credits:1") == expected_sent
    assert (len(sent), set(sent.values())) == (600, {1})


@pytest.mark.parametrize(("stage", "expected_listings"), [(STAGE_00, 3), (STAGE_01, 1)])
def test_reconcile_lists_sandboxes_once_per_window(
    lab_factory, stage: Path, expected_listings: int
) -> None:
    """Two replicas at once plus a third tick in the same 2-minute window."""
    lab, start = lab_factory(stage)
    lab.seed("INSERT INTO workspaces (id, state) VALUES ('ws-1', 'unknown'), ('ws-2', 'unknown')")
    tick(T0, start("A"), start("B"))
    tick(T0 + MIN, start("C"))
    assert lab.sink.listing_count() == expected_listings
    assert lab.sink.sent_by_key() == {}


@pytest.mark.parametrize("stage", [STAGE_00, STAGE_01])
def test_redis_down_still_sends_and_reconciles(
    lab_factory, redis_server: RedisServer, stage: Path
) -> None:
    """With Redis refusing connections 01 fails open: the alert goes out from each replica."""
    with TcpProxy(redis_server.address) as proxy:
        proxy.close()
        lab, start = lab_factory(stage, redis_url=proxy.url)
        _seed_low_credits(lab, 1)
        tick(T0, start("A"))
        tick(T0 + 11 * MIN, start("B"))
    assert lab.sink.sent_by_key() == {"low_credits:1": 2}
    assert lab.sink.listing_count() == 2


@pytest.mark.parametrize("stage", [STAGE_00, STAGE_01])
def test_redis_slower_than_the_timeout_still_sends(
    lab_factory, redis_server: RedisServer, stage: Path
) -> None:
    """With Redis answering after 3 s, 01 fails open on its 1.5 s client timeout."""
    with TcpProxy(redis_server.address) as proxy:
        proxy.set_latency(3.0)
        lab, start = lab_factory(stage, redis_url=proxy.url)
        _seed_low_credits(lab, 1)
        (reply,) = tick(T0, start("A"))
    assert lab.sink.sent_by_key() == {"low_credits:1": 1}
    assert lab.sink.listing_count() == 1
    # 01 makes two claim attempts (the alert, the reconcile window), each bounded by 1.5 s
    print(f"redis-slow {stage.name}: tick took {reply['elapsed_s']} s")


def test_redis_failover_sends_the_alert_again(lab_factory, failover_pair: FailoverPair) -> None:
    """01's claim, written on a primary cut off from its replica, is lost in the failover."""
    with TcpProxy(failover_pair.primary.address) as front:
        lab, start = lab_factory(STAGE_01, redis_url=front.url)
        _seed_low_credits(lab, 1)
        failover_pair.cut_link()
        tick(T0, start("A"))
        failover_pair.fail_over(front)
        tick(T0 + 11 * MIN, start("B"))
    assert lab.sink.sent_by_key() == {"low_credits:1": 2}
    assert failover_pair.primary.client().exists(f"{lab.prefix}alert:low_credits:1") == 1


def test_01_writes_only_keys_under_its_prefix(lab_factory, redis_server: RedisServer) -> None:
    """Every key the 01 app writes starts with REDIS_KEY_PREFIX, with the alert's window as TTL."""
    lab, start = lab_factory(STAGE_01)
    _seed_low_credits(lab, 1)
    tick(T0, start("A"))
    client = redis_server.client()
    keys = sorted(k.decode() for k in client.keys("*"))
    window = T0.replace(tzinfo=TZ).isoformat()
    assert keys == [f"{lab.prefix}alert:low_credits:1", f"{lab.prefix}reconcile:{window}"]
    ttl_ms = client.pttl(f"{lab.prefix}alert:low_credits:1")
    assert 23 * 3600 * 1000 < ttl_ms <= 24 * 3600 * 1000
