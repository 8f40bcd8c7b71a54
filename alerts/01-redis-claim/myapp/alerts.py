"""Alerts to the team's channel, each sent at most once per dedup window."""

import asyncio
import json
import logging
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timedelta

from myapp.claims import claim
from myapp.config import ALERT_WEBHOOK_URL, HTTP_TIMEOUT_S, REPLICA

log = logging.getLogger(__name__)

# low credits' 24 hours is the post's; the other two windows are the lab's values
DEDUP_WINDOWS = {
    "low_credits": timedelta(hours=24),
    "stuck_job": timedelta(hours=1),
    "service_down": timedelta(minutes=10),
}
PRUNE_AT_KEYS = 500


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


@dataclass(frozen=True)
class DedupRule:
    key: str
    window: timedelta


# FIX: one rule says what "the same alert" is and for how long, for memory and Redis alike.
def dedup_rule(alert: Alert) -> DedupRule:
    return DedupRule(key=alert.key, window=DEDUP_WINDOWS[alert.kind])


# The local table only saves a round trip to Redis; Redis is what replicas and deploys share.
_window_ends: dict[str, datetime] = {}


async def send_alert(alert: Alert, now: datetime) -> bool:
    """Send `alert` unless the same one went out within its window; True if it was sent."""
    # FIX: a P0 is never held back by dedup.
    if alert.priority != "P0":
        rule = dedup_rule(alert)
        window_end = _window_ends.get(rule.key)
        if window_end is not None and now < window_end:
            return False
        # FIX: claim the key in Redis before sending: the first replica sends, the rest stay quiet.
        if not await claim(f"alert:{rule.key}", rule.window, owner=f"{REPLICA}@{now.isoformat()}"):
            return False
        _window_ends[rule.key] = now + rule.window
        _prune(now)
    # ESCAPES: if the webhook fails after the claim, the claim stays: no resend until it expires.
    await _post(alert, now)
    return True


def _prune(now: datetime) -> None:
    """Keep the table bounded under load."""
    if len(_window_ends) < PRUNE_AT_KEYS:
        return
    for key, window_end in list(_window_ends.items()):
        # FIX: each entry knows when its own window ends; only expired entries go.
        if window_end <= now:
            del _window_ends[key]


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
