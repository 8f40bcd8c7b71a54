"""Redelivery on a visibility timeout: Celery with late acknowledgement on kombu's Redis
transport. A worker takes a task's message off the queue into the transport's `unacked` hash
and acknowledges it only once the task has run; a message left unacknowledged longer than the
visibility timeout is put back in the queue by the next worker's restore sweep and run again
while the first worker still runs it (celery/kombu#337, celery/celery#2599, celery/celery#7009).

A scenario's [world] table turns it on for the Celery peers' app, as a deployment would:

    [world]
    visibility_timeout = "30s"   # CELERY_VISIBILITY_TIMEOUT; late acknowledgement on with it

and the `slow-task` fault makes the payout outlast it: the replica running the task stands
still (SIGSTOP) inside the task's transaction, before COMMIT, for the pause's five minutes of
virtual time (the whole replica, its beat included, not only the task). Both durations are
the lab's choice: a task that runs five minutes and a timeout shorter than it, as kombu's
default hour is shorter than a long report or a paused container. Neither means anything for
a peer whose library is not Celery: "—".
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from harness.engine.model.faults import HoldAt
from harness.engine.model.scenario import format_duration, parse_duration
from harness.errors import UserError
from harness.faults.pause import PAUSE, Pause

if TYPE_CHECKING:
    from harness.engine.model.scenario import Scenario
    from harness.engine.model.stages import Stage

TIMEOUT_KEY = "visibility_timeout"
WORLD_KEYS = {TIMEOUT_KEY: (str, 16)}
ACKS_LATE_ENV, TIMEOUT_ENV = "CELERY_ACKS_LATE", "CELERY_VISIBILITY_TIMEOUT"  # the app reads


_ACKS_LATE = re.compile(r"^\s*task_acks_late=", re.M)  # a line of the app's Celery settings


def is_celery(stage: Stage) -> bool:
    """Whether the peer's app is Celery with its late-acknowledgement setting configurable."""
    app = stage.path / "myapp" / "scheduler.py"
    return app.is_file() and bool(_ACKS_LATE.search(app.read_text()))


def env(s: Scenario) -> dict[str, str]:
    """What a run of `s` tells its replicas: late acknowledgement and the timeout, if set."""
    said = dict(s.world).get(TIMEOUT_KEY)
    if not said:
        return {}
    return {ACKS_LATE_ENV: "1", TIMEOUT_ENV: str(int(parse_duration(said[0]).total_seconds()))}


def check(world: dict[str, tuple]) -> tuple[str, str] | None:
    """The scenario loader's one line for a timeout no run can use; None when it is good."""
    if TIMEOUT_KEY not in world:
        return None
    said = world[TIMEOUT_KEY]
    if len(said) != 1:
        return TIMEOUT_KEY, f"one value, not {len(said)}"
    try:
        timeout = parse_duration(said[0])
    except ValueError as e:
        return TIMEOUT_KEY, str(e)
    if timeout.total_seconds() < 1 or timeout.total_seconds() % 1:
        return TIMEOUT_KEY, "a whole number of seconds, at least 1s (kombu counts in seconds)"
    return None


class SlowTask(Pause):
    name = "slow-task"
    track = "peers"
    summary = (f"the task's run outlasts {format_duration(PAUSE)}: SIGSTOP the replica inside "
               "the task's transaction, before COMMIT, at or after `at`; SIGCONT "
               f"{format_duration(PAUSE)} of virtual time later")
    where_in_tick = "inside its task's transaction"
    hold_at = HoldAt(calls=False)  # past beat's hold point (RedBeat's maybe_due): the worker's task

    def applies_to(self, stage: Stage) -> bool:
        return stage.track == "peers" and is_celery(stage)

    def check_stage(self, stage: Stage, s: Scenario) -> None:
        if not self.applies_to(stage):
            raise UserError(f"scenario {s.name!r} makes a Celery task outlast its visibility "
                            f"timeout; {stage.path.name} does not run on Celery (peers 04 to 06)")


FAULTS = (SlowTask(),)
