"""The stages that ship with the lab, and how a user may name one."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from harness.engine.model import registry
from harness.errors import UserError, did_you_mean

ROOT = Path(__file__).resolve().parents[3]  # the checkout: harness/engine/model/stages.py


FROM_FILE = ".racelab-from"  # in a copied stage folder: the stage it was copied from


@dataclass(frozen=True)
class Stage:
    id: str  # "03" or "alerts-01"
    folder: str  # "03-claim-row" or "alerts/01-redis-claim"
    track: str  # the name of its track
    root: Path = ROOT  # the folder it was found under

    @property
    def path(self) -> Path:
        return self.root / self.folder

    @property
    def name(self) -> str:
        return self.folder


def named(stage: Stage) -> str:
    """What names the stage on a command line: its id, or `--project PATH` for a track whose
    stages are named by folder (a project of the user's own)."""
    if registry.track(stage.track).stage_dir is None:
        return f"--project {shlex.quote(str(stage.path))}"
    return stage.id


def all_stages() -> list[Stage]:
    """Every `NN-name/myapp` folder in each track's stage_dir, this checkout's before a plugin
    folder's (RACELAB_PLUGINS), track by track in registration order."""
    found = []
    for track in registry.tracks().values():
        if track.stage_dir is None:  # its stages are named, not found
            continue
        for root in [ROOT, *registry.plugin_roots()]:
            base = root / track.stage_dir if track.stage_dir else root
            found += [
                Stage(track.stage_id(p.name), str(p.relative_to(root)), track.name, root)
                for p in sorted(base.glob("[0-9][0-9]-*"))
                if (p / "myapp").is_dir()
            ]
    return found


def stages_of(track: str) -> list[Stage]:
    return [s for s in all_stages() if s.track == track]


def resolve(name: str) -> Stage:
    """Accept `03`, `3`, `03-claim-row`, `alerts-01`, `alerts/01-redis-claim`, or the path of
    a copied stage folder."""
    wanted = name.strip().rstrip("/")
    if not wanted:
        raise UserError("an empty stage name; known stages: "
                        f"{', '.join(s.id for s in all_stages())}, or a copied stage's folder")
    if stage := _known(wanted):
        return stage
    if Path(wanted).is_dir():
        folder = Path(wanted).resolve()
        for track in registry.tracks().values():
            if track.claims is not None and track.claims(folder):  # an app of its own
                return Stage(folder.name, folder.name, track.name, folder.parent)
        return from_folder(Path(wanted))
    known = [s.id for s in all_stages()]
    names = known + [s.folder.split("/")[-1] for s in all_stages()]
    raise UserError(f"unknown stage {name!r}{did_you_mean(wanted, names)}; known stages: "
                    f"{', '.join(known)}, or a copied stage's folder")


def from_folder(path: Path) -> Stage:
    """A copy of a stage outside the folders racelab searches (an exercise's scratch folder).
    Its track is that of the stage it was copied from, named in its .racelab-from file."""
    if not (path / "myapp").is_dir():
        raise UserError(f"{path}: not a stage folder (no myapp/ package in it)")
    try:
        started = (path / FROM_FILE).read_text().strip()
    except OSError:
        raise UserError(f"{path}: no {FROM_FILE} file naming the stage it was copied from "
                        "(e.g. 03-claim-row)") from None
    origin = _known(started)
    if origin is None:
        raise UserError(f"{path / FROM_FILE}: {started!r} is not a stage racelab knows")
    path = path.resolve()
    return Stage(path.name, path.name, origin.track, path.parent)


def _known(wanted: str) -> Stage | None:
    for stage in all_stages():
        aliases = {stage.id, stage.folder, stage.folder.split("/")[-1]}
        if stage.id.isdigit() and wanted.isdigit():
            aliases.add(str(int(stage.id)))
        if wanted in aliases:
            return stage
    return None
