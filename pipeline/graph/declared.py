"""The stage declarations (:mod:`pipeline.interfaces`), found by listing their package, and the
stages that declare their own paths and place, added to the graph as they are.

Every module of ``pipeline/interfaces/`` declares one stage as ``INTERFACE``, named as the
module, with its main at ``stages/<name>.py``. The graph reads from it whether the stage runs
torch (:func:`torch_modules`). A declaration with ``after`` is a whole stage:
:func:`with_declared` puts its entry, ``paths`` as its values, right after that stage, so adding
such a stage takes its main and its declaration, nothing in the graph. Its inputs must be written
by a stage of the graph or be files of the project (the paths are spelled out in the
declaration, where a typo would otherwise make DVC drop the edge silently).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline import interfaces
from pipeline.graph.code_deps import Code
from pipeline.infra.errors import UserError
from pipeline.infra.interface import Input, StageInterface

@functools.lru_cache(maxsize=1)
def declarations() -> dict[str, StageInterface]:
    """Every stage's declaration by stage name, in name order."""
    found = {}
    for info in sorted(pkgutil.iter_modules(interfaces.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{interfaces.__name__}.{info.name}")
        interface = getattr(module, "INTERFACE", None)
        if not isinstance(interface, StageInterface) or interface.name != info.name:
            raise UserError(f"pipeline/interfaces/{info.name}.py declares no stage "
                            f"{info.name!r}", path=f"pipeline/interfaces/{info.name}.py",
                            fix=f"define INTERFACE = StageInterface({info.name!r}, (...))")
        found[info.name] = interface
    return found


def torch_modules() -> set[str]:
    """The stage modules (``stages.train`` ...) whose declaration says they run torch."""
    return {i.module for i in declarations().values() if i.torch}


def with_declared(stages: Mapping[str, Any], code: Code, root: Path) -> dict[str, Any]:
    """``stages`` with each declaration that has ``after`` added right after that stage (a
    built one or another declared one; several after one stage: in name order), its ``paths``
    as the entry's values."""
    pending = {name: i.after for name, i in declarations().items()
               if i.after is not None and name not in stages}
    for name in pending:
        if not (root / "stages" / f"{name}.py").is_file():
            raise UserError(f"stage {name} is declared but has no main", path=f"stages/{name}.py",
                            fix=f"add stages/{name}.py (parse args with parser_for(INTERFACE))")
    out: dict[str, Any] = {}

    def place(name: str) -> None:
        out[name] = stages[name] if name in stages else \
            declarations()[name].entry(declarations()[name].paths, code=code(name))
        for follower in sorted(n for n, after in pending.items() if after == name):
            place(follower)

    for name in stages:
        place(name)
    written = [_path(o) for stage in out.values() for kind in ("outs", "metrics", "plots")
               for o in stage.get("do", stage).get(kind, [])]
    for name in pending:
        if name not in out:
            raise UserError(f"stage {name} is declared after {pending[name]!r}, which this "
                            "graph has no stage of (or which follows it)",
                            path=f"pipeline/interfaces/{name}.py",
                            fix=f"set after= to one of: {', '.join(out)}")
        _check_inputs(name, written, root)
    return out


def _check_inputs(name: str, written: list[str], root: Path) -> None:
    """Each input path of declared stage ``name`` is a file or folder some stage writes (one of
    ``written``, or a file in such a folder) or one of the project's own files."""
    interface = declarations()[name]
    for option in interface.options:
        if not isinstance(option, Input) or option.dest not in interface.paths:
            continue
        value = interface.paths[option.dest]
        for path in value if isinstance(value, (list, tuple)) else [value]:
            produced = any(path == w or path.startswith(f"{w}/") for w in written)
            if not produced and not (root / path).exists():
                raise UserError(f"stage {name} reads {path}, which no stage writes and the "
                                "project does not hold", path=f"pipeline/interfaces/{name}.py",
                                fix=f"spell {option.flag} as the path its producing stage "
                                    "writes (dvc.yaml's outs)")


def _path(out: str | Mapping[str, Any]) -> str:
    return out if isinstance(out, str) else next(iter(out))
