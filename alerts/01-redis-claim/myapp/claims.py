"""Claims in Redis: the first caller to claim a key for a window gets True, the others False."""

import logging
from datetime import timedelta

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError

from myapp.config import REDIS_KEY_PREFIX, REDIS_TIMEOUT_S, REDIS_URL

log = logging.getLogger(__name__)


def _connect() -> Redis:
    # One attempt per claim, bounded by the timeout: the client's default retries would wait 4x.
    return Redis.from_url(
        REDIS_URL,
        socket_timeout=REDIS_TIMEOUT_S,
        socket_connect_timeout=REDIS_TIMEOUT_S,
        retry=Retry(NoBackoff(), 0),
    )


async def claim(key: str, window: timedelta, owner: str) -> bool:
    """SET key owner NX PX window: True if the key is ours, or if Redis could not answer."""
    # A short-lived connection: after an outage or a failover no stale pooled socket is left over.
    async with _connect() as redis:
        try:
            # ESCAPES: the claim lives on one primary; lost in a failover, the alert goes out again.
            return bool(
                await redis.set(
                    REDIS_KEY_PREFIX + key,
                    owner,
                    nx=True,
                    px=int(window.total_seconds() * 1000),
                )
            )
        except (RedisError, OSError) as exc:
            # FIX: fail open: a duplicate alert is noise, a dropped one is someone never told.
            log.warning("claim of %s failed (%r); going ahead without it", key, exc)
            return True
