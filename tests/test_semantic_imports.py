"""The semantic-change package's static import graph has no cycle: read as the stage graph reads
code deps (:mod:`pipeline.graph.code_deps`: imports inside functions, and modules named by a
string constant; the method registry imports every module of its package), so a method module
that imported back into a module importing the registry would fail here."""

from __future__ import annotations

from pathlib import Path

from pipeline.graph.code_deps import imported_modules, module_path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "pipeline" / "semantic"


def import_graph(root: Path, package: Path) -> dict[Path, set[Path]]:
    """Each module of ``package`` -> the modules of ``package`` it imports (or names by string)."""
    graph: dict[Path, set[Path]] = {}
    for path in sorted(package.rglob("*.py")):
        targets = (module_path(root, name) for name in imported_modules(root, path))
        graph[path] = {t for t in targets if t is not None and t.is_relative_to(package)
                       and t != path}
    return graph


def find_cycle(graph: dict[Path, set[Path]]) -> list[Path] | None:
    """One cycle of ``graph`` (its modules in import order, the first repeated), or None."""
    state: dict[Path, int] = {}          # 1: on the current path, 2: done
    path: list[Path] = []

    def visit(node: Path) -> list[Path] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_the_semantic_package_has_no_import_cycle() -> None:
    graph = import_graph(REPO, PACKAGE)
    registry = PACKAGE / "methods" / "registry.py"
    # the registry imports every module of its package (it discovers the methods): the graph
    # must have those edges, or the test proves nothing
    graph[registry] |= {p for p in (PACKAGE / "methods").glob("*.py")
                        if p.stem not in ("__init__", "registry")}
    assert PACKAGE / "methods" / "contextual.py" in graph[registry]
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(str(p.relative_to(REPO)) for p in cycle)


def test_a_cycle_through_a_string_import_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "pipeline" / "semantic"
    pkg.mkdir(parents=True)
    (pkg / "registry.py").write_text('METHODS = {"m": "pipeline.semantic.method"}\n')
    (pkg / "method.py").write_text("from pipeline.semantic.scores import X\n")
    (pkg / "scores.py").write_text("from pipeline.semantic.registry import METHODS\nX = 1\n")
    cycle = find_cycle(import_graph(tmp_path, pkg))
    assert cycle is not None and {p.name for p in cycle} == {"registry.py", "method.py",
                                                              "scores.py"}
