"""Leader election by a lease row: the holder renews it on every heartbeat; when it lapses,
the next replica to heartbeat takes it."""

import os
import socket
from datetime import datetime, timedelta

import psycopg

from myapp.db import DATABASE_URL

LEASE = timedelta(seconds=60)  # three missed heartbeats
ME = f"{socket.gethostname()}:{os.getpid()}"
# The lease has a connection of its own, in autocommit: a heartbeat never waits for a job.
LEASE_URL = DATABASE_URL.replace("postgresql+psycopg://", "postgresql://", 1)

TAKE_OR_RENEW = """
INSERT INTO leader_lease (name, holder, expires_at) VALUES (%(name)s, %(me)s, %(until)s)
ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
WHERE leader_lease.holder = EXCLUDED.holder OR leader_lease.expires_at <= %(now)s
RETURNING expires_at
"""


async def heartbeat(name: str, now: datetime) -> datetime | None:
    """Take or renew the lease `name`; until when we hold it, or None if another does."""
    async with await psycopg.AsyncConnection.connect(LEASE_URL, autocommit=True) as conn:
        cur = await conn.execute(TAKE_OR_RENEW,
                                 {"name": name, "me": ME, "until": now + LEASE, "now": now})
        row = await cur.fetchone()
    return row[0] if row else None
