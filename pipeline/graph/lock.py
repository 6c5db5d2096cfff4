"""Prune ``dvc.lock`` of entries for stages ``dvc.yaml`` no longer defines.

DVC keeps a lock entry for every stage it ever ran, even after the stage is gone from dvc.yaml
(renamed stages, dropped variants or periods): such entries mislead a reader of the committed lock
about what the current graph produced. A foreach stage's entries are named ``name@item``; one is
current when ``name`` is a foreach stage whose items include ``item``. A ``matrix`` stage, or a
foreach over something other than a literal list or mapping, cannot be expanded here, so its
entries are kept.

The file is edited as text, one top-level entry at a time, so the entries kept stay byte for byte
what DVC wrote (its folding of long commands included); it is rewritten only when something is
pruned, and only after re-parsing proves that exactly the stale entries went away.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from pipeline.infra.errors import UserError
from pipeline.infra.io import atomic_path

_SCALAR = (str, int, float, bool)


def is_defined(name: str, stages: Mapping[str, Any]) -> bool:
    """Whether the lock entry ``name`` belongs to a stage of ``stages`` (dvc.yaml's ``stages``)."""
    base, at, item = name.partition("@")
    stage = stages.get(base)
    if not isinstance(stage, Mapping):
        return False
    if "matrix" in stage:
        return bool(at)
    if "foreach" not in stage:
        return not at
    if not at:
        return False
    items = stage["foreach"]
    if isinstance(items, Mapping):
        return item in {str(k) for k in items}
    if isinstance(items, list) and all(isinstance(i, _SCALAR) for i in items):
        return item in {str(i) for i in items}
    return True  # a template or a list of mappings: not expanded here, so kept


def _entries(lines: list[str]) -> tuple[int, int, list[tuple[str, int, int]]]:
    """Where ``stages:`` holds its entries: (first line, end line, [(name, start, end)])."""
    try:
        head = next(i for i, line in enumerate(lines) if line.rstrip() == "stages:")
    except StopIteration:
        return 0, 0, []
    end = next((i for i in range(head + 1, len(lines))
                if lines[i].strip() and not lines[i][0].isspace()), len(lines))
    body = [i for i in range(head + 1, end) if lines[i].strip()]
    if not body:
        return head + 1, end, []
    indent = len(lines[body[0]]) - len(lines[body[0]].lstrip())
    key = re.compile(rf"^ {{{indent}}}(?![\s#-])")
    starts = [i for i in body if key.match(lines[i])]
    entries = []
    for start, stop in zip(starts, [*starts[1:], end]):
        parsed = yaml.safe_load(lines[start])
        if not isinstance(parsed, dict) or len(parsed) != 1:
            raise ValueError(f"line {start + 1} is not a stage entry: {lines[start]!r}")
        entries.append((str(next(iter(parsed))), start, stop))
    return head + 1, end, entries


def prune_text(text: str, stages: Mapping[str, Any]) -> tuple[str, list[str]]:
    """``text`` (a dvc.lock) without the entries ``stages`` does not define, and their names.

    The text comes back unchanged when nothing is stale.
    """
    lines = text.splitlines(keepends=True)
    _, _, entries = _entries(lines)
    stale = [(name, start, stop) for name, start, stop in entries if not is_defined(name, stages)]
    if not stale:
        return text, []
    drop = {i for _, start, stop in stale for i in range(start, stop)}
    pruned = "".join(line for i, line in enumerate(lines) if i not in drop)
    names = [name for name, _, _ in stale]
    before, after = yaml.safe_load(text) or {}, yaml.safe_load(pruned) or {}
    expected = {k: v for k, v in (before.get("stages") or {}).items() if k not in names}
    if after.get("stages") != expected or {k: v for k, v in after.items() if k != "stages"} != {
            k: v for k, v in before.items() if k != "stages"}:
        raise ValueError("pruning the stale entries would change other entries")
    return pruned, names


def prune(lock: Path, stages: Mapping[str, Any]) -> list[str]:
    """Rewrite ``lock`` without the entries ``stages`` does not define; the names pruned.

    A missing lock (nothing ever ran) is left missing; an unchanged one is not touched.
    """
    if not lock.exists():
        return []
    text = lock.read_text()
    try:
        pruned, names = prune_text(text, stages)
    except (ValueError, yaml.YAMLError) as err:
        raise UserError(f"cannot prune {lock}: {err}", path=lock,
                        fix="check the file is the one DVC wrote (or delete it and rerun "
                            "`dvc repro`)") from None
    if names:
        with atomic_path(lock) as tmp:
            tmp.write_text(pruned)
    return names
