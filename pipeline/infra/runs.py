"""The name of one training run: a variant and a seed, e.g. ``context2-s0``.

The one place this name is built: model, score, forecast and curve folders are named by it
(``data/models/<run>``), and the stage graph names the stages ``train-<run>``, ``score-<run>``
and ``forecast-<run>``.
"""

from __future__ import annotations


def run_name(variant: str, seed: int) -> str:
    """``f"{variant}-s{seed}"``: the folder and stage suffix of one (variant, seed) run."""
    return f"{variant}-s{seed}"
