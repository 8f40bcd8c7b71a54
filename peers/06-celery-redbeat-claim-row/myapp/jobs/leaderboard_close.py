"""Friday 18:00: the week's top 3 get a notification and 10 coins; the bot posts a summary."""

import logging
from datetime import datetime, time, timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from myapp.models import Activity, User
from myapp.runs import claim_run
from myapp.services.bot_service import post_thread
from myapp.services.notifications import notify
from myapp.services.wallet import credit

log = logging.getLogger(__name__)

TOP_N = 3
BONUS_COINS = 10
CLOSE_AT = time(18, 0)
FRIDAY = 4


def slot_for(now: datetime) -> datetime:
    """The Friday 18:00 this run serves: the latest close at or before `now`, in its timezone."""
    monday = now.date() - timedelta(days=now.weekday())
    friday = monday + timedelta(days=FRIDAY)
    slot = datetime.combine(friday, CLOSE_AT, tzinfo=now.tzinfo)
    return slot if slot <= now else slot - timedelta(days=7)


def week_key(slot: datetime) -> str:
    year, week, _ = slot.isocalendar()
    return f"{year}-W{week:02d}"


def summary_title(slot: datetime) -> str:
    monday = slot.date() - timedelta(days=slot.weekday())
    return f"Top 3 of the week of {monday:%Y-%m-%d}"


async def top_members(db: AsyncSession, slot: datetime) -> list[tuple[User, int]]:
    """The members with the most points from Monday 00:00 up to the slot."""
    monday = slot.date() - timedelta(days=slot.weekday())
    week_start = datetime.combine(monday, time(0), tzinfo=slot.tzinfo)
    points = func.sum(Activity.points).label("points")
    rows = await db.execute(
        select(User, points)
        .join(Activity, Activity.user_id == User.id)
        .where(User.is_bot.is_(False))
        .where(Activity.occurred_at >= week_start, Activity.occurred_at < slot)
        .group_by(User.id)
        .order_by(points.desc(), User.id)
        .limit(TOP_N)
    )
    return [(user, int(total)) for user, total in rows.all()]


async def run(db: AsyncSession, now: datetime) -> str:
    """Close the week of the slot `now` serves. Runs in the caller's transaction; never commits."""
    slot = slot_for(now)
    key = week_key(slot)
    # FIX: claim the week before any side effect: a redelivered task or a second beat finds it.
    if not await claim_run(db, "leaderboard_close", key):
        log.info("leaderboard_close %s already claimed; nothing to do", key)
        return f"slot {key} already claimed; nothing to do"
    winners = await top_members(db, slot)
    for rank, (user, points) in enumerate(winners, start=1):
        await notify(
            db,
            user.id,
            "top3",
            f"You made the top 3 of week {key}: #{rank} with {points} points, +{BONUS_COINS} coins",
            now,
        )
        await credit(db, user.id, BONUS_COINS, f"leaderboard_close {key}", now)
    lines = [
        f"{rank}. @{user.username} ({points} points)"
        for rank, (user, points) in enumerate(winners, start=1)
    ]
    # ESCAPES: post_thread is best effort; a missing summary commits with the claim, never retried.
    thread = await post_thread(db, "general", summary_title(slot), "\n".join(lines), now)
    posted = "posted" if thread is not None else "could not post"
    return f"slot {key} claimed: paid {len(winners)} members {BONUS_COINS} coins, {posted} summary"
