"""How ctxsim's modules may import each other, read from the source (nothing is imported).

- No import cycle between modules. An import inside a function counts as much as one at the top of a
  module: it runs later, but the modules still need each other, and the ~400 imports inside functions
  the code base has (they keep `ctxsim --help` light) would otherwise hide every circle. Imports under
  `if TYPE_CHECKING:` never run and are left out. The root package `ctxsim` is the public face: its
  lazy `__getattr__` loads the library for callers outside, so its own imports are left out too (the
  modules take only `__version__` from it).
  The cycles that stand today are listed in KNOWN_CYCLES, each to be taken apart: a cycle not listed,
  or a listed one that grew, fails; so does a listed one that is gone, so that the list only shrinks.
- No module imports another module's private name (`_name`: a function, class or constant defined
  there). A module whose file name starts with `_` is not private in this sense: in a plugin package
  the underscore tells the registry it is a helper shared by the package's modules, not a plugin
  (`reports/_terminal.py`, `formats/_input.py`), and other packages use those helpers too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "ctxsim"

# Strongly connected groups of modules as they stand; each line says what ties it.
KNOWN_CYCLES: list[frozenset[str]] = [
    # the engine takes the provider's reasoning rule from analysis.calibrate, which replays through it
    frozenset({"ctxsim.analysis.calibrate", "ctxsim.replay.engine"}),
    # the run artefact and the recorded bill beside it read each other
    frozenset({"ctxsim.replay.recorded", "ctxsim.replay.run"}),
    # the formats' face re-exports its helpers, which take the registry from the face
    frozenset({"ctxsim.formats", "ctxsim.formats._input", "ctxsim.formats._session"}),
    # the loss section of the reports and the two renderers it shares cells with
    frozenset({"ctxsim.reports._loss", "ctxsim.reports._terminal", "ctxsim.reports.markdown"}),
    # inspect's prices and number cells, used by accounting and cache_breaks, which inspect calls
    frozenset({"ctxsim.analysis.accounting", "ctxsim.analysis.cache_breaks", "ctxsim.analysis.inspect"}),
    # the synth face's option helpers and the billing module it calls
    frozenset({"ctxsim.synth", "ctxsim.synth.billing"}),
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path) -> Iterator[tuple[ast.ImportFrom | ast.Import, bool]]:
    """Every import statement of a module that runs (at the top or inside a function), and whether it
    sits under `if TYPE_CHECKING:`."""
    def walk(node: ast.AST, typing_only: bool) -> Iterator[tuple[ast.ImportFrom | ast.Import, bool]]:
        for child in ast.iter_child_nodes(node):
            inside = typing_only or (isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test))
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, inside
            yield from walk(child, inside)

    yield from walk(ast.parse(path.read_text(encoding="utf-8")), False)


def targets(node: ast.ImportFrom | ast.Import) -> Iterator[tuple[str, str | None]]:
    """(module, name taken from it or None) for each ctxsim module the statement imports; a name that is
    a submodule is that module."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name in MODULES:
                yield alias.name, None
        return
    if node.level or not node.module or node.module not in MODULES:
        return
    for alias in node.names:
        sub = f"{node.module}.{alias.name}"
        yield (sub, None) if sub in MODULES else (node.module, alias.name)


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {name: set() for name in MODULES}
    for name, path in MODULES.items():
        if name == "ctxsim":
            continue
        for node, typing_only in imports(path):
            if not typing_only:
                edges[name].update(target for target, _ in targets(node) if target != name)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(frozenset(group))
    return found


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(edges) == [frozenset({"a", "b", "c"})]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_but_the_known_ones_and_those_only_shrink() -> None:
    found = cycles(graph())
    new = [sorted(group) for group in found if not any(group <= known for known in KNOWN_CYCLES)]
    assert not new, f"an import cycle between modules (function-level imports count): {new}"
    gone = [sorted(known) for known in KNOWN_CYCLES if not any(group == known for group in found)]
    assert not gone, f"a known cycle is gone or smaller: list what is left of it in KNOWN_CYCLES: {gone}"


def test_no_module_imports_another_modules_private_name() -> None:
    taken = [f"{name} takes {imported} from {target}"
             for name, path in MODULES.items() for node, _ in imports(path) for target, imported in targets(node)
             if imported is not None and imported.startswith("_") and not imported.startswith("__")]
    assert not taken, "\n".join(taken)
