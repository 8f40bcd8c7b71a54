"""GET /: count the visit."""

import os
from datetime import datetime

import psycopg


def count_visit(now: datetime) -> None:
    with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
        (hits,) = conn.execute("SELECT hits FROM page_hits WHERE day = %s",
                               (now.date(),)).fetchone()
        conn.execute("UPDATE page_hits SET hits = %s WHERE day = %s", (hits + 1, now.date()))
