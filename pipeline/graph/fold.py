"""Stages that differ only by seed, written once: ``train-frequency-s0``, ``-s1``, ``-s2`` become
one DVC ``foreach`` stage ``train-frequency`` over ``{s0: 0, s1: 1, s2: 2}``, which DVC runs as
``train-frequency@s0`` … (``${key}``: ``s0``; ``${item}``: the seed).

A stage is folded only when every seed's entry is the template with its own seed put back
(:func:`expand` gives the stages DVC will run, so the fold is checked, not assumed); a family
whose entries differ otherwise (a stage that reads seed 0's Baseline for every seed), or whose
name is taken by another stage (``base_cache`` beside ``base_cache-s0``), stays written out one
stage per seed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# A per-seed stage's name: ``train-frequency-s0``, ``base_cache-s1``.
_PER_SEED = re.compile(r"(?P<family>.+)-s(?P<seed>\d+)")


def _map(value: Any, text: Any) -> Any:
    """``value`` with ``text`` applied to every string in it (keys included)."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, list):
        return [_map(v, text) for v in value]
    if isinstance(value, dict):
        return {_map(k, text): _map(v, text) for k, v in value.items()}
    return value


def _template(stage: Mapping[str, Any], seed: int) -> Any:
    run = re.compile(rf"(?<=[a-z0-9])-s{seed}(?![0-9])")
    option = re.compile(rf"--seed {seed}(?![0-9])")
    return _map(dict(stage), lambda s: run.sub("-${key}", option.sub("--seed ${item}", s)))


def _instance(template: Any, key: str, item: Any) -> Any:
    return _map(template, lambda s: s.replace("${key}", key).replace("${item}", str(item)))


def fold_seeds(stages: Mapping[str, Any]) -> dict[str, Any]:
    """``stages`` with each family of per-seed stages (``<family>-s<seed>``, ≥ 1 seed) as one
    ``foreach`` stage named ``<family>``, at its first member's place."""
    families: dict[str, dict[str, int]] = {}
    for name in stages:
        if (m := _PER_SEED.fullmatch(name)) and "foreach" not in stages[name] \
                and m["family"] not in stages:   # a stage of that name: its family stays apart
            families.setdefault(m["family"], {})[name] = int(m["seed"])
    out: dict[str, Any] = {}
    kept: set[str] = set()   # families that are not one template: written out seed by seed
    for name, stage in stages.items():
        m = _PER_SEED.fullmatch(name)
        family = m["family"] if m and name in families.get(m["family"], {}) else None
        if family is None or family in kept:
            out[name] = stage
            continue
        if family in out:   # folded at its first member
            continue
        members = families[family]
        template = _template(stage, members[name])
        if all(_instance(template, f"s{seed}", seed) == stages[member]
               for member, seed in members.items()):
            out[family] = {"foreach": {f"s{seed}": seed for seed in members.values()},
                           "do": template}
        else:
            kept.add(family)
            out[name] = stage
    return out


def expand(stages: Mapping[str, Any]) -> dict[str, Any]:
    """The stages DVC runs: a ``foreach`` stage once per item, named ``<stage>@<key>`` (a list's
    item is its own key), with ``${key}`` and ``${item}`` filled in."""
    out: dict[str, Any] = {}
    for name, stage in stages.items():
        if "foreach" not in stage:
            out[name] = stage
            continue
        items = stage["foreach"]
        pairs = items.items() if isinstance(items, Mapping) else ((i, i) for i in items)
        for key, item in pairs:
            out[f"{name}@{key}"] = _instance(stage["do"], str(key), item)
    return out
