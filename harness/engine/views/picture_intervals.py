"""The intervals of a run's history (a tick, a transaction, a lock held, a hold before its end,
a wait, a pause, a fault) and the links from a refused or waiting op to the process that held
what it wanted, when the history says who: a lock taken and not yet released, a claim row or
key won (and not rolled back), a transaction held open or that wrote."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from harness.engine.model.history import F, Op, Type


@dataclass(frozen=True)
class Interval:
    process: str
    f: str  # tick, task, txn, lock, hold, wait, pause, fault
    start: int  # op indexes
    end: int | None  # None: still open when the run ended
    how: str = "ok"  # ok, fail, info


@dataclass(frozen=True)
class Link:
    index: int  # the op that waited or was refused
    process: str
    holder: str
    what: str  # lock, row, claim



def intervals_and_links(ops: list[Op], when: list[datetime] | None = None
                        ) -> tuple[list[Interval], list[Link]]:
    """Every interval the history pairs up, and who held what a refused or waiting op wanted;
    `when`, each op's instant, ends a lock with a lease where the lease ran out (its holder's
    extensions moving that on), and from then on it holds nothing."""
    out: list[Interval] = []
    links: list[Link] = []
    opened: dict[tuple[str, F], list[int]] = {}
    locks: dict[str, list[tuple[int, bool]]] = {}  # process -> (op, xact) held
    held: set[str] = set()  # processes held before the end of a transaction
    writing: set[str] = set()  # processes inside a transaction that wrote or claimed
    claims: dict[str, tuple[str, int]] = {}  # table or key -> (winner, op)
    in_txn: dict[str, list[str]] = {}  # process -> table claims of its open transaction
    paused: dict[str, int] = {}
    until: dict[int, datetime] = {}  # a lease's lock (by its op) -> when its lease runs out
    for i, op in enumerate(ops):
        p, key = op.process, (op.process, op.f)
        if when:
            out += _run_out(locks, until, i, when[i])
        if op.type is Type.INVOKE and op.f in (F.TICK, F.TASK, F.TXN, F.HOLD, F.FAULT):
            opened.setdefault(key, []).append(i)
            if op.f is F.HOLD:
                held.add(p)
            if op.f is F.TXN:
                in_txn[p] = []
            continue
        if op.type is Type.INVOKE and op.f in (F.CLAIM, F.LOCK):
            opened.setdefault(key, []).append(i)
            continue
        if op.f in (F.CLAIM, F.LOCK) and opened.get(key):
            start = opened[key].pop()
            if start + 1 < i and any(o.process != p for o in ops[start + 1:i]):
                out.append(Interval(p, "wait", start, i))
        if op.f is F.LOCK and op.type is Type.OK:
            if op.value.get("result"):
                locks.setdefault(p, []).append((i, bool(op.value.get("xact"))))
                if when and op.value.get("lease_s"):
                    until[i] = when[i] + timedelta(seconds=op.value["lease_s"])
            else:
                links += [Link(i, p, q, "lock") for q in locks if q != p and locks[q]]
        elif op.f is F.LOCK and op.type is Type.INFO and op.value.get("extended") and when:
            mine = [s for s, _ in locks.get(p, []) if s in until
                    and ops[s].value.get("key") == op.value.get("key")]
            if not mine:  # it had run out, and nobody took it since: held again from here
                locks.setdefault(p, []).append((i, False))
                mine = [i]
            for start in mine:  # its holder moves the lease's end on
                until[start] = when[i] + timedelta(seconds=op.value["lease_s"])
        elif op.f is F.LOCK and op.type is Type.INFO and "released" in op.value:
            for start, _ in [lk for lk in locks.get(p, []) if not lk[1]]:
                out.append(Interval(p, "lock", start, i, "ok" if op.value["released"] else "info"))
            locks[p] = [lk for lk in locks.get(p, []) if lk[1]]
        elif op.f is F.CLAIM and op.type is Type.OK:
            what = op.value.get("key") or op.value.get("table", "")
            if op.value.get("result"):
                claims[what] = (p, i)
                writing.add(p)
                if "table" in op.value and p in in_txn:
                    in_txn[p].append(what)
            elif what in claims and claims[what][0] != p:
                links.append(Link(i, p, claims[what][0], "claim"))
        elif op.f is F.WRITE:
            writing.add(p)
        elif op.f is F.BLOCK:  # a wait inside PostgreSQL: on its locks, never on a lease
            in_db = {q for q, lks in locks.items() if any(not ops[s].value.get("lease_s")
                                                          for s, _ in lks)}
            holders = [q for q in held if q != p] or [q for q in in_db if q != p] \
                or [q for q in writing if q != p]
            links += [Link(i, p, q, "lock" if q in in_db else "row") for q in sorted(holders)]
            nxt = next((k for k in range(i + 1, len(ops)) if ops[k].process == p), None)
            out.append(Interval(p, "wait", i, nxt))
        elif op.f in (F.COMMIT, F.ROLLBACK) and op.type is not Type.INVOKE:
            for start, _ in [lk for lk in locks.get(p, []) if lk[1]]:
                out.append(Interval(p, "lock", start, i))
            locks[p] = [lk for lk in locks.get(p, []) if not lk[1]]
        elif op.f is F.PAUSE and op.type is Type.OK:
            paused[op.value.get("replica", "")] = i
        elif op.f is F.RESUME and op.type is Type.OK and op.value.get("replica") in paused:
            out.append(Interval(op.value["replica"], "pause", paused.pop(op.value["replica"]), i))
        if op.type is Type.INVOKE or not opened.get(key):
            continue
        start = opened[key].pop()
        out.append(Interval(p, op.f.value, start, i, op.type.value))
        if op.f is F.HOLD:
            held.discard(p)
        elif op.f is F.TXN:
            writing.discard(p)
            for what in in_txn.pop(p, []) if op.type is not Type.OK else []:
                claims.pop(what, None)  # a rolled-back claim row holds nothing
        elif op.f in (F.TICK, F.TASK):  # a session lock ends with the tick at the latest;
            mine = locks.pop(p, [])
            kept = [lk for lk in mine if ops[lk[0]].value.get("lease_s")]
            out += [Interval(p, "lock", s, i) for s, x in mine if (s, x) not in kept]
            if kept:  # a lease outlives the tick, the process even: until it runs out
                locks[p] = kept
    for (p, f), starts in opened.items():
        out += [Interval(p, f.value, s, None, "info") for s in starts
                if f in (F.TICK, F.TASK, F.TXN, F.HOLD, F.FAULT)]
    out += [Interval(name, "pause", s, None) for name, s in paused.items()]
    for p, held_locks in locks.items():
        out += [Interval(p, "lock", s, None) for s, _ in held_locks]
    return out, links


def _run_out(locks: dict[str, list[tuple[int, bool]]], until: dict[int, datetime], i: int,
             now: datetime) -> list[Interval]:
    """The leases that have run out by op `i` (at `now`, its instant: the lab moves Redis's TTLs
    and a lease row's clock with virtual time), each ending its lock there; they hold no more."""
    out = []
    for p, held in locks.items():
        for start, xact in [lk for lk in held if lk[0] in until and until[lk[0]] <= now]:
            out.append(Interval(p, "lock", start, i, "expired"))
            held.remove((start, xact))
            del until[start]
    return out
