"""Which project source files a stage runs: the import closure of its module, read with ``ast``.

A DVC stage must depend on every file whose change can change its outputs. For code that is its
own ``stages/<name>.py`` plus every project module it imports, directly or through other project
modules: ``pipeline/**/*.py`` and the ``stages/_*.py`` helpers. The closure is computed from the
source text (nothing is imported, so no torch either), which also sees imports inside functions
and modules named by a string constant (imported with ``importlib``, as the variant registry does);
the stage graph writes it as each stage's code deps (:class:`Code`) and ``tests/test_graph.py``
checks it against what the interpreter really imports.

A package ``__init__.py`` that holds only a docstring runs no code and is left out.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from pathlib import Path

PACKAGES = ("pipeline", "stages")
# A string constant that names a project module, e.g. "pipeline.models.variants.context2" in the
# variant registry or "pipeline.models.temporal:Context2Bias" in a variant module, which are
# imported with importlib: counted as an import of that module.
_DOTTED = re.compile(r"((?:pipeline|stages)(?:\.[A-Za-z_]\w*)+)(?::[A-Za-z_]\w*)?")


def module_path(root: Path, module: str) -> Path | None:
    """``pipeline.infra.io`` -> ``root/pipeline/infra/io.py`` (or a package's ``__init__.py``); None if not ours."""
    parts = module.split(".")
    if parts[0] not in PACKAGES:
        return None
    base = root.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _module_name(root: Path, path: Path) -> str:
    rel = path.relative_to(root).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imported_modules(root: Path, path: Path) -> set[str]:
    """Dotted names of every module ``path`` may import (``from a import b``: ``a`` and ``a.b``)."""
    name = _module_name(root, path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return set(_imports_in(package, path.read_text(), str(path)))


# Parsing is nearly all of a graph build's time (~1,500 parses of the same ~100 files for the
# 17 stage modules' closures), so each source text is parsed once per process: keyed by its text,
# an edited file is parsed again.
@functools.lru_cache(maxsize=4096)
def _imports_in(package: str, text: str, filename: str) -> frozenset[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(text, filename=filename)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and (named := _DOTTED.fullmatch(node.value)):
            found.add(named.group(1))   # a module imported by name (importlib): registry rows
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return frozenset(found)


def runs_code(path: Path) -> bool:
    """False for a module that is only a docstring (an empty ``__init__.py``)."""
    return _runs_code(path.read_text())


@functools.lru_cache(maxsize=4096)
def _runs_code(text: str) -> bool:
    body = ast.parse(text).body
    return any(not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)) for n in body)


def _parents(module: str) -> Iterable[str]:
    parts = module.split(".")
    return (".".join(parts[:i]) for i in range(1, len(parts)))


def import_closure(root: Path, entry: Path) -> list[Path]:
    """Project files that running ``entry`` imports, ``entry`` excluded, sorted (relative to root)."""
    root = root.resolve()
    entry = (root / entry).resolve() if not entry.is_absolute() else entry.resolve()
    seen: set[Path] = set()
    named: set[str] = set()   # module names already resolved (most are imported many times)
    todo = [entry]
    while todo:
        path = todo.pop()
        for module in imported_modules(root, path):
            for name in (*_parents(module), module):
                if name in named:
                    continue
                named.add(name)
                target = module_path(root, name)
                if target is not None and target not in seen and target != entry:
                    seen.add(target)
                    todo.append(target)
    return sorted((p.relative_to(root) for p in seen if runs_code(p)), key=str)


class Code:
    """A stage's code deps: ``stages/<name>.py`` and its import closure, each computed once
    (the closures of the stage modules overlap, and every run of a variant shares its stage's)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._deps: dict[str, list[str]] = {}

    def __call__(self, name: str) -> list[str]:
        if name not in self._deps:
            entry = Path("stages") / f"{name}.py"
            self._deps[name] = [str(entry), *(str(p) for p in import_closure(self.root, entry))]
        return list(self._deps[name])
