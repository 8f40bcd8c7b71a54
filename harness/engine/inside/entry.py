"""The mains of the lab's processes, as the harness names them when it starts one.

Each imports harness.engine.inside.agent only when called, in the child: the forkserver has it
preloaded, and the harness itself never needs the stage side's imports (SQLAlchemy's ORM and
asyncio extension, the PostgreSQL dialect), a fifth of a second of every command's start.
"""

from __future__ import annotations


def serve(*args) -> None:
    from harness.engine.inside import agent

    agent.serve(*args)


def run_task(*args) -> None:
    from harness.engine.inside import agent

    agent.run_task(*args)


def zygote(*args) -> None:
    from harness.engine.inside import agent

    agent.zygote(*args)


def schema_ddl(*args) -> None:
    from harness.engine.inside import agent

    agent.schema_ddl(*args)
