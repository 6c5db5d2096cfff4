"""Each param reruns exactly the stages that read it (walked over every leaf of params.yaml).

A stage reads a param only through its ``cmd`` (``${section.key}``, or ``${section}`` unpacked),
except the ``graph`` check, which reads the structural params from params.yaml itself. So for
every leaf of params.yaml: change its value in a temporary DVC repo and ask ``dvc status`` which
stages now have changed params; that set must equal the stages whose resolved ``cmd`` changed
(plus ``graph`` for a structural param). A param declared by a stage that does not read it
(an edit of ``variants.context2.alpha`` retraining every variant) or read without being declared
(an edit that reruns nothing) fails here.

The lock the statuses compare against is written from the project's own stages (resolved
``cmd`` and current param values, no outputs), so nothing has to be reproduced first.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dvc_project import dvc_repo, make_project
from pipeline.graph.plan import STRUCTURE
from pipeline.infra.params import VARIANT_SECTION

pytestmark = pytest.mark.slow


def _leaves(tree: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _leaves(value, dotted + ".")
        else:
            yield dotted


def _changed(value: Any) -> Any:
    """Another value of the same kind (validity does not matter: nothing is run)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, list):
        return [*value, value[-1] + 1 if value and isinstance(value[-1], int) else "extra"]
    return f"{value}-changed"


def _set(tree: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(tree)
    node = out
    *parents, last = dotted.split(".")
    for key in parents:
        node = node[key]
    node[last] = value
    return out


def _write_lock(proj: Path) -> dict[str, str]:
    """dvc.lock with every stage's resolved cmd and param values; returns the cmds."""
    from dvc.dependency.param import ParamsDependency

    lock: dict[str, Any] = {"schema": "2.0", "stages": {}}
    with dvc_repo(proj) as repo:
        for stage in repo.index.stages:
            params: dict[str, Any] = {}
            for dep in stage.deps:
                if isinstance(dep, ParamsDependency):
                    params.setdefault(dep.def_path, {}).update(dep.read_params())
            lock["stages"][stage.addressing] = {"cmd": stage.cmd,
                                                **({"params": params} if params else {})}
    (proj / "dvc.lock").write_text(yaml.safe_dump(lock, sort_keys=False))
    return {name: entry["cmd"] for name, entry in lock["stages"].items()}


def _cmds_and_params_changed(proj: Path) -> tuple[dict[str, str], set[str]]:
    """(each stage's resolved cmd, the stages whose params dependency DVC finds changed), from
    one ``Repo`` and its index: the check ``dvc status`` makes of each stage's params dep
    (``ParamsDependency.status``, against the lock), without hashing the code and data deps,
    which no params edit touches."""
    from dvc.dependency.param import ParamsDependency

    with dvc_repo(proj) as repo:
        stages = repo.index.stages
        cmds = {stage.addressing: stage.cmd for stage in stages}
        changed = {stage.addressing for stage in stages
                   if any(isinstance(dep, ParamsDependency) and dep.status() for dep in stage.deps)}
    return cmds, changed


def _structural(leaf: str) -> bool:
    return any(leaf == s or leaf.startswith(s + ".") for s in STRUCTURE)


def test_every_param_reruns_exactly_the_stages_that_read_it(tmp_path: Path) -> None:
    proj = make_project(tmp_path)
    original = yaml.safe_load((proj / "params.yaml").read_text())
    cmds = _write_lock(proj)
    assert _cmds_and_params_changed(proj) == (cmds, set()), "a fresh lock: no param changes"

    assert any(leaf.startswith(f"{VARIANT_SECTION}.") for leaf in _leaves(original))
    wrong = {}
    for leaf in _leaves(original):
        (proj / "params.yaml").write_text(yaml.safe_dump(
            _set(original, leaf, _changed(_get(original, leaf))), sort_keys=False))
        now, marked = _cmds_and_params_changed(proj)
        readers = {name for name, cmd in now.items() if cmd != cmds[name]}
        if _structural(leaf):
            readers.add("graph")
        if marked != readers:
            wrong[leaf] = {"reran but does not read it": sorted(marked - readers),
                           "reads it but would not rerun": sorted(readers - marked)}
    (proj / "params.yaml").write_text(yaml.safe_dump(original, sort_keys=False))
    assert wrong == {}


def _get(tree: dict[str, Any], dotted: str) -> Any:
    for key in dotted.split("."):
        tree = tree[key]
    return tree
