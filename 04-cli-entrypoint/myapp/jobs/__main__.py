"""Run one job once: `python -m myapp.jobs NAME [--now ISO-8601]`.

Opens a session, runs the job, commits on success or rolls back on failure, and prints what it
did. Exit codes: 0 done (including "already claimed"), 1 the job failed and was rolled back,
2 bad input (an unknown job, a --now without a UTC offset).
"""

import argparse
import asyncio
import logging
import os
import sys
from datetime import datetime
from zoneinfo import ZoneInfo

from myapp.jobs import JOBS
from myapp.jobs.runner import UnknownJob, run_job

TZ = ZoneInfo(os.environ.get("APP_TIMEZONE", "America/Mexico_City"))


def parse_now(text: str) -> datetime:
    """An ISO-8601 time with an offset, in any zone, in the app's zone (TZ)."""
    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        raise ValueError(f"{text!r} has no UTC offset; write e.g. 2026-05-29T18:00:00-06:00")
    return value.astimezone(TZ)


async def run_once(name: str, now: datetime) -> str:
    from myapp.db import SessionLocal, engine  # needs DATABASE_URL; bad input is rejected first

    try:
        async with SessionLocal() as db:
            try:
                did = await run_job(db, name, now)
                await db.commit()
                return did
            except Exception:
                await db.rollback()
                raise
    finally:
        await engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m myapp.jobs", description="Run one job once.")
    parser.add_argument("job", help=f"one of: {', '.join(sorted(JOBS))}")
    parser.add_argument("--now", help="the slot's time, ISO-8601 with an offset (default: now)")
    args = parser.parse_args(argv)
    if args.job not in JOBS:
        print(f"error: {UnknownJob(args.job)}", file=sys.stderr)
        return 2
    try:
        # The process entry point is the one place that may read the wall clock.
        now = parse_now(args.now) if args.now else datetime.now(TZ)
    except ValueError as e:
        print(f"error: --now: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        did = asyncio.run(run_once(args.job, now))
    except Exception as e:
        reason = (str(e).strip().splitlines() or [""])[0]
        print(f"error: {args.job} at {now.isoformat()} failed and was rolled back: "
              f"{type(e).__name__}: {reason}", file=sys.stderr)
        return 1
    print(f"{args.job} at {now.isoformat()}: {did}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
