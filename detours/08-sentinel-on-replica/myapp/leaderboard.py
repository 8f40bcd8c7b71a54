"""Friday 18:00: the week's top 3 get a notification and 10 coins; the bot posts a summary."""

import os
from datetime import datetime, time, timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from myapp.db import ReplicaSession
from myapp.models import Activity, Thread, User
from myapp.services.bot_service import post_thread
from myapp.services.notifications import notify
from myapp.services.wallet import credit

TOP_N = 3
BONUS_COINS = 10
# When the week closes, in the app's time zone: "FRI 18:00" unless configured.
_day, _at = os.environ.get("LEADERBOARD_CLOSE", "FRI 18:00").split()
CLOSE_DAY = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN").index(_day)
CLOSE_AT = time.fromisoformat(_at)


def slot_for(now: datetime) -> datetime:
    """The week's close this tick serves (Friday 18:00 unless configured), in its own timezone."""
    monday = now.date() - timedelta(days=now.weekday())
    close_day = monday + timedelta(days=CLOSE_DAY)
    return datetime.combine(close_day, CLOSE_AT, tzinfo=now.tzinfo)


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


async def summary_posted(db: AsyncSession, slot: datetime) -> bool:
    """Whether the week's summary thread is there: read on the replica when there is one."""
    query = select(Thread.id).where(Thread.title == summary_title(slot))
    if ReplicaSession is None:
        return await db.scalar(query) is not None
    # ESCAPES: a replica lags: a summary the primary committed a moment ago is not there yet.
    async with ReplicaSession() as replica:
        return await replica.scalar(query) is not None


async def close_week(db: AsyncSession, now: datetime) -> None:
    slot = slot_for(now)
    key = week_key(slot)
    # FIX: the summary thread marks the week as closed; later ticks in the window stop here.
    if await summary_posted(db, slot):
        return
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
    # ESCAPES: post_thread is best effort; when it writes nothing, nothing marks the week closed.
    await post_thread(db, "general", summary_title(slot), "\n".join(lines), now)
