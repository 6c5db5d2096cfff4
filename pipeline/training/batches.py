"""Period-bucketed batches (paper §4.2): every optimizer step holds abstracts of a single period.

A training abstract of period ``i`` (a label, :mod:`pipeline.corpus.periods`: ``2020``,
``2020H2``, ``2020Q3``, ``2020-07``) is scored with the bias of period ``i``, so a step of one
period computes the bias's history-only part once. :func:`period_steps` shuffles the steps within
and across periods from an RNG seeded by ``(seed, epoch)``, so the order of any epoch can be
rebuilt exactly on resume. Periods are visited in time order (by ordinal), never by their text:
for years that is the order of the years, so the default run draws exactly the numbers it drew
when periods were ints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from pipeline.corpus.periods import in_time_order


Sequences = Mapping[str, Sequence[Sequence[int]]]   # period label -> token-id lists (eos + text + eos)

# ---------------------------------------------------------------------------------- data

Step = tuple[str, list[list[int]]]   # (period label, micro-batches of example indices)


def period_steps(sizes: Mapping[str, int], batch_size: int, grad_accum: int, seed: int,
                 epoch: int) -> list[Step]:
    """Shuffled single-period optimizer steps ``(period, micro-batches)`` for one epoch.

    Examples are shuffled within each period (periods in time order) and cut into steps of
    ``batch_size x grad_accum`` (a period's last step may be smaller), each step into
    micro-batches of ``batch_size``; the steps of all periods are shuffled together.
    Deterministic in ``(seed, epoch)``.
    """
    rng = np.random.default_rng([seed, epoch])
    span = batch_size * grad_accum
    groups: list[tuple[str, list[int]]] = []
    for period in in_time_order(sizes):
        order = rng.permutation(sizes[period]).tolist()
        groups += [(period, order[i:i + span]) for i in range(0, len(order), span)]
    return [(period, [index[j:j + batch_size] for j in range(0, len(index), batch_size)])
            for period, index in (groups[i] for i in rng.permutation(len(groups)))]


def steps_per_pass(sizes: Mapping[str, int], batch_size: int, grad_accum: int) -> int:
    """Optimizer steps of one pass over ``sizes``' abstracts (the length of any
    :func:`period_steps` draw): ``sum_p ceil(n_p / (batch_size * grad_accum))``, a period's
    steps never mixing periods."""
    span = batch_size * grad_accum
    return sum(-(-n // span) for n in sizes.values())


def epoch_steps(sizes: Mapping[str, int], batch_size: int, grad_accum: int, seed: int,
                epoch: int, steps: int | None = None) -> list[Step]:
    """The optimizer steps of ``epoch``: one :func:`period_steps` pass (``steps`` None), or
    exactly ``steps`` of them cycling over the abstracts as often as it takes.

    A matched-steps run (``train.latest_steps: matched``, continued-N) trains on fewer abstracts
    than the Baseline for the Baseline's steps per epoch. With ``k = ceil(steps / pass)``, epoch
    ``e`` is passes ``e*k .. e*k + k - 1`` (each :func:`period_steps` draw of that number)
    joined and cut at ``steps``: deterministic in ``(seed, epoch)`` as a plain epoch is, and
    a plain epoch when ``steps`` is one pass (``k = 1``).
    """
    if steps is None:
        return period_steps(sizes, batch_size, grad_accum, seed, epoch)
    one = steps_per_pass(sizes, batch_size, grad_accum)
    if steps < 1 or one < 1:
        raise ValueError(f"an epoch of {steps} steps over {one} steps' worth of abstracts")
    passes = -(-steps // one)
    plan: list[Step] = []
    for j in range(passes):
        plan += period_steps(sizes, batch_size, grad_accum, seed, epoch * passes + j)
    return plan[:steps]


def period_batches(sizes: Mapping[str, int], batch_size: int, seed: int,
                   epoch: int) -> list[tuple[str, list[int]]]:
    """The single-period batches of :func:`period_steps` without gradient accumulation."""
    return [(period, micro[0])
            for period, micro in period_steps(sizes, batch_size, 1, seed, epoch)]


def latest_periods(sequences: Sequences, n: int | None) -> dict[str, Sequence[Sequence[int]]]:
    """The ``n`` most recent periods of ``sequences`` (all when ``n`` is None), in time order:
    Baseline-n's data (none for ``n = 0``: ``baseline-0``, the pretrained LM as it is)."""
    periods = in_time_order(sequences)
    if n is not None:
        if n < 0:
            raise ValueError(f"baseline-N needs N >= 0, got {n}")
        periods = periods[len(periods) - n:] if n else []
    return {p: sequences[p] for p in periods}


def group_by_period(periods: Iterable[str | int],
                    sequences: Iterable[Sequence[int]]) -> dict[str, list[Sequence[int]]]:
    """``{label: [sequence, ...]}`` in input order (labels as strings; an int is a year)."""
    grouped: dict[str, list[Sequence[int]]] = {}
    for period, seq in zip(periods, sequences, strict=True):
        grouped.setdefault(str(period), []).append(seq)
    return grouped


# ---------------------------------------------------------------------- optimisation
