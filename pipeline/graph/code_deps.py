"""Which project source files a stage runs: the import closure of its module, read with ``ast``.

A DVC stage must depend on every file whose change can change its outputs. For code that is its
own ``stages/<name>.py`` plus every project module it imports, directly or through other project
modules: ``pipeline/**/*.py`` and the ``stages/_lib/`` helpers. The closure is computed from the
source text (nothing is imported, so no torch either), which also sees imports inside functions
and modules named by a string constant (imported with ``importlib``). The variant registry names
no variant module: it finds them at run time, and a stage imports only the modules of the
variants it runs or reports, so :class:`Code` adds those (and their closures) per stage, as the
graph says which variants a stage reads. The stage graph writes this as each stage's code deps,
one line per package it imports from (:func:`package_units`: at most ~15 per stage, where the
files would be ~60), and ``tests/test_graph.py`` checks it against what the interpreter really
imports.

A package ``__init__.py`` that holds only a docstring runs no code and is left out.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from pathlib import Path

from pipeline.models.registry import lookup

PACKAGES = ("pipeline", "stages")
# The forecasters' package: its registry imports every module in it, so a stage that reads the
# registry (forecast_features, forecast_report) depends on all of them.
FORECASTERS = "pipeline/forecast/forecasters"
# The semantic-change methods' package: its registry imports every method module in it.
CHANGE_METHODS = "pipeline/semantic/methods"
# The packages (under pipeline/) whose files stay file deps (package_units): the variant modules
# and the stage declarations, one per variant or stage, so adding or editing one reruns its own.
FILE_PACKAGES = ("variants", "interfaces")
# A string constant that names a project module, e.g. "pipeline.semantic.methods.x" in a
# registry, imported with importlib: counted as an import of that module. With a class,
# "pipeline.models.temporal:Context2Bias" in a variant module, it is imported when a model of the
# variant is built (``VariantSpec.module_class``), not when its spec is read.
_DOTTED = re.compile(r"((?:pipeline|stages)(?:\.[A-Za-z_]\w*)+)(:[A-Za-z_]\w*)?")


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


def imported_modules(root: Path, path: Path, classes: bool = True) -> set[str]:
    """Dotted names of every module ``path`` may import (``from a import b``: ``a`` and ``a.b``);
    ``classes``: with the modules of the ``module:Class`` strings it names."""
    name = _module_name(root, path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    try:
        return set(_imports_in(package, path.read_text(), classes))
    except SyntaxError as err:
        err.filename = str(path)
        raise


# Parsing is nearly all of a graph build's time (~1,500 parses of the same ~100 files for the
# 17 stage modules' closures), so each source text is parsed once per process: keyed by its text
# (not its path: a copy of the project parses nothing again), an edited file is parsed again.
@functools.lru_cache(maxsize=4096)
def _imports_in(package: str, text: str, classes: bool) -> frozenset[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and (named := _DOTTED.fullmatch(node.value)):
            if classes or not named.group(2):
                found.add(named.group(1))   # a module imported by name (importlib)
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


def import_closure(root: Path, entry: Path, classes: bool = True) -> list[Path]:
    """Project files that running ``entry`` imports, ``entry`` excluded, sorted (relative to root);
    ``classes=False``: not counting the ``module:Class`` strings (a variant's spec read, no model
    built)."""
    root = root.resolve()
    entry = (root / entry).resolve() if not entry.is_absolute() else entry.resolve()
    seen: set[Path] = set()
    named: set[str] = set()   # module names already resolved (most are imported many times)
    todo = [entry]
    while todo:
        path = todo.pop()
        for module in imported_modules(root, path, classes):
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
    """A stage's code deps: ``stages/<name>.py`` and its import closure, plus the variant modules
    it imports through the registry and their closures; each closure computed once (the stage
    modules' overlap, and every run of a variant shares its stage's)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._closures: dict[tuple[Path, bool], list[str]] = {}

    def _closure(self, entry: Path, classes: bool = True) -> list[str]:
        if (entry, classes) not in self._closures:
            self._closures[entry, classes] = [
                str(entry), *(str(p) for p in import_closure(self.root, entry, classes))]
        return self._closures[entry, classes]

    def __call__(self, name: str, variants: Iterable[str] = (), built: bool = False,
                 discovered: str | None = None) -> list[str]:
        """The deps of the stage module ``name`` reading the registry rows of ``variants``:
        each one's variant module (a control's: its variant's; a baseline: none) and what that
        imports; ``built``: the stage builds their models, so the module each spec names for its
        equations (``module:Class``) too. ``discovered``: a package folder (relative to the
        root) whose registry imports every module it holds (the forecasters'), with their
        closures."""
        deps = dict.fromkeys(self._closure(Path("stages") / f"{name}.py"))
        own: set[str] = set()
        if discovered is not None:
            for path in sorted((self.root / discovered).glob("*.py")):
                if runs_code(path):
                    own.update(self._closure(path.relative_to(self.root)))

        for variant in variants:
            module = lookup(variant).module
            path = None if module is None else module_path(self.root, module)
            if path is not None:
                own.update(self._closure(path.relative_to(self.root), built))
        entry, *rest = deps
        return [entry, *package_units({*rest, *own})]


def package_units(files: Iterable[str]) -> list[str]:
    """Code deps as DVC lists them, sorted: a file of ``pipeline/<package>/`` as that package's
    folder (DVC hashes the folder, so an edit anywhere in it reruns the stage: one line for the
    ~10 files a stage imports from a package), but a variant module or a stage declaration as
    itself (``FILE_PACKAGES``: a stage depends on the variants it runs and on its declaration, so
    editing or adding one reruns its own stages alone), and the stage modules' shared helpers
    (``stages/_lib/``) as their folder, and top-level modules as themselves."""
    units = set()
    for file in files:
        parts = Path(file).parts
        if len(parts) > 2 and not (parts[0] == "pipeline" and parts[1] in FILE_PACKAGES):
            units.add("/".join(parts[:2]))
        else:
            units.add(file)
    return sorted(units)
