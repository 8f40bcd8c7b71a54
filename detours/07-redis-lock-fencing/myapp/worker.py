"""The background loop every replica runs beside the API."""

import logging
import os
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from redis.asyncio import Redis
from redis.exceptions import RedisError

from myapp.db import SessionLocal
from myapp.leaderboard import close_week
from myapp.maintenance import close_zombie_threads

log = logging.getLogger(__name__)

TZ = ZoneInfo("America/Mexico_City")
TICK_EVERY = timedelta(minutes=15)
REDIS_URL = os.environ["REDIS_URL"]
WORKER_LOCK = "myapp:worker-lock"  # one lock name shared by every replica's loop
FENCE_COUNTER = "myapp:worker-lock:fence"  # INCR on every acquire: each holder a newer token
LOCK_TIMEOUT_S = 60  # a pass takes well under a second; a crashed holder frees it in a minute


def in_leaderboard_window(now: datetime) -> bool:
    return now.weekday() == 4 and now.hour == 18 and now.minute < 15


async def tick(now: datetime) -> None:
    """One pass of the loop: decide from the clock what is due, in one transaction."""
    async with Redis.from_url(REDIS_URL) as redis:
        # FIX: one replica at a time holds the Redis lock (SET NX PX, a token); the rest skip.
        lock = redis.lock(WORKER_LOCK, timeout=LOCK_TIMEOUT_S, blocking=False)
        if not await lock.acquire():
            log.info("another replica holds the worker lock; skipping this tick")
            return
        try:
            token = await redis.incr(FENCE_COUNTER)
            async with SessionLocal() as db:
                try:
                    if in_leaderboard_window(now):
                        # ESCAPES: a token orders writes, not runs: a holder whose payout was
                        # checked before its lock expired, or that ticks after a release, pays.
                        await close_week(db, now, token)
                    await close_zombie_threads(db, now)
                    await db.commit()
                except Exception:
                    await db.rollback()
                    raise
        finally:
            try:
                await lock.release()
            except RedisError as e:  # expired, taken by another, or Redis moved: it frees itself
                log.warning("could not release the worker lock: %r", e)


async def run_forever(
    clock: Callable[[], datetime], sleep: Callable[[float], Awaitable[None]]
) -> None:
    """Production entry point: `clock` and `sleep` come from the process that hosts the loop."""
    while True:
        try:
            await tick(clock().astimezone(TZ))
        except Exception:
            log.exception("worker tick failed")
        await sleep(TICK_EVERY.total_seconds())
