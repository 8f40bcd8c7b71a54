"""Once a day, every replica's scheduler calls this; the first one should write the digest."""

from datetime import datetime

from sqlalchemy.dialects.postgresql import insert

from digest.db import Session
from digest.models import Digest


def send_daily_digest(now: datetime) -> None:
    with Session() as session:
        # FIX: the insert is the check: a second replica's conflicts on the day and does nothing
        row = insert(Digest).values(day=now.date(), body=f"What happened on {now.date()}")
        session.execute(row.on_conflict_do_nothing(index_elements=["day"]))
        session.commit()
