"""A step-mode tick that can only wait for a connection of its own pool is told at once
(harness.engine.inside.app_pool): the loop is about to block with a checkout waiting and
nothing else that could end the wait. A coroutine that is only asleep is something else."""

from __future__ import annotations

import asyncio

from harness.engine.inside import app_pool


def _waiting_for_the_pool(also=None) -> list[str]:
    """Run a loop in which one coroutine 'waits for its pool' (the count app_pool keeps, with
    the wait's own timeout as a timer) until `also` ends; what `stalled` was told."""
    told: list[str] = []
    loop = app_pool.loop(lambda: told.append("stalled"))

    async def pool_wait() -> None:
        app_pool._pool_waits[0] += 1
        try:
            await asyncio.wait_for(asyncio.Event().wait(), timeout=0.3)
        except TimeoutError:
            pass
        finally:
            app_pool._pool_waits[0] -= 1

    async def main() -> None:
        waiting = asyncio.ensure_future(pool_wait())
        if also is not None:
            await also()
            waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    return told


def test_a_wait_for_the_pool_with_nothing_else_to_wait_for_is_told_once():
    assert _waiting_for_the_pool() == ["stalled"]


def test_a_coroutine_asleep_beside_the_wait_may_still_let_a_connection_go():
    assert _waiting_for_the_pool(lambda: asyncio.sleep(0.05)) == []
