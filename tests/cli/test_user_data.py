"""Nothing of the user's is lost or overwritten: `racelab clean` removes only what the lab
recorded as its own (databases in its list, temp dirs with its owner file), a file the lab writes
is checked before the work and replaced whole or not at all, and no URL is printed with its
password. Tests that run `clean --all` or `clean --kept` do it on a PostgreSQL of their own and
with a TMPDIR of their own, so they see nothing of any other run."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from harness.infra import embedded, kinds, services
from tests.helpers import (
    one_line_exit_2,
    racelab,
)


@pytest.fixture(scope="module")
def own_pg() -> Iterator[str]:
    """A throwaway PostgreSQL for this module alone: `clean --all` there sees no other run."""
    server = embedded.start_postgres(kinds.embedded_pg_bindir() or kinds.local_pg_bindir())
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def own_tmp() -> Iterator[Path]:
    """A TMPDIR of the test's own (short: multiprocessing puts a socket path in it)."""
    path = Path(tempfile.mkdtemp(prefix="rl-"))
    try:
        yield path
    finally:
        subprocess.run(["rm", "-rf", str(path)], check=True)


def _sql(url: str, database: str, statement: str) -> list[tuple]:
    with psycopg.connect(services.libpq_url(services.app_url(url, database)),
                         autocommit=True) as conn:
        cur = conn.execute(statement)
        return cur.fetchall() if cur.description else []


def _databases(url: str) -> list[str]:
    return [r[0] for r in _sql(url, "postgres", "SELECT datname FROM pg_database WHERE datname "
                                                "LIKE 'racelab%' ORDER BY 1")]


def _on(url: str, tmp: Path) -> dict[str, str]:
    return {services.PG_ENV: url, "TMPDIR": str(tmp)}


# -- 15: no password printed -------------------------------------------------------------------

def test_services_and_errors_print_urls_without_their_passwords(pg):
    """A password in RACELAB_POSTGRES_URL and RACELAB_REDIS_URL: `racelab services` shows each
    URL with *** for it, and the error for an unreachable server (a wrong password's echo
    included) never shows it either."""
    secret = "s3cret-Pa55"
    with_password = pg.url.replace("://postgres@", f"://postgres:{secret}@")
    assert secret in with_password
    redis_url = os.environ.get(services.REDIS_ENV) or services.redis().url
    env = {services.PG_ENV: with_password,
           services.REDIS_ENV: redis_url.replace("redis://", f"redis://:{secret}@")}
    out = racelab("services", env=env)
    assert out.returncode == 0, out.stderr
    assert secret not in out.stdout + out.stderr
    assert [line.split(" · ")[2] for line in out.stdout.splitlines()] == [
        with_password.replace(secret, "***"), env[services.REDIS_ENV].replace(secret, "***")]
    for variable, url in ((services.PG_ENV, f"postgresql://u:{secret}@127.0.0.1:1/x"),
                          (services.REDIS_ENV, f"redis://u:{secret}@127.0.0.1:1/0"),
                          (services.PG_ENV, f"postgresql://u:{secret}@[bad")):
        out = racelab("services", env={variable: url})
        one_line_exit_2(out, variable, "u:***@", stdout=None)
        assert secret not in out.stdout + out.stderr
