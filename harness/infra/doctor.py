"""`racelab services`: what a run would use, asked of the servers themselves.

One line per service on stdout: its kind, program and version, URL, where its data lives,
free connections, and why it was chosen. A service that cannot be had is one line on stderr
with the one next step (the error services raises), and exit code 2.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import redis as redis_lib

from harness.errors import UserError
from harness.infra import kinds, services

OWN = {"embedded", "binaries"}
GONE = "a temp dir, removed when the command ends"


def postgres_line(found: services.Found) -> str:
    with psycopg.connect(services.libpq_url(found.url), autocommit=True,
                         connect_timeout=5) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0].split()[0]
        try:
            data = conn.execute("SHOW data_directory").fetchone()[0]
        except psycopg.Error:
            data = "not shown to this role"
    limit, used = services.max_connections(found.url)
    where = f"{data} ({GONE})" if found.how in OWN else data
    return (f"PostgreSQL  {found.how} · PostgreSQL {version} · {services.masked(found.url)} · "
            f"data: {where} · connections: {limit - used} of {limit} free · why: {found.why}")


def redis_line(found: services.Found) -> str:
    with redis_lib.Redis.from_url(found.url, socket_timeout=5) as client:
        info = client.info("server") | client.info("clients")
        try:
            data = client.config_get("dir").get("dir", "?")
            limit = int(client.config_get("maxclients").get("maxclients", 0))
        except redis_lib.RedisError:
            data, limit = "not shown (CONFIG is disabled)", 0
    name = "Valkey" if info.get("server_name") == "valkey" else "Redis"
    version = info.get("valkey_version") or info.get("redis_version")
    where = f"{data} ({GONE})" if found.how in OWN else data
    free = (f"{limit - info['connected_clients']} of {limit} free" if limit
            else f"{info['connected_clients']} in use")
    return (f"Redis       {found.how} · {name} {version} · {services.masked(found.url)} · "
            f"data: {where} · connections: {free} · alerts runs start their own from "
            f"{_throwaway()} · why: {found.why}")


def _throwaway() -> str:
    """The program the alerts track starts its per-run Redis servers with."""
    try:
        program = Path(kinds.throwaway_redis_binary())
    except UserError as e:
        return f"nothing ({e})"
    embedded = kinds.embedded_redis_binary()
    how = "embedded" if embedded is not None and program == embedded else "binaries"
    return f"{program.name} ({how})"


def report() -> tuple[list[str], list[str]]:
    """(lines for stdout, one-line problems for stderr)."""
    kinds.forced()  # a bad RACELAB_SERVICES is one problem, not one per service
    found, problems = [], []
    for find, describe in ((services.postgres, postgres_line), (services.redis, redis_line)):
        try:
            found.append(describe(find()))
        except UserError as e:
            problems.append(str(e))
    return found, problems
