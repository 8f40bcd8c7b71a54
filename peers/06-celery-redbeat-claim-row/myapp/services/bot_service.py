import logging
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from myapp.models import Section, Thread, User

log = logging.getLogger(__name__)


async def post_thread(
    db: AsyncSession, section_slug: str, title: str, body: str, now: datetime
) -> Thread | None:
    """Post a thread as the bot user. Best effort: logs and returns None when it cannot."""
    bot = await db.scalar(select(User).where(User.is_bot.is_(True)))
    if bot is None:
        log.warning("bot user missing; thread %r not posted", title)
        return None
    section = await db.scalar(select(Section).where(Section.slug == section_slug))
    if section is None:
        log.warning("section %r missing; thread %r not posted", section_slug, title)
        return None
    thread = Thread(
        section_id=section.id,
        author_id=bot.id,
        title=title,
        body=body,
        created_at=now,
        last_activity_at=now,
    )
    db.add(thread)
    await db.flush()
    return thread
