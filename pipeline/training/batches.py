"""Year-bucketed batches (paper §4.2): every optimizer step holds abstracts of a single year.

A training abstract of year ``i`` is scored with the bias of year ``i``, so a step of one year
computes the bias's history-only part once. :func:`year_steps` shuffles the steps within and
across years from an RNG seeded by ``(seed, epoch)``, so the order of any epoch can be rebuilt
exactly on resume.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np


Sequences = Mapping[int, Sequence[Sequence[int]]]   # year -> token-id lists (eos + text + eos)

# ---------------------------------------------------------------------------------- data

Step = tuple[int, list[list[int]]]   # (year, micro-batches of example indices)


def year_steps(sizes: Mapping[int, int], batch_size: int, grad_accum: int, seed: int,
               epoch: int) -> list[Step]:
    """Shuffled single-year optimizer steps ``(year, micro-batches)`` for one epoch.

    Examples are shuffled within each year and cut into steps of ``batch_size x grad_accum``
    (a year's last step may be smaller), each step into micro-batches of ``batch_size``; the
    steps of all years are shuffled together. Deterministic in ``(seed, epoch)``.
    """
    rng = np.random.default_rng([seed, epoch])
    span = batch_size * grad_accum
    groups: list[tuple[int, list[int]]] = []
    for year in sorted(sizes):
        order = rng.permutation(sizes[year]).tolist()
        groups += [(year, order[i:i + span]) for i in range(0, len(order), span)]
    return [(year, [index[j:j + batch_size] for j in range(0, len(index), batch_size)])
            for year, index in (groups[i] for i in rng.permutation(len(groups)))]


def year_batches(sizes: Mapping[int, int], batch_size: int, seed: int,
                 epoch: int) -> list[tuple[int, list[int]]]:
    """The single-year batches of :func:`year_steps` without gradient accumulation."""
    return [(year, micro[0]) for year, micro in year_steps(sizes, batch_size, 1, seed, epoch)]


def latest_years(sequences: Sequences, n: int | None) -> dict[int, Sequence[Sequence[int]]]:
    """The ``n`` most recent years of ``sequences`` (all when ``n`` is None): Baseline-n's data."""
    years = sorted(sequences)
    if n is not None:
        if n < 1:
            raise ValueError(f"baseline-N needs N >= 1, got {n}")
        years = years[-n:]
    return {y: sequences[y] for y in years}


def group_by_year(years: Iterable[int], sequences: Iterable[Sequence[int]]) -> dict[int, list[Sequence[int]]]:
    """``{year: [sequence, ...]}`` in input order."""
    grouped: dict[int, list[Sequence[int]]] = {}
    for year, seq in zip(years, sequences, strict=True):
        grouped.setdefault(int(year), []).append(seq)
    return grouped


# ---------------------------------------------------------------------- optimisation
