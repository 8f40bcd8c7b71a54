"""The checks that raise alerts."""

from datetime import datetime, timedelta

from sqlalchemy import select, text

from myapp.alerts import Alert, send_alert
from myapp.db import SessionLocal
from myapp.models import BackgroundJob, Creator, Service

LOW_CREDITS_BELOW = 100  # the lab's value: the post names the checks, not their thresholds
STUCK_AFTER = timedelta(minutes=15)  # the lab's value too
LOW_CREDITS_LOCK = 7_244_100  # advisory-lock key: replicas take turns running the check


async def check_services(now: datetime) -> int:
    """A P0 for every watched service that is down."""
    async with SessionLocal() as db:
        down = (await db.scalars(select(Service).where(Service.status == "down"))).all()
    sent = 0
    for service in down:
        alert = Alert("service_down", service.name, "P0", f"{service.name} is down")
        sent += await send_alert(alert, now)
    return sent


async def check_stuck_jobs(now: datetime) -> int:
    """An alert for every background job unfinished for longer than STUCK_AFTER."""
    async with SessionLocal() as db:
        stuck = (
            await db.scalars(
                select(BackgroundJob)
                .where(BackgroundJob.finished_at.is_(None))
                .where(BackgroundJob.started_at <= now - STUCK_AFTER)
                .order_by(BackgroundJob.id)
            )
        ).all()
    sent = 0
    for job in stuck:
        alert = Alert("stuck_job", str(job.id), "P2", f"job {job.name} has not finished")
        sent += await send_alert(alert, now)
    return sent


async def check_low_credits(now: datetime) -> int:
    """An alert for every creator whose app is published while their credits run low."""
    async with SessionLocal() as db, db.begin():
        # Every replica runs this check; the lock makes them take turns, not skip.
        await db.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LOW_CREDITS_LOCK})
        low = (
            await db.scalars(
                select(Creator)
                .where(Creator.app_published.is_(True))
                .where(Creator.credits < LOW_CREDITS_BELOW)
                .order_by(Creator.id)
            )
        ).all()
        sent = 0
        for creator in low:
            alert = Alert(
                "low_credits",
                str(creator.id),
                "P2",
                f"{creator.name} has {creator.credits} credits left and a published app",
                creator_id=creator.id,
            )
            sent += await send_alert(alert, now)
    return sent
