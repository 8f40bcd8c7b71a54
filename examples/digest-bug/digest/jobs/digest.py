"""Once a day, every replica's scheduler calls this; the first one should write the digest."""

from datetime import datetime

from sqlalchemy import select

from digest.db import Session
from digest.models import Digest


def send_daily_digest(now: datetime) -> None:
    with Session() as session:
        written = session.scalar(select(Digest.id).where(Digest.day == now.date()))
        if written is None:
            session.add(Digest(day=now.date(), body=f"What happened on {now.date()}"))
        session.commit()
