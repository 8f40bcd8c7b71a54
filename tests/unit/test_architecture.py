"""The harness's shape: packages by role whose imports run one way, no import cycles, an engine
that imports no track, folders one can take in at a glance."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

from tests.helpers import ROOT

HARNESS = ROOT / "harness"
MAX_LINES = 330  # "about 300": past it, a warning (concepts cut modules, not a line count)
TOO_LONG = 450  # past it, no one reads a module in one sitting: a failure
MAX_MODULES = 15  # a folder one takes in at a glance

# Each layer of the harness and the layers it may import (its own always). A module belongs to
# the layer of the longest prefix that names it. The engine's packages: model (data and
# declarations) at the bottom; inside (the lab processes) and views (what people look at) on it;
# run (the harness side of a run) on inside; explore (step mode, the search) on run. The plugins
# (tracks, fault kinds, job schedulers) use the engine; the commands use everything.
LAYERS: dict[str, set[str]] = {
    "base": set(),
    "infra": {"base"},
    "model": {"base"},
    "inside": {"model", "infra", "base"},
    "views": {"model", "base"},
    "run": {"inside", "model", "infra", "base"},
    "explore": {"run", "inside", "model", "infra", "base"},
    "plugins": {"explore", "run", "inside", "views", "model", "infra", "base"},
    "commands": {"plugins", "explore", "run", "inside", "views", "model", "infra", "base"},
}
LAYER_OF = {
    "harness": "base", "harness.errors": "base", "harness.interrupts": "base",
    "harness.writes": "base", "harness.engine": "base",
    "harness.infra": "infra", "harness.fault_tools": "infra",
    "harness.engine.model": "model", "harness.engine.inside": "inside",
    "harness.engine.views": "views", "harness.engine.run": "run",
    "harness.engine.explore": "explore",
    "harness.tracks": "plugins", "harness.faults": "plugins", "harness.schedulers": "plugins",
    "harness.builtins": "plugins", "harness.api": "plugins", "harness.axes": "plugins",
    "harness.cli": "commands", "harness.bench": "commands", "harness.exercises": "commands",
    "harness.stage_pictures": "commands", "harness.launch": "commands",
    "harness.testing": "commands",
}


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
    plugins = ("harness.tracks", "harness.schedulers", "harness.faults", "harness.builtins",
               "harness.axes")
    leaks = sorted((m, e) for m, edges in graph.items() if m.startswith("harness.engine")
                   for e in edges if e.startswith(plugins))
    assert leaks == []


def layer_of(module: str) -> str:
    """The layer of the longest prefix in LAYER_OF that names the module (KeyError: none does)."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if (prefix := ".".join(parts[:n])) in LAYER_OF:
            return LAYER_OF[prefix]
    raise KeyError(module)


def against_the_layers(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every import (type-only ones too) from a module to one of a layer it may not import."""
    return sorted((m, e) for m, edges in graph.items() for e in edges
                  if layer_of(e) != layer_of(m) and layer_of(e) not in LAYERS[layer_of(m)])


def test_every_harness_module_has_a_layer():
    """A new module or package of the harness is placed in a layer before it lands."""
    unplaced = []
    for m in import_graph(HARNESS):
        try:
            layer_of(m)
        except KeyError:
            unplaced.append(m)
    assert unplaced == []


def test_the_harness_imports_run_one_way_between_its_layers():
    """model imports no other package of the engine; views and inside import only model; run
    imports no view and no exploration; nothing under the commands imports a command."""
    assert against_the_layers(import_graph(HARNESS)) == []


def test_the_layer_check_finds_an_import_against_the_layers():
    """The check itself: model → run (a type-only import) and views → run are reported; run →
    model and a command → anything are not."""
    graph = {"harness.engine.model.a": {"harness.engine.run.b"},
             "harness.engine.views.c": {"harness.engine.run.b"},
             "harness.engine.run.b": {"harness.engine.model.a"},
             "harness.cli.d": {"harness.engine.run.b", "harness.tracks.e"}}
    assert against_the_layers(graph) == [("harness.engine.model.a", "harness.engine.run.b"),
                                         ("harness.engine.views.c", "harness.engine.run.b")]


def test_no_folder_of_the_harness_holds_more_than_15_modules():
    """A folder one takes in at a glance: past 15 modules it wants rooms of its own."""
    crowded = {str(d.relative_to(ROOT)): n for d in [HARNESS, *HARNESS.rglob("*")] if d.is_dir()
               if (n := len([p for p in d.glob("*.py") if p.name != "__init__.py"])) > MAX_MODULES}
    assert crowded == {}


def test_the_engine_has_no_module_of_its_own_outside_its_packages():
    """harness/engine/ holds its packages and its __init__.py only."""
    assert sorted(p.name for p in (HARNESS / "engine").glob("*.py")) == ["__init__.py"]


def test_every_harness_module_reads_in_one_sitting():
    """No module is past 450 lines; one past about 300 is named in a warning, not failed: a
    module is cut by concept, and a reader may ask whether such a one holds two."""
    lines = {str(p.relative_to(ROOT)): len(p.read_text().splitlines())
             for p in HARNESS.rglob("*.py")}
    for path, n in sorted(lines.items()):
        if n > MAX_LINES:
            warnings.warn(f"{path}: {n} lines", stacklevel=1)
    assert {path: n for path, n in lines.items() if n > TOO_LONG} == {}


def test_no_two_test_modules_share_a_file_name():
    """tests/ has no __init__.py files: two test_x.py in different folders stop pytest's
    collection of the whole suite with an 'import file mismatch'."""
    from collections import Counter

    names = Counter(p.name for p in (ROOT / "tests").rglob("test_*.py"))
    assert [n for n, k in names.items() if k > 1] == []


def test_only_the_run_package_reaches_into_a_fleet():
    """Faults act through a RunControl, interleavers through a Moment: no module outside
    harness/engine/run/ touches a fleet's private parts (`fleet._…`)."""
    reaching = [f"{p.relative_to(ROOT)}:{n}" for p in HARNESS.rglob("*.py")
                if (HARNESS / "engine" / "run") not in p.parents
                for n, line in enumerate(p.read_text().splitlines(), 1) if "fleet._" in line]
    assert reaching == []
