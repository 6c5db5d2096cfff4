"""Comparing trained models by the right unit: documents, and across seeds the trained run.

A claim that variant A beats variant B is about *variants*, not about two trained models: a second
seed trains another model, and on the sample two seeds of one variant can differ by several per
cent of PPL. So every comparison here is a **two-level bootstrap** (GUIDE §12, issue 31 §2):

1. each replicate draws the scored period's abstracts with replacement (one draw shared by every
   model: the comparison is paired by abstract), :func:`pipeline.stats.resampling.document_weights`;
2. and, for each side, its trained runs (seeds) with replacement
   (:func:`pipeline.stats.resampling.run_draws`);

the replicate's value of a side is the mean over its drawn runs of log PPL on the drawn abstracts
(log PPL = Σ NLL / Σ tokens over the drawn abstracts, tokens counted with multiplicity). The
effect is A's mean log PPL minus B's, reported as a relative change ``100 (e^Δ − 1)`` %; its 95 %
interval is the replicates' percentile interval, its p-value the bootstrap's two-sided one. A side
with one run contributes no spread, and the verdict engine refuses to order it
(:data:`pipeline.stats.verdict.MIN_SEEDS`).

CM is a mean over *generated* abstracts: two models' generations are independent samples, so each
run's items are resampled on their own (no pairing), then runs as above; the effect is the
difference of mean CM.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.stats.resampling import (N_BOOTSTRAP, SEED, bootstrap_p, document_weights,
                                       per_token_rate, percentile_interval, run_draws)

PPL_TEST = "two-level bootstrap (abstracts paired, runs per side)"
CM_TEST = "two-level bootstrap (generated abstracts and runs per side)"


@dataclass(frozen=True)
class Comparison:
    """``effect`` of A minus B (``effect_unit``), its 95 % ``ci``, two-sided ``p``, the number of
    resampled items ``n`` and the runs per side."""

    effect: float
    ci: tuple[float, float]
    p: float
    n: int
    runs: tuple[int, int]
    test: str
    unit: str
    effect_unit: str


def _side_means(values: np.ndarray, columns: Sequence[int], seed: int) -> np.ndarray:
    """``[B]``: per replicate, the mean of ``values[:, columns]`` over runs drawn with replacement."""
    cols = np.asarray(columns)
    draws = run_draws(len(cols), values.shape[0], seed)
    return np.take_along_axis(values[:, cols], draws, axis=1).mean(axis=1)


def compare_nll(nll: Mapping[str, np.ndarray], tokens: np.ndarray, a: str, b: str,
                n_boot: int = N_BOOTSTRAP, seed: int = SEED) -> Comparison:
    """A vs B on per-abstract NLL sums. ``nll[side]``: ``[n_abstracts, n_runs]`` NLL sums of the
    same abstracts (rows aligned across sides), ``tokens``: ``[n_abstracts]`` scored tokens of
    each (the same for every model: one tokenizer)."""
    tokens = np.asarray(tokens, dtype=np.int64)
    stacked = np.concatenate([nll[a], nll[b]], axis=1)
    if stacked.shape[0] != len(tokens):
        raise ValueError(f"{stacked.shape[0]} abstracts of NLL but {len(tokens)} token counts")
    weights = document_weights(len(tokens), n_boot, seed)
    log_ppl = per_token_rate(weights, stacked, tokens)             # [B, runs_a + runs_b]
    ra = nll[a].shape[1]
    delta = (_side_means(log_ppl, range(ra), seed + 1)
             - _side_means(log_ppl, range(ra, stacked.shape[1]), seed + 2))
    observed = stacked.sum(axis=0) / tokens.sum()
    effect = float(observed[:ra].mean() - observed[ra:].mean())
    lo, hi = percentile_interval(delta)
    pct = lambda d: 100.0 * math.expm1(d)                           # noqa: E731
    return Comparison(pct(effect), (pct(lo), pct(hi)), bootstrap_p(delta), len(tokens),
                      (ra, stacked.shape[1] - ra), PPL_TEST, "abstracts", "% PPL")


def compare_items(items: Mapping[str, Sequence[np.ndarray]], a: str, b: str,
                  n_boot: int = N_BOOTSTRAP, seed: int = SEED) -> Comparison:
    """A vs B on independent per-item scores (CM of generated abstracts): ``items[side]`` one
    array per run. The effect is the difference of the mean item score (higher is A's gain)."""
    def replicate_means(side: str, offset: int) -> np.ndarray:
        runs = list(items[side])
        per_run = np.empty((n_boot, len(runs)))
        for r, values in enumerate(runs):
            values = np.asarray(values, dtype=np.float64)
            w = document_weights(len(values), n_boot, seed + offset + 10 * r)
            per_run[:, r] = per_token_rate(w, values, np.ones(len(values)))
        return _side_means(per_run, range(len(runs)), seed + offset)
    delta = replicate_means(a, 1) - replicate_means(b, 2)
    effect = float(np.mean([np.mean(x) for x in items[a]]) - np.mean([np.mean(x) for x in items[b]]))
    return Comparison(effect, percentile_interval(delta), bootstrap_p(delta),
                      int(sum(len(x) for x in items[a]) + sum(len(x) for x in items[b])),
                      (len(items[a]), len(items[b])), CM_TEST, "generated abstracts", "CM")
