"""The reduction (`racelab explore --strategy dpor`): one schedule per class of equivalent
interleavings, with sleep sets, up to a bound on preemptions or with none (`--preemptions all`).

Two schedules are equivalent when one is the other with adjacent independent steps swapped:
they give the same outcome. Steps of two replicas are dependent (`dependent`) when what they
touch (harness.engine.inside.access, read from each statement before it runs) lets one see,
wait for or exclude the other: both write or lock one table (or one locks a row the other's
foreign key checks), both take one advisory-lock key, or one ends a transaction (COMMIT,
ROLLBACK) that wrote, locked or took what the other touches. A plain read and another's
uncommitted write are independent (READ COMMITTED sees only what committed). A step whose
statement cannot be read (a CTE, a Redis command) is dependent on every step, and so is every
step of a stage whose schema has triggers, rules or functions. The relation is kept per table,
not per row: two writes of different rows of one table are ordered all the same.

The search is Flanagan and Godefroid's dynamic partial-order reduction with sleep sets,
stateless like the bounded search (harness.engine.explore.dfs): each run plays a prefix, then
goes on without preempting, never choosing a replica asleep. After a run, every step is
checked against the next step of each replica that could move there: where the last step
before it that it depends on, of another replica, did not happen before it (vector clocks),
the other order is added at that step's state (that replica if it could move there, else every
replica that could), and, as for a bound on preemptions (Coons, Musuvathi and McKinley's bounded
POR), also where that step's replica took over. Without a bound, a replica explored at a state
falls asleep in its siblings while they take steps independent of its own, and a run that can
go on only with sleeping replicas (sleep-set blocked) covers nothing new: it is counted, not a
class; under a bound no one sleeps (an equivalent schedule may cost more preemptions). A race
between waiters (harness.engine.explore.steps.RACY_WAITS) is branched on as the bounded search
does. The bound, when there is one, counts preemptions as the bounded search does.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from harness.engine.explore import strategy
from harness.engine.explore.dfs import ALL, Prefix, _replayed
from harness.engine.explore.outcomes import Exploration
from harness.engine.explore.steps import Step, View, preemptions
from harness.engine.explore.strategy import Ahead, Ran
from harness.engine.inside.access import Access
from harness.engine.model import registry
from harness.engine.model.scenario import Scenario
from harness.engine.model.stages import Stage
from harness.engine.run import runner


@dataclass(frozen=True)
class Touch:
    """What one step of one replica touches, for the dependence relation: a statement's own
    tables and keys, or for the end of a transaction everything that transaction wrote,
    locked or took. Keys: `a:K` an advisory lock's, `u:TABLE:COLUMNS=VALUES` a unique key an
    inserted row takes (`u:TABLE:*`: one it could not read), `*` in place of either: any."""

    reads: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()  # tables whose rows it updates, deletes or locks
    inserts: frozenset[str] = frozenset()
    shared: frozenset[str] = frozenset()  # rows locked by a foreign key's check (KEY SHARE)
    keys: frozenset[str] = frozenset()
    ends: bool = False
    unknown: bool = False


ANY = Touch(unknown=True)


def dependent(a: Touch, b: Touch) -> bool:
    """Whether steps of two replicas touching `a` and `b` can see, wait for or exclude each
    other, so that their order can change an outcome. Two inserts into one table are
    independent unless they take one unique key (their order may swap ids a sequence hands
    out: a choice of ours, as no lab checker reads an id's value)."""
    if a.unknown or b.unknown:
        return True
    if a.ends and b.ends:
        return False
    if b.ends:
        a, b = b, a
    if _same_key(a.keys, b.keys) or a.shared & b.writes:
        return True
    if a.ends:  # what a's transaction let go or made visible, b reads, writes or waits for
        return bool((a.writes | a.inserts) & (b.reads | b.writes | b.shared)
                    or a.writes & b.inserts)
    return bool(a.writes & (b.writes | b.inserts | b.shared) or b.writes & (a.inserts | a.shared))


def _same_key(a: frozenset[str], b: frozenset[str]) -> bool:
    if a & b:
        return True
    for x in a:
        for y in b:
            if _wild(x, y) or _wild(y, x):
                return True
    return False


def _wild(pattern: str, key: str) -> bool:
    """`*` matches every key; `a:*` every advisory key; `u:TABLE:*` every unique key of TABLE."""
    return pattern == "*" or (pattern.endswith("*") and key.startswith(pattern[:-1]))


@dataclass
class Schema:
    """The stage's tables as the relation needs them: what each one's foreign keys reference
    and what references it, its unique keys (each a tuple of columns) and the columns a
    sequence fills; `opaque`: the schema has more than tables and indexes."""

    references: dict[str, set[str]] = field(default_factory=dict)
    referenced_by: dict[str, set[str]] = field(default_factory=dict)
    unique: dict[str, list[tuple[str, ...]]] = field(default_factory=dict)
    generated: dict[str, set[str]] = field(default_factory=dict)
    opaque: bool = False

    @classmethod
    def of(cls, stage: Stage) -> Schema:
        schema = cls()
        for ddl in runner.ddl_of(stage):
            index = re.match(r"\s*CREATE\s+UNIQUE\s+INDEX\s+(?:\w+\s+)?ON\s+\"?(\w+)\"?\s*"
                             r"\(([\w\s,\"]+)\)\s*\Z", ddl, re.I)
            if index:
                schema._unique(index.group(1), index.group(2))
                continue
            m = re.match(r"\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?\"?(\w+)", ddl, re.I)
            if m is None:
                if not re.match(r"\s*CREATE\s+(?:INDEX|SEQUENCE)\b", ddl, re.I):
                    schema.opaque = True  # a trigger, a rule, a function, a partial index, …
                continue
            table = m.group(1).lower()
            for target in re.findall(r"REFERENCES\s+\"?(\w+)", ddl, re.I):
                schema.references.setdefault(table, set()).add(target.lower())
                schema.referenced_by.setdefault(target.lower(), set()).add(table)
            for columns in re.findall(r"(?:PRIMARY\s+KEY|UNIQUE)\s*\(([^)]*)\)", ddl, re.I):
                schema._unique(table, columns)
            for line in ddl.splitlines():
                col = re.match(r"\s*\"?(\w+)\"?\s+([\w ()]+)", line)
                if col is None:
                    continue
                name, rest = col.group(1).lower(), line[col.end(1):]
                if re.search(r"\b(?:SMALL|BIG)?SERIAL\b|\bIDENTITY\b|nextval\(", rest, re.I):
                    schema.generated.setdefault(table, set()).add(name)
                if re.search(r"\bPRIMARY\s+KEY\b|\bUNIQUE\b", rest, re.I) \
                        and not re.match(r"\s*(?:PRIMARY|UNIQUE|CONSTRAINT)\b", line, re.I):
                    schema._unique(table, name)
        return schema

    def _unique(self, table: str, columns: str) -> None:
        key = tuple(sorted(c.strip().strip('"').lower() for c in columns.split(",")))
        self.unique.setdefault(table.lower(), []).append(key)

    def touch(self, a: Access) -> Touch:
        """A statement's touch: its updates and deletes reach the rows that reference them (a
        cascade); its writes lock the rows they reference (the foreign key's check); its
        inserted rows take their unique keys."""
        if a.unknown or self.opaque:
            return ANY
        writes = set(a.writes)
        for table in a.writes:
            writes |= self.referenced_by.get(table, set())
        shared = {t for table in a.writes | a.inserts for t in self.references.get(table, set())}
        keys = {f"a:{k}" for k in a.keys}
        for table in a.inserts:
            keys |= self._keys(table, a.rows)
        return Touch(a.reads, frozenset(writes), a.inserts, frozenset(shared - writes),
                     frozenset(keys), a.ends)

    def _keys(self, table: str, rows) -> set[str]:
        """The unique keys inserting `rows` into `table` takes: a key whose columns a sequence
        fills is new; one whose values cannot be read is any key of the table."""
        found = set()
        for columns in self.unique.get(table, []):
            if set(columns) <= self.generated.get(table, set()):
                continue
            for row in rows if rows is not None else [None]:
                values = dict(row) if row is not None else {}
                if row is None or any(values.get(c) is None for c in columns):
                    found.add(f"u:{table}:*")
                    break
                found.add(f"u:{table}:{','.join(columns)}=" +
                          ",".join(values[c] for c in columns))
        return found


class Transactions:
    """Each replica's open transaction as the steps go: the touch of each next step, where the
    end of a transaction touches all that transaction did."""

    def __init__(self, schema: Schema):
        self.schema = schema
        self.open: dict[str, Touch] = {}
        self.instant = -1

    def at(self, instant: int) -> None:
        """The steps are now in `instant`: at a new one, every tick before it has ended."""
        if instant != self.instant:
            self.open, self.instant = {}, instant

    def next(self, name: str, access: Access) -> Touch:
        """What `name`'s next step (of `access`) touches, its transaction so far counted."""
        if not access.ends:
            return self.schema.touch(access)
        done = self.open.get(name, Touch())
        return Touch(done.reads, done.writes, done.inserts, done.shared, done.keys, True,
                     done.unknown)

    def moved(self, name: str, access: Access) -> Touch:
        """`name` took that step: its touch; its transaction grows, or ends."""
        touch = self.next(name, access)
        if touch.ends:
            self.open.pop(name, None)
            return touch
        was = self.open.get(name, Touch())
        self.open[name] = Touch(was.reads | touch.reads, was.writes | touch.writes,
                                was.inserts | touch.inserts, was.shared | touch.shared,
                                was.keys | touch.keys, unknown=was.unknown or touch.unknown)
        return touch


def asleep_after(asleep: dict[str, Touch], name: str, touch: Touch) -> dict[str, Touch]:
    """The sleep set once `name` took a step touching `touch`: who slept on and is independent
    of it sleeps on."""
    return {r: t for r, t in asleep.items() if r != name and not dependent(t, touch)}


class Sleeper(Prefix):
    """A chooser: a prefix, then no preemption and no replica asleep (a preemption rather than
    a sleeper, within the bound); the sleep set as it stood at the prefix's end."""

    reads_access = True  # steps.READS_ACCESS: its steps' accesses are the dependence relation

    def __init__(self, tokens: list[str], asleep: dict[str, Touch], schema: Schema,
                 bound: float):
        super().__init__(tokens)
        self.asleep, self.bound = dict(asleep), bound
        self.txns = Transactions(schema)
        self.preempted = 0
        self.last: tuple[str, Access, int] | None = None  # the step taken, its instant
        self.instant = -1

    def choose(self, view: View) -> str:
        if self.last is not None:  # the step chosen last has been taken
            name, access, instant = self.last
            touch = self.txns.moved(name, access)
            if self.used > len(self.tokens):  # past the prefix
                self.asleep = asleep_after(self.asleep, name, touch)
        if view.instant != self.instant:  # a new instant: no one sleeps into it
            if self.instant >= 0:
                self.asleep = {}
            self.instant = view.instant
        self.txns.at(view.instant)
        name = super().choose(view)
        self.preempted += view.previous in view.next and name != view.previous
        self.last = (name, view.access.get(name, Access(unknown=True)), view.instant)
        return name

    def then(self, view: View) -> str:
        awake = [n for n in view.next if n not in self.asleep]
        if view.previous in view.next:
            if view.previous not in self.asleep:
                return view.previous
            if awake and self.preempted < self.bound:
                return min(awake)
            return view.previous  # sleep-set blocked: nothing new from here
        return min(awake) if awake else min(view.next)


@dataclass
class Node:
    """A state of the search (a prefix of steps), as the first run through it saw it."""

    options: tuple[str, ...]
    touches: dict[str, Touch]  # what each replica that could move would touch
    asleep: dict[str, Touch]
    previous: str | None
    used: int  # preemptions on the way here
    done: set[str] = field(default_factory=set)  # replicas explored (or to be) from here


class Reduction:
    """Dynamic partial-order reduction with sleep sets, stateless, one run per schedule."""

    def __init__(self, bound: float):
        self.bound = bound
        self.nodes: dict[tuple[str, ...], Node] = {}
        self.todo: list[tuple[list[str], dict[str, Touch]]] = []
        self.schema = Schema()
        self.runs = self.blocked = 0

    def plan(self, ahead: Ahead) -> None:
        self.schema = Schema.of(ahead.stage)
        self.todo = [([], {})]

    def new_execution(self) -> Sleeper | None:
        if not self.todo:
            return None
        tokens, asleep = self.todo.pop()
        return Sleeper(tokens, asleep, self.schema, self.bound)

    def executed(self, chooser: Sleeper, ran: Ran) -> None:
        self.runs += 1
        if not ran.reached:
            return
        _replayed(chooser.tokens, ran.steps)
        self._analyse(chooser.tokens, chooser.asleep, ran.steps)

    def to_json(self) -> dict:
        return {"preemptions": ALL if self.bound == math.inf else int(self.bound),
                "classes": self.runs - self.blocked, "sleep_blocked": self.blocked}

    def _analyse(self, prefix: list[str], asleep: dict[str, Touch], steps: list[Step]) -> None:
        """Record the run's states, then add the other orders of its racing steps."""
        tokens = [s.token for s in steps]
        txns = Transactions(self.schema)
        taken: list[Touch] = []
        nexts: list[dict[str, Touch]] = []
        blocked = False
        for k, s in enumerate(steps):
            txns.at(s.instant)
            if k and s.instant != steps[k - 1].instant:
                asleep = {}
            nexts.append({o: txns.next(o, a) for o, a in zip(s.options, s.accesses, strict=True)})
            access = dict(zip(s.options, s.accesses, strict=True))[s.chosen]
            key = tuple(tokens[:k])
            if key not in self.nodes:
                self.nodes[key] = Node(s.options, nexts[k], asleep if k >= len(prefix) else {},
                                       s.previous, preemptions(steps[:k]))
            self.nodes[key].done.add(s.chosen)
            blocked = blocked or (k >= len(prefix) and s.chosen in asleep)
            taken.append(txns.moved(s.chosen, access))
            if k >= len(prefix) - 1 and s.racers and (k >= len(prefix) or "=" not in prefix[k]):
                after = asleep_after(asleep, s.chosen, taken[k]) if k >= len(prefix) else {}
                self.todo += [(tokens[:k] + [f"{s.chosen}={other}"], after)
                              for other in s.racers if other not in s.went]
            if k >= len(prefix):
                asleep = asleep_after(asleep, s.chosen, taken[k])
        self.blocked += blocked
        for i, q in _races(steps, taken, nexts):
            self._backtrack(tokens, steps, i, q)

    def _backtrack(self, tokens: list[str], steps: list[Step], i: int, q: str) -> None:
        """Explore `q` (or, where it could not move, every replica that could) at the state
        before step i, and under a bound also where step i's replica took over."""
        at = [i]
        if self.bound != math.inf:
            b = i
            while b and steps[b - 1].chosen == steps[i].chosen \
                    and steps[b - 1].instant == steps[i].instant:
                b -= 1
            at.append(b)
        for k in at:
            node = self.nodes[tuple(tokens[:k])]
            for c in ([q] if q in node.options else node.options):
                self._schedule(tokens, k, node, c)

    def _schedule(self, tokens: list[str], k: int, node: Node, c: str) -> None:
        if c in node.done or c in node.asleep:
            return
        if node.used + (node.previous in node.options and c != node.previous) > self.bound:
            return
        explored = {d: node.touches[d] for d in node.done if d in node.touches}
        node.done.add(c)
        asleep = {r: t for r, t in {**node.asleep, **explored}.items()
                  if not dependent(t, node.touches[c])}
        # Under a bound no one sleeps: a schedule equivalent to one explored may need more
        # preemptions than that one, or fewer, so a sibling's subtree within the bound need
        # not hold it (Coons, Musuvathi and McKinley's bounded POR keeps only the backtracking).
        self.todo.append((tokens[:k] + [c], asleep if self.bound == math.inf else {}))


def _races(steps: list[Step], taken: list[Touch], nexts: list[dict[str, Touch]]
           ) -> list[tuple[int, str]]:
    """(i, q): at the state before step k, q's next step depends on step i of another replica,
    the last such one, and step i did not happen before q's steps (vector clocks), for every k
    and every replica q that could move there."""
    clocks: dict[str, dict[str, int]] = {}  # each replica's vector clock
    stamps: list[dict[str, int]] = []  # each step's
    counts: dict[str, int] = {}
    start = 0  # the first step of the current instant
    found = []
    for k, s in enumerate(steps):
        if k and s.instant != steps[k - 1].instant:  # the instant before happened before all
            start = k
            every: dict[str, int] = {}
            for c in clocks.values():
                every = _join(every, c)
            clocks = {p: dict(every) for p in clocks}
        for q, touch in nexts[k].items():
            known = clocks.get(q, {})
            for i in range(k - 1, start - 1, -1):
                p = steps[i].chosen
                if p != q and dependent(taken[i], touch):
                    if stamps[i][p] > known.get(p, 0):
                        found.append((i, q))
                    break
        p = s.chosen
        clock = dict(clocks.get(p, {}))
        for i in range(start, k):
            if steps[i].chosen != p and dependent(taken[i], taken[k]):
                clock = _join(clock, stamps[i])
        counts[p] = counts.get(p, 0) + 1
        clock[p] = counts[p]
        stamps.append(clock)
        clocks[p] = clock
    return found


def _join(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {p: max(a.get(p, 0), b.get(p, 0)) for p in a.keys() | b.keys()}


def explore(stage: Stage, s: Scenario, bound: float = math.inf, on_schedule=None,
            workers: int | None = None) -> Exploration:
    """One schedule per class of `s` on `stage`, within `bound` preemptions."""
    return strategy.explore(stage, s, Reduction(bound), DPOR.name, on_schedule, workers)


class DPOR:
    """The strategy kind: `--preemptions K` (dfs's option, borrowed) or `all`."""

    name = "dpor"
    help = ("one schedule per class of equivalent interleavings (partial-order reduction with "
            "sleep sets), within --preemptions or with none (--preemptions all)")
    borrows = ("preemptions",)

    def add_options(self, parser) -> None:
        pass

    def new(self, args) -> Reduction:
        return Reduction(math.inf if args.preemptions == ALL else args.preemptions)

    def heading(self, data: dict) -> str:
        bound = data["preemptions"]
        within = "no bound" if bound == ALL else f"≤ {bound} preemptions"
        return f"one schedule per class · {within}"

    def scope(self, data: dict) -> str:
        bound = data["preemptions"]
        every = "in any order" if bound == ALL else f"with at most {bound} preemptions"
        return f"{every} (one of each class of equivalent schedules)"


registry.add_strategy(DPOR())
