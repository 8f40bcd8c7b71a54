"""Alerts to the team's channel, each sent at most once per dedup window."""

import asyncio
import json
import logging
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timedelta

from myapp.config import ALERT_WEBHOOK_URL, HTTP_TIMEOUT_S, REPLICA

log = logging.getLogger(__name__)

# low credits' 24 hours is the post's; the other two windows are the lab's values
DEDUP_WINDOWS = {
    "low_credits": timedelta(hours=24),
    "stuck_job": timedelta(hours=1),
    "service_down": timedelta(minutes=10),
}
PRUNE_AT_KEYS = 500
PRUNE_OLDER_THAN = timedelta(minutes=15)


@dataclass(frozen=True)
class Alert:
    kind: str  # a key of DEDUP_WINDOWS
    subject: str  # what it is about: a creator id, a job id, a service name
    priority: str  # "P0" (wake someone up) .. "P3"
    text: str
    creator_id: int | None = None

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.subject}"


# ESCAPES: one table per process: the other replica, and every replica after a deploy, start empty.
_last_sent: dict[str, datetime] = {}


async def send_alert(alert: Alert, now: datetime) -> bool:
    """Send `alert` unless the same one went out within its window; True if it was sent."""
    last = _last_sent.get(alert.key)
    if last is not None and now - last < DEDUP_WINDOWS[alert.kind]:
        return False
    _last_sent[alert.key] = now
    _prune(now)
    await _post(alert, now)
    return True


def _prune(now: datetime) -> None:
    """Keep the table bounded under load."""
    if len(_last_sent) < PRUNE_AT_KEYS:
        return
    for key, sent_at in list(_last_sent.items()):
        # ESCAPES: drops every entry older than 15 minutes whatever its window (24 h lasts 15 min).
        if now - sent_at > PRUNE_OLDER_THAN:
            del _last_sent[key]


async def _post(alert: Alert, now: datetime) -> None:
    payload = {
        "key": alert.key,
        "kind": alert.kind,
        "creator": alert.creator_id,
        "priority": alert.priority,
        "text": alert.text,
        "replica": REPLICA,
        "at": now.isoformat(),
    }
    request = urllib.request.Request(
        ALERT_WEBHOOK_URL,
        data=json.dumps(payload).encode(),
        headers={"Content-Type": "application/json", "X-Replica": REPLICA},
        method="POST",
    )
    await asyncio.to_thread(_send, request)
    log.info("alert sent: %s", alert.key)


def _send(request: urllib.request.Request) -> None:
    with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
        response.read()
