"""The harness's shape: no import cycles, an engine that imports no track, modules one can read
in one sitting."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import ROOT

HARNESS = ROOT / "harness"
MAX_LINES = 330  # "about 300": a module one reads in one sitting


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, at any depth of its code: a function-level
    import is still an edge, and so is one under `if TYPE_CHECKING:` (it is not run, but a
    module that needs another's types to be read depends on it all the same)."""
    package = root.name
    modules = {_module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        todo: list[ast.AST] = [ast.parse(path.read_text(), str(path))]
        while todo:
            node = todo.pop()
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name.split(".")[0] == package}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                    and node.module.split(".")[0] == package:
                for alias in node.names:  # `from pkg.a import b`: module pkg.a.b if it is one
                    sub = f"{node.module}.{alias.name}"
                    edges.add(sub if sub in modules else node.module)
            todo.extend(ast.iter_child_nodes(node))
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle found by a depth-first walk, each as the modules along it."""
    found: list[list[str]] = []
    state: dict[str, str] = {}  # "open" while on the walk's path, "done" after

    def walk(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                walk(nxt, [*path, nxt])
        state[node] = "done"

    for start in sorted(graph):
        if start not in state:
            walk(start, [start])
    return found


def test_the_harness_has_no_import_cycle():
    """No module of the harness imports, through any chain, a module that imports it back,
    counting the imports made for type annotations only."""
    assert cycles(import_graph(HARNESS)) == []


def test_the_cycle_check_finds_cycles_through_function_level_and_type_only_imports(tmp_path):
    """The check itself: a → b at the top, b → a inside a function, is reported; so is c → d
    under `if TYPE_CHECKING:` with d → c at the top; e, imported by c, closes no loop."""
    pkg = tmp_path / "toy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from toy import b\n")
    (pkg / "b.py").write_text("def f():\n    from toy.a import thing\n    return thing\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nimport toy.e\n"
                              "if TYPE_CHECKING:\n    from toy import d\n")
    (pkg / "d.py").write_text("import toy.c\n")
    (pkg / "e.py").write_text("")
    assert cycles(import_graph(pkg)) == [["toy.a", "toy.b", "toy.a"], ["toy.c", "toy.d", "toy.c"]]


def test_the_engine_imports_no_track_scheduler_or_fault_kind():
    """harness.engine reaches tracks, schedulers and fault kinds only through its registry."""
    graph = import_graph(HARNESS)
    plugins = ("harness.tracks", "harness.schedulers", "harness.faults", "harness.builtins")
    leaks = sorted((m, e) for m, edges in graph.items() if m.startswith("harness.engine")
                   for e in edges if e.startswith(plugins))
    assert leaks == []


def test_every_harness_module_reads_in_one_sitting():
    """No module of the harness is much over 300 lines."""
    long = {str(p.relative_to(ROOT)): n for p in HARNESS.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_no_two_test_modules_share_a_file_name():
    """tests/ has no __init__.py files: two test_x.py in different folders stop pytest's
    collection of the whole suite with an 'import file mismatch'."""
    from collections import Counter

    names = Counter(p.name for p in (ROOT / "tests").rglob("test_*.py"))
    assert [n for n, k in names.items() if k > 1] == []
