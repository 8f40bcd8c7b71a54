"""How one tick reads in the timeline: its first line, then what the seams noted, in words.

The words are for people; nothing reads them back (the run's data is harness.engine.model.history).
"""

from __future__ import annotations

from datetime import datetime

from harness.engine.model.clock import clock_reads, offset_label
from harness.engine.model.history import Event
from harness.engine.model.schedulers import WAITED, Start


def tick_entries(name: str, tick: Start, outcome: str, notes: list[tuple[str, str, dict]],
                 seen: list[Event], alone: bool, behind_pause: bool,
                 began: datetime | None) -> list[Event]:
    """The tick's events: `seen` is what the harness saw while it ran (blocked, a fault during
    a hold); `alone`: no other process ran in its instant; `behind_pause`: it was held while a
    paused replica stood still; `began`: when a tick that stood still began."""
    detail = clock_reads(tick.now, tick.t)
    if began is not None:  # a tick that stood still (paused, or behind a paused lock)
        detail = f"began {began:%H:%M:%S}, went on at {tick.t:%H:%M:%S}"
    if WAITED.of(tick):  # a replica's tick that queued on the job's lock
        detail = (f"waited {offset_label(tick.t, tick.t - tick.waited)[2:]} for the job's lock "
                  "(modelled: lock_turn)")
    during = [e for e in seen if e.event == "fault"]
    entries = [Event(tick.t, name, "tick", detail, outcome)]
    entries += [e for e in seen if e.event != "fault"]
    for kind, text, data in notes:
        if kind == "held" and not alone:
            text += " while the others run"
        elif kind == "held" and behind_pause:
            text += " while a paused replica stands still"
        elif kind == "held":  # a fault's hold has no others running
            text += " while the fault strikes"
        entries.append(Event(tick.t, name, kind, text, data=data))
        if kind == "held":
            entries += during
            during = []
    return entries + during
