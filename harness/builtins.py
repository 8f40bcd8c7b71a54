"""The lab's own tracks, fault kinds, schedulers, views of a run and exploration strategies. Each
module registers what it defines when imported, in this order: the order the fault catalogue,
the matrix, the scenario search and `run --help` list them in (the search draws faults by
position, so the order is part of every seed)."""

import importlib

MODULES = (
    "harness.tracks.cron",  # the cron track and its data faults
    "harness.faults.process",  # faults on any track's processes and writes
    "harness.schedulers",  # EventBridge Scheduler (and duplicate-delivery), the replicas' loop
    "harness.tracks.alerts",  # the alerts track and its faults
    "harness.tracks.peers",  # the cron track's payout on scheduler libraries
    "harness.tracks.detours",  # what teams try instead of the claim row (a Redis lock, …)
    "harness.faults.pause",  # a replica stands still inside its transaction (SIGSTOP/SIGCONT)
    "harness.tracks.project",  # a job of the user's own, described in its pyproject.toml
    "harness.axes.isolation",  # the isolation level of the replicas' transactions
    "harness.engine.views.run_views",  # the table, --json, --timeline, --svg, --html
    "harness.engine.explore.dfs",  # explore's bounded depth-first search (the default)
    "harness.engine.explore.walks",  # explore's random walks
    "harness.engine.explore.pct",  # explore's probabilistic concurrency testing
    "harness.engine.explore.dpor",  # explore's partial-order reduction
)

for name in MODULES:
    importlib.import_module(name)
