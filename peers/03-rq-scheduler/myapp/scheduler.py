"""The app's rq-scheduler: every replica runs a scheduler and an RQ worker on one Redis.

rq-scheduler's loop takes one lock per pass (SET rq:scheduler_lock NX EX interval+10), moves
the due jobs from its sorted set to the RQ queue and re-adds each cron job at its next time,
then releases the lock with a plain DEL.
"""

import math
import os
import time
import warnings
from datetime import UTC, datetime, timedelta

from redis import Redis
from rq.timeouts import TimerDeathPenalty
from rq.worker import SimpleWorker
from rq_scheduler import Scheduler

from myapp import tasks

INTERVAL = 60  # seconds between the scheduler's passes; its lock lives INTERVAL + 10 s
QUEUE = "default"
CLOSE_CRON = "0 0 * * 6"  # Saturday 00:00 UTC is Friday 18:00 in Mexico City (UTC-6 all year)

redis = Redis.from_url(os.environ["REDIS_URL"])

# rq-scheduler computes a cron job's next time from the naive local clock: the container runs
# in UTC, so CLOSE_CRON means UTC wherever the lab runs.
os.environ["TZ"] = "UTC"
time.tzset()
# crontab warns on every naive `now` that a future version reads it as UTC: it already is.
warnings.filterwarnings("ignore", category=FutureWarning, module="rq_scheduler.utils")


def build() -> Scheduler:
    scheduler = Scheduler(queue_name=QUEUE, connection=redis, interval=INTERVAL)
    if "leaderboard_close" not in scheduler:  # every replica starts here; the first one adds it
        scheduler.cron(CLOSE_CRON, func=tasks.leaderboard_close, id="leaderboard_close",
                       queue_name=QUEUE)
    return scheduler


def one_pass(scheduler: Scheduler) -> bool:
    """One pass of Scheduler.run's loop (its body, without the sleep): True if it held the lock."""
    scheduler.heartbeat()
    # ESCAPES: a TTL lock released with a plain DEL: a pass slower than the TTL is not alone.
    if not scheduler.acquire_lock():
        scheduler.log.warning("Lock already taken - skipping run")
        return False
    scheduler.enqueue_jobs()
    scheduler.heartbeat()
    scheduler.remove_lock()
    return True


def next_pass(now: datetime) -> datetime:
    """The first of the scheduler's passes (one every INTERVAL from `now`) that finds a job due:
    the passes before it take the lock, find nothing and drop it."""
    first = redis.zrange(Scheduler.scheduled_jobs_key, 0, 0, withscores=True)
    if not first:
        return now + timedelta(seconds=INTERVAL)
    due = datetime.fromtimestamp(first[0][1], UTC)
    passes = max(1, math.ceil((due - now).total_seconds() / INTERVAL))
    return now + timedelta(seconds=passes * INTERVAL)


class Worker(SimpleWorker):
    """RQ's in-process worker, started from a thread: signals belong to the host process, job
    timeouts use a timer instead of SIGALRM, and it listens on no command channel (nobody sends
    it commands, and ending that listener's thread costs a second per burst)."""

    death_penalty_class = TimerDeathPenalty

    def _install_signal_handlers(self) -> None:
        pass

    def subscribe(self) -> None:
        pass


def work() -> bool:
    """Run the queued jobs and stop when the queue is empty (RQ's burst mode)."""
    return Worker([QUEUE], connection=redis).work(burst=True, logging_level="WARNING")
