"""Each param reruns exactly the stages that read it (walked over every leaf of params.yaml).

A stage reads a param only through its ``cmd`` (``${section.key}``, or ``${section}`` unpacked),
except the ``graph`` check, which reads the structural params from params.yaml itself. So for
every leaf of params.yaml, the stages DVC finds with a changed params dependency when that leaf
changes must equal the stages whose resolved ``cmd`` changed (plus ``graph`` for a structural
param). A param declared by a stage that does not read it (an edit of ``variants.context2.alpha``
retraining every variant) or read without being declared (an edit that reruns nothing) fails here.

Every leaf is changed at once, each to a value of its own (a marker string, or a list of one):
DVC's status of a params dependency names each declared param it finds changed, and a stage's
resolved ``cmd`` contains the marker of each leaf it reads, so one resolution of the graph
attributes every change to its leaf. That attribution is checked against changing leaves one at
a time, as ``dvc status`` would see a single edit, on a sample of leaves (structural, unpacked
section, plain). The lock the statuses compare against is written from the project's own stages
(resolved ``cmd`` and current param values, no outputs), so nothing has to be reproduced first.
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
from pipeline.infra.schema.params import VARIANT_SECTION

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


def _marker(index: int, value: Any) -> Any:
    """Leaf ``index``'s own value: a string no resolved ``cmd`` contains by chance (a list of
    one for a list, so that ``parsing.list: nargs`` renders it)."""
    marker = f"zzleaf{index:04d}zz"
    return [marker] if isinstance(value, list) else marker


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


def _cmds_and_params_changed(proj: Path) -> tuple[dict[str, str], dict[str, set[str]]]:
    """(each stage's resolved cmd, for each stage whose params dependency DVC finds changed the
    declared params it names), from one ``Repo`` and its index: the check ``dvc status`` makes of
    each stage's params dep (``ParamsDependency.status``, against the lock), without hashing the
    code and data deps, which no params edit touches. A whole params file found new or deleted
    is named ``"*"``."""
    from dvc.dependency.param import ParamsDependency

    with dvc_repo(proj) as repo:
        stages = repo.index.stages
        cmds = {stage.addressing: stage.cmd for stage in stages}
        changed: dict[str, set[str]] = {}
        for stage in stages:
            for dep in stage.deps:
                if isinstance(dep, ParamsDependency):
                    for found in dep.status().values():
                        names = set(found) if isinstance(found, dict) else {"*"}
                        changed.setdefault(stage.addressing, set()).update(names)
    return cmds, changed


def _marks(changed: dict[str, set[str]], leaf: str) -> set[str]:
    """The stages whose changed params include ``leaf`` (declared as itself or a section)."""
    return {stage for stage, names in changed.items()
            if any(n == "*" or leaf == n or leaf.startswith(n + ".") for n in names)}


def _structural(leaf: str) -> bool:
    return any(leaf == s or leaf.startswith(s + ".") for s in STRUCTURE)


def test_every_param_reruns_exactly_the_stages_that_read_it(tmp_path: Path) -> None:
    proj = make_project(tmp_path)
    original = yaml.safe_load((proj / "params.yaml").read_text())
    cmds = _write_lock(proj)
    assert _cmds_and_params_changed(proj) == (cmds, {}), "a fresh lock: no param changes"

    leaves = list(_leaves(original))
    assert any(leaf.startswith(f"{VARIANT_SECTION}.") for leaf in leaves)
    markers = {leaf: _marker(i, _get(original, leaf)) for i, leaf in enumerate(leaves)}
    edited = original
    for leaf, marker in markers.items():
        edited = _set(edited, leaf, marker)
    _write_params(proj, edited)
    now, changed = _cmds_and_params_changed(proj)
    assert now.keys() == cmds.keys()

    wrong = {}
    for leaf, marker in markers.items():
        text = marker[0] if isinstance(marker, list) else marker
        readers = {name for name, cmd in now.items() if text in cmd}
        if _structural(leaf):
            readers.add("graph")
        marked = _marks(changed, leaf)
        if marked != readers:
            wrong[leaf] = {"reran but does not read it": sorted(marked - readers),
                           "reads it but would not rerun": sorted(readers - marked)}
    assert wrong == {}

    # The attribution is what one edit at a time gives: a structural leaf, a leaf of a section
    # some stage unpacks whole, a plain one.
    for leaf in ("features.window", "train.epochs", f"{VARIANT_SECTION}.frequency.lstm_hidden"):
        _write_params(proj, _set(original, leaf, _changed(_get(original, leaf))))
        one_cmds, one_changed = _cmds_and_params_changed(proj)
        readers = {name for name, cmd in one_cmds.items() if cmd != cmds[name]}
        assert set(one_changed) == _marks(changed, leaf), leaf
        assert readers | ({"graph"} if _structural(leaf) else set()) == set(one_changed), leaf
    _write_params(proj, original)


def _write_params(proj: Path, params: dict[str, Any]) -> None:
    (proj / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def _get(tree: dict[str, Any], dotted: str) -> Any:
    for key in dotted.split("."):
        tree = tree[key]
    return tree
