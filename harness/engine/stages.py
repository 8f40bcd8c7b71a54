"""The stages that ship with the lab, and how a user may name one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.errors import UserError

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Stage:
    id: str  # "03" or "alerts-01"
    folder: str  # "03-claim-row" or "alerts/01-redis-claim"
    track: str  # "cron" or "alerts"

    @property
    def path(self) -> Path:
        return ROOT / self.folder

    @property
    def name(self) -> str:
        return self.folder


def all_stages() -> list[Stage]:
    """Every stage folder present in this checkout, cron track first."""
    found = [
        Stage(p.name[:2], p.name, "cron")
        for p in sorted(ROOT.glob("[0-9][0-9]-*"))
        if (p / "myapp").is_dir()
    ]
    found += [
        Stage(f"alerts-{p.name[:2]}", f"alerts/{p.name}", "alerts")
        for p in sorted((ROOT / "alerts").glob("[0-9][0-9]-*"))
        if (p / "myapp").is_dir()
    ]
    return found


def stages_of(track: str) -> list[Stage]:
    return [s for s in all_stages() if s.track == track]


def resolve(name: str) -> Stage:
    """Accept `03`, `3`, `03-claim-row`, `alerts-01`, `alerts/01-redis-claim`."""
    wanted = name.strip().rstrip("/")
    for stage in all_stages():
        aliases = {stage.id, stage.folder, stage.folder.split("/")[-1]}
        if stage.track == "cron" and wanted.isdigit():
            aliases.add(str(int(stage.id)))
        if wanted in aliases:
            return stage
    known = ", ".join(s.id for s in all_stages())
    raise UserError(f"unknown stage {name!r}; known stages: {known}")
