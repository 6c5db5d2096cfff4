"""Which variants differ beyond noise: an ordering is stated only where seeds and CPUs cannot flip it.

The per-abstract tests of Table 3 say whether one *trained model* scores the period's abstracts
differently from Baseline's; they say nothing about the *variant*, because a second seed trains
another model. On the sample, variant differences are 1-2 % of PPL, of the order of what a seed or
a CPU changes. So a pair of variants is ordered only when

* each has at least two seeds, and the gap between their means exceeds both variants' seed
  ranges (max - min over seeds): the seeds do not overlap; and
* the gap exceeds the machine tolerance ``tolerance`` (relative): how far the same run's metric
  moved between CPUs (``CPU_TOLERANCE``).

Everything else is reported as "not distinguishable".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from pipeline.models.registry import display_name

# Relative change of a reported metric between two CPUs for the same inputs: sample test PPL moved
# up to 3.6 % between an Intel and an AMD machine (README "Same numbers on any machine").
CPU_TOLERANCE = 0.036
LOWER_IS_BETTER = {"ppl": True, "cpl": True, "cm": False}
NAMES = {"ppl": "PPL", "cpl": "CPL", "cm": "CM"}


def distinguishable(a: Sequence[float], b: Sequence[float], tolerance: float) -> bool:
    """True when the per-seed values ``a`` and ``b`` differ beyond their seed ranges and beyond
    ``tolerance`` (relative to the larger mean); never with fewer than two seeds each."""
    if len(a) < 2 or len(b) < 2:
        return False
    gap = abs(float(np.mean(a)) - float(np.mean(b)))
    spread = max(max(a) - min(a), max(b) - min(b))
    scale = max(abs(float(np.mean(a))), abs(float(np.mean(b))))
    return gap > spread and gap > tolerance * scale


def ordered_pairs(values: Mapping[str, Sequence[float]], metric: str,
                  tolerance: float) -> list[tuple[str, str]]:
    """(better, worse) for every pair of variants that :func:`distinguishable` separates."""
    names = list(values)
    pairs = []
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            if distinguishable(values[x], values[y], tolerance):
                better_x = (np.mean(values[x]) < np.mean(values[y])) == LOWER_IS_BETTER[metric]
                pairs.append((x, y) if better_x else (y, x))
    return pairs


def ranking_markdown(per_seed: Mapping[tuple[str, str], Mapping[str, Sequence[float]]],
                     n_seeds: int, tolerance: float = CPU_TOLERANCE) -> str:
    """The report's "Which variants differ" text. ``per_seed[(split label, metric)]`` maps each
    variant to its values, one per seed."""
    rule = (f"A variant is ordered before another only where the gap between their means "
            f"exceeds both variants' seed ranges and {tolerance:.1%} of the metric (the largest "
            f"move of a reported number between two CPUs).")
    if n_seeds < 2:
        return (f"One seed: the seed spread is unknown, so this report orders no variants: on "
                f"the sample they are **not distinguishable**. {rule} Run more seeds "
                f"(`experiment.seeds`) to test an ordering; the per-abstract p-values of Table 3 "
                f"compare trained models, not variants.")
    lines = [rule, ""]
    for (label, metric), values in per_seed.items():
        pairs = ordered_pairs(values, metric, tolerance)
        found = ("; ".join(f"{display_name(a)} better than {display_name(b)}" for a, b in pairs)
                 if pairs else "no pair of variants is distinguishable")
        lines.append(f"- {label} {NAMES[metric]}: {found}.")
    return "\n".join(lines)
