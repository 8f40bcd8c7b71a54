"""The app's Celery: beat and a worker in every replica, on one Redis broker, with RedBeat.

RedBeat keeps the schedule in Redis and, so that only one beat sends, each beat takes a lock
when it starts (a redis-py Lock, `redbeat::lock`, with a timeout of five times beat's maximum
sleep) and extends it on every tick; the beats that find it taken wait for it.
"""

import logging
import os
import threading
import time
from datetime import timedelta
from types import SimpleNamespace
from unittest import mock

import redis
from celery import Celery, beat, signals
from celery.schedules import crontab
from celery.worker import WorkController, state

QUEUE = "celery"  # Celery's default queue: a Redis list of that name
SPIN = timedelta(milliseconds=1)  # how far the clock moves while beat spins before a due time
# Late acknowledgement, where the deployment turns it on: a task's message is acknowledged when
# the task has run, and one a worker holds unacknowledged past the visibility timeout (kombu's
# default: an hour) is delivered again.
ACKS_LATE = os.environ.get("CELERY_ACKS_LATE") == "1"
VISIBILITY_TIMEOUT = int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "3600"))

app = Celery("myapp", broker=os.environ["REDIS_URL"])
app.conf.update(
    timezone="America/Mexico_City",  # crontab entries read in the app's timezone
    beat_schedule={
        "leaderboard_close": {
            "task": "myapp.tasks.leaderboard_close",
            "schedule": crontab(minute=0, hour=18, day_of_week="fri"),
        },
    },
    # FIX: the schedule in Redis, and one beat at a time: the one holding RedBeat's lock.
    beat_scheduler="redbeat.RedBeatScheduler",
    redbeat_redis_url=os.environ["REDIS_URL"],
    redbeat_redis_options={},  # RedBeat's own client takes none of the broker's options
    # ESCAPES: the lock is a lease (25 minutes, extended on every tick) without a fencing token.
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
    worker_enable_remote_control=False,  # nobody sends it commands
    task_acks_late=ACKS_LATE,
    # A worker's BRPOP waits 0.05 s, not 1 s (kombu's Redis transport takes its BRPOP timeout
    # from polling_interval), so a worker stopped at the end of a wakeup closes at once:
    # closing its channel waits for the BRPOP in flight.
    broker_transport_options={"polling_interval": 0.05, "visibility_timeout": VISIBILITY_TIMEOUT},
)
# The worker's lines per task name its random task id; beat's "Sending due task" stays.
for quiet in ("celery.worker.strategy", "celery.app.trace", "celery.worker.consumer"):
    logging.getLogger(quiet).setLevel(logging.WARNING)

broker = redis.Redis.from_url(os.environ["REDIS_URL"])
log = logging.getLogger(__name__)


class StandingBy(BaseException):  # noqa: N818 -- not an error: beat waits for the lock
    """redis-py's Lock.acquire found the lock taken and is about to sleep `seconds` before it
    tries again. A BaseException, so that Celery's signal dispatch does not swallow it."""

    def __init__(self, seconds: float):
        self.seconds = seconds


def _stand_by(seconds: float) -> None:
    raise StandingBy(seconds)


class HostedBeat(beat.Service):
    """Celery beat's Service with its loop run by the process that hosts it: `boot()` is what
    `start()` does before its loop, `wake(clock)` one turn of the loop without its sleep (tick
    until the scheduler asks to sleep, then return that sleep)."""

    slept = False
    started = False

    def boot(self) -> float | None:
        """beat_init, where RedBeat takes its lock, blocking: redis-py tries, sleeps `sleep`
        (beat's max interval) and tries again. Here the sleep ends the attempt; the host wakes
        beat after it to try again. Returns that sleep, or None once beat holds the lock."""
        self.scheduler  # noqa: B018 -- start() reads it (and sets up the schedule) first
        try:
            with mock.patch("redis.lock.mod_time",
                            SimpleNamespace(sleep=_stand_by, monotonic=time.monotonic)):
                signals.beat_init.send(sender=self)
        except StandingBy as waiting:
            log.info("beat: lock taken; trying again in %d s", waiting.seconds)
            return waiting.seconds
        self.effective_max_interval = self.scheduler.max_interval
        self.started = True
        return None

    def wake(self, clock) -> float:
        if self.slept and self.scheduler.should_sync():
            self.scheduler._do_sync()
        while True:
            interval = self.scheduler.tick()
            if interval and interval > 0.0:
                self.slept = True
                return interval
            # beat asks to wake 10 ms early (Scheduler.adjust) and ticks on without sleeping
            # until the entry is due: the real clock moves meanwhile, so this one does too.
            clock.shift(SPIN)


def build() -> HostedBeat:
    return HostedBeat(app, scheduler_cls=app.conf.beat_scheduler)  # as `celery beat` does


class Worker(WorkController):
    """Celery's worker with the solo pool (tasks run in the consumer's thread), started from
    a thread of the replica: no heartbeat, mingle or gossip with other workers."""

    def __init__(self) -> None:
        super().__init__(app=app, pool="solo", concurrency=1, without_heartbeat=True,
                         without_mingle=True, without_gossip=True, loglevel="WARNING")
        self.ready = threading.Event()

    def on_consumer_ready(self, consumer) -> None:
        self.ready.set()


# Where kombu's Redis transport keeps each unacknowledged delivery, scored by when it was
# delivered (its default key): a worker's restore sweep reads it as the worker starts.
UNACKED = "unacked_index"


def overdue() -> int:
    """Deliveries held unacknowledged longer than the visibility timeout (by this clock)."""
    return broker.zcount(UNACKED, 0, time.time() - VISIBILITY_TIMEOUT)


def work(sent: int) -> None:
    """Run a worker until the queue is empty and the `sent` messages of this wakeup have run,
    and the deliveries overdue for their acknowledgement (its restore sweep takes them back as
    it starts), then stop it (warm shutdown). A worker with none of these is not started."""
    due = overdue()
    if not broker.llen(QUEUE) and not sent and not due:
        return
    received = state.total_count.copy()
    worker = Worker()
    thread = threading.Thread(target=worker.start, name="celery-worker", daemon=True)
    thread.start()
    worker.ready.wait(30)
    while (broker.llen(QUEUE) or state.active_requests or state.reserved_requests
           or sum(state.total_count.values()) - sum(received.values()) < sent + due):
        time.sleep(0.002)
    state.should_stop = 0
    worker.hub.call_soon(lambda: None)  # wake its event loop to see the stop
    thread.join(30)
    state.should_stop = None
