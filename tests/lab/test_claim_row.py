"""Stage 03's claim, called directly on a real PostgreSQL database."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import psycopg
import pytest

from harness.engine.model import stages
from harness.engine.run import replica
from harness.infra import owned, services

SCRIPT = textwrap.dedent('''
    import asyncio
    from sqlalchemy import text
    from myapp.db import SessionLocal, engine
    from myapp.runs import claim_run

    async def main():
        async with SessionLocal() as db:
            first = await claim_run(db, "leaderboard_close", "2026-W22")
            await db.rollback()
        async with SessionLocal() as db:
            left = await db.scalar(text("SELECT count(*) FROM worker_runs"))
        async with SessionLocal() as db:
            again = await claim_run(db, "leaderboard_close", "2026-W22")
            await db.commit()
        async with SessionLocal() as db:
            third = await claim_run(db, "leaderboard_close", "2026-W22")
            await db.commit()
        await engine.dispose()
        print(first, left, again, third)

    asyncio.run(main())
''')


@pytest.fixture
def stage03_db(pg):
    name = f"{services.DB_PREFIX}test_claim_{id(object())}"
    owned.create(pg.url, name)
    url = services.app_url(pg.url, name)
    with psycopg.connect(services.libpq_url(url), autocommit=True) as conn:
        for statement in replica.schema_ddl(stages.resolve("03").path):
            conn.execute(statement)
    yield url
    owned.drop(pg.url, name)


def test_a_rolled_back_claim_leaves_no_worker_runs_row(stage03_db):
    """Claim, roll back: the row is gone, so the next attempt claims the slot again."""
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True,
        cwd=stages.resolve("03").path, env={"DATABASE_URL": stage03_db, "PATH": "/usr/bin"},
    )
    assert out.stdout.split() == ["True", "0", "True", "False"]
