"""What a person reads: the timeline stays one line per tick even when a tick does 600 things."""

from __future__ import annotations

from datetime import datetime

from harness.engine.model.history import Event
from harness.engine.model.scenario import TZ
from harness.engine.views.tables import collapse

T = datetime(2026, 6, 5, 14, 20, tzinfo=TZ)


def test_timeline_folds_six_hundred_like_alerts_into_one_entry():
    """600 'alert sent' lines that differ only in their number read as first … last (600)."""
    flood = [Event(T, "A", "log", f"info: alert sent: stuck_job:{1000 + i}") for i in range(600)]
    events = [Event(T, "A", "tick", "", "ok"), *flood,
              Event(T, "A", "log", "info: alert sent: low_credits:1")]
    assert [e.detail for e in collapse(events)] == [
        "", "info: alert sent: stuck_job:1000 … 1599 (600 in all)",
        "info: alert sent: low_credits:1"]


def test_timeline_keeps_two_like_events_and_other_replicas_apart():
    """Two in a row stay as they are, and the same text from another replica is not folded in."""
    events = [Event(T, "A", "log", "info: alert sent: stuck_job:1"),
              Event(T, "A", "log", "info: alert sent: stuck_job:2"),
              Event(T, "B", "log", "info: alert sent: stuck_job:3")]
    assert collapse(events) == events
