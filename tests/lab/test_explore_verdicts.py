"""An exploration's outcomes are what the rows and the ticks show: a tick that raised is an
outcome of its own, a payout is found by its transaction and the week it names (never by the
app's exact wording), and a schedule that meets a limit is that schedule's outcome while the
search goes on. Each on a copy of 03 that has the flaw, on a real PostgreSQL."""

from __future__ import annotations

from tests.helpers import (
    copy_stage_edited,
    left_by,
    one_line_exit_2,
    own_lock_keys,
    racelab_here,
    racelab_json,
    racelab_pid,
)


def _explore(folder, *args: str) -> dict:
    data = racelab_json(racelab_here("explore", str(folder), "--json", "--replicas", "2", *args))
    assert data["complete"]
    return data


def _outcomes(data: dict) -> dict[str, dict]:
    return {o["outcome"]: o for o in data["outcomes"]}


def test_a_tick_that_raised_is_an_outcome_of_its_own(tmp_path, pg):
    """03 with each replica's lock key its own and the claim read first, then inserted plainly:
    the second claimer's INSERT meets the first's key and raises. The payout still lands once,
    and the schedules where a tick raised say whose and what (they said "1 payout" before)."""
    folder = copy_stage_edited(
        tmp_path, "03-select-then-insert", "runs.py",
        '"INSERT INTO worker_runs (name, key) VALUES (:name, :key) "\n'
        '    "ON CONFLICT (name, key) DO NOTHING RETURNING 1"',
        '"INSERT INTO worker_runs (name, key) SELECT :name, :key WHERE NOT EXISTS ("\n'
        '    "SELECT 1 FROM worker_runs WHERE name = :name AND key = :key) RETURNING 1"')
    own_lock_keys(folder)
    found = _outcomes(_explore(folder, "--preemptions", "1"))
    failed = {label for label, o in found.items() if o["failed"]}
    assert failed == {"1 payout, A's tick failed: IntegrityError",
                      "1 payout, B's tick failed: IntegrityError"}, found
    assert "1 payout" in found and not found["1 payout"]["failed"]
    assert not any(o["bad"] for o in found.values())
    shortest = found["1 payout, B's tick failed: IntegrityError"]["shortest"]
    out = racelab_here("run", str(folder), "--replicas", "2", "--scenario", "simultaneous",
                       "--schedule", shortest, "--json")
    ticks = [e for e in racelab_json(out)["events"] if e["event"] == "tick"]
    assert sorted((e["replica"], e["outcome"]) for e in ticks) == [("A", "ok"), ("B", "failed")]


def test_a_payout_is_its_transaction_whatever_its_words(tmp_path, pg):
    """A copy of 03 that writes the minute into each credit's reason: the checker finds the
    one payout by its transaction and the week the reason names, whole (it counted 2 payouts,
    both partial, in every schedule, while the coins were 30 of 30)."""
    folder = copy_stage_edited(
        tmp_path, "03-minute-in-reason", "leaderboard.py",
        'f"leaderboard_close {key}"', 'f"leaderboard_close {key} at {now:%H:%M}"')
    assert _outcomes(_explore(folder, "--preemptions", "1")).keys() == {"1 payout"}
    data = racelab_json(racelab_here("run", str(folder), "--scenario", "simultaneous", "--json"))
    assert (data["runs"], data["duplicates"], data["partial"]) == (1, 0, 0)
    assert data["coins"] == {"expected": 30, "paid": 30}


def test_a_claim_in_a_second_session_is_each_schedules_outcome(tmp_path, pg):
    """A copy of 03 whose claim commits in a session of its own before the payout: the tick's
    first session holds the replica's one pooled connection, so the second waits for the pool,
    outside PostgreSQL's lock table. Each schedule's outcome says so, naming the lab's pool of
    1, and explore goes on to the end (it stopped at the first, exit 2, nothing reported); it
    leaves no process or database. The replica tells the wait as it begins (its loop has
    nothing else to wait for), so a replay says it in one line, not as a step that ran no
    statement for the 20 s limit of a step."""
    folder = copy_stage_edited(
        tmp_path, "03-own-claim", "leaderboard.py",
        '    if not await claim_run(db, "leaderboard_close", key):\n',
        '    async with SessionLocal() as claim_db:\n'
        '        claimed = await claim_run(claim_db, "leaderboard_close", key)\n'
        '        await claim_db.commit()\n'
        '    if not claimed:\n',
        ("from myapp.runs import claim_run",
         "from myapp.db import SessionLocal\nfrom myapp.runs import claim_run"))
    out, pid = racelab_pid("explore", str(folder), "--replicas", "2", "--preemptions", "0",
                            "--json")
    assert out.returncode == 0, out.stderr
    data = racelab_json(out.stdout)
    assert data["complete"] and data["schedules"] == 2
    assert {o["outcome"] for o in data["outcomes"]} == {
        f"{r}'s tick hangs: a second session waits for a connection (the lab's pool of 1 a "
        "replica)" for r in "AB"}
    assert all(o["failed"] and not o["bad"] for o in data["outcomes"])
    assert left_by(pid, pg.url) == []
    out, pid = racelab_pid("run", str(folder), "--replicas", "2", "--scenario", "simultaneous",
                            "--schedule", data["outcomes"][0]["shortest"])
    one_line_exit_2(out, "waits for a connection: its one pooled connection is open in a "
                    "transaction", stdout=None)
    assert left_by(pid, pg.url) == []


def test_a_replica_waiting_on_its_own_second_connection_is_an_outcome_and_run_says_why(
        tmp_path, pg):
    """A copy of 03 whose tick locks a row, then updates it again on a connection of a second
    engine: the second waits for the first, in one process, a deadlock PostgreSQL cannot see.
    explore reports it as each schedule's outcome, at once (not after the 20 s limit of a step);
    a replay of one such schedule is one line, exit 2."""
    folder = copy_stage_edited(
        tmp_path, "03-self-wait", "worker.py",
        "            if in_leaderboard_window(now):\n",
        '            await db.execute(text("UPDATE users SET username = username WHERE id = 1"))\n'
        "            async with create_async_engine(DATABASE_URL).connect() as other:\n"
        '                await other.execute(text("UPDATE users SET username = username '
        'WHERE id = 1"))\n'
        "            if in_leaderboard_window(now):\n",
        ("from myapp.db import SessionLocal",
         "from sqlalchemy.ext.asyncio import create_async_engine\n\n"
         "from myapp.db import DATABASE_URL, SessionLocal"))
    out, pid = racelab_pid("explore", str(folder), "--replicas", "2", "--preemptions", "0",
                            "--json")
    assert out.returncode == 0, out.stderr
    data = racelab_json(out.stdout)
    assert data["complete"]
    labels = {o["outcome"]: o["shortest"] for o in data["outcomes"]}
    hangs = "A's tick hangs: it waits on a lock of its own other session"
    assert hangs in labels, labels
    assert left_by(pid, pg.url) == []
    out, pid = racelab_pid("run", str(folder), "--replicas", "2", "--scenario", "simultaneous",
                            "--schedule", labels[hangs])
    one_line_exit_2(out, "replica A waits on a lock held by another session of its own",
                    stdout=None)
    assert left_by(pid, pg.url) == []


def test_a_lock_kept_by_a_tick_that_ended_is_each_schedules_outcome(tmp_path, pg):
    """A copy of 03 whose tick first takes a session-level advisory lock and never lets it go:
    the replica that takes it first ends its tick still holding it, and the other waits on it
    for good. Each schedule's outcome says so as soon as the lock table shows the wait on a
    tick that had ended (not after the 20 s limit of a step); run --schedule says it in one
    line, exit 2, and nothing is left."""
    folder = copy_stage_edited(
        tmp_path, "03-keeps-lock", "worker.py",
        "            got_lock = await db.scalar(\n",
        '            await db.execute(text("SELECT pg_advisory_lock(7)"))\n'
        "            got_lock = await db.scalar(\n")
    data = _explore(folder, "--preemptions", "0")
    assert {o["outcome"] for o in data["outcomes"]} == {
        f"{waiter}'s tick hangs: it waits on a lock {holder} kept after its tick ended"
        for waiter, holder in ("BA", "AB")}
    assert all(o["failed"] and not o["bad"] for o in data["outcomes"])
    out, pid = racelab_pid("run", str(folder), "--replicas", "2", "--scenario", "simultaneous",
                            "--schedule", data["outcomes"][0]["shortest"])
    one_line_exit_2(out, "still holds though its tick has ended", stdout=None)
    assert left_by(pid, pg.url) == []
