"""Write the README's performance section from a `racelab bench --json` object (a file)."""

import json
import re
import sys
from pathlib import Path

from harness import bench

START, END = "<!-- perf:start -->", "<!-- perf:end -->"


def main(bench_json: str, readme: str) -> None:
    path = Path(readme)
    section = bench.markdown(json.loads(Path(bench_json).read_text()))
    text, n = re.subn(f"{re.escape(START)}.*?{re.escape(END)}",
                      lambda _: f"{START}\n{section}{END}", path.read_text(), flags=re.S)
    if n != 1:
        sys.exit(f"perf_readme: {readme} needs one {START} … {END} block")
    path.write_text(text)


if __name__ == "__main__":
    main(*sys.argv[1:])
