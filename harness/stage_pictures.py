"""The pictures the stage READMEs show, redrawn from fresh runs (`make pictures`).

Each README names its picture by its link, `docs/pictures/<stage folder>.<scenario>.svg` (the
folder's `/` written `-`): that link is the only list. A run's picture has nothing measured in
real time in it, so a committed picture that differs from a fresh one is stale.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from harness import writes
from harness.engine.model import scenario as scenarios
from harness.engine.model import stages
from harness.engine.model.result import RunResult
from harness.engine.run import cells
from harness.engine.views import pictures

FOLDER = "docs/pictures"
_LINK = re.compile(rf"{FOLDER}/([\w-]+)\.([\w-]+)\.svg")


@dataclass(frozen=True)
class Picture:
    stage: stages.Stage
    scenario: str
    path: Path  # where it is committed

    def run(self) -> RunResult:
        """A fresh run of the picture's cell, as the matrix makes it."""
        return cells.run_cell(self.stage, scenarios.resolve(self.scenario, self.stage.track))

    def draw(self, result: RunResult | None = None) -> str:
        """The picture of `result`, a run of this cell (else of a fresh one)."""
        return pictures.svg(result if result is not None else self.run())


def wanted() -> list[Picture]:
    """Every picture a shipped stage's README links to, in stage order."""
    found = []
    for stage in stages.all_stages():
        if stage.root != stages.ROOT:
            continue
        readme = stage.path / "README.md"
        text = readme.read_text() if readme.is_file() else ""
        for flat, name in _LINK.findall(text):
            if flat != stage.folder.replace("/", "-"):
                raise ValueError(f"{readme}: links the picture of {flat}, not of {stage.folder}")
            found.append(Picture(stage, name, stages.ROOT / FOLDER / f"{flat}.{name}.svg"))
    return found


def main() -> int:
    for picture in wanted():
        writes.replace_file(picture.path, picture.draw().encode())
        print(f"drew {picture.path.relative_to(stages.ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
