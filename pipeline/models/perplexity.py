"""Perplexity arithmetic: from summed negative log-likelihoods to PPL (§4.4) and CPL (§4.5).

Pure arithmetic, no model and no torch, so that every reader of NLL sums shares it: the score
stage's corpus PPL/CPL (:func:`perplexities` of the per-abstract sums of
:func:`pipeline.models.scoring.score_abstracts`), training's dev perplexity, the report's unigram
reference and the forecast backtests' unigram perplexity (:func:`cross_entropy` of observed token
counts under a predicted distribution)::

    PPL = exp( Σ NLL / #tokens )                 (§4.4; CPL: content tokens only, §4.5)
    H(c, p) = −Σ_w c_w log p_w / Σ_w c_w,  PPL = exp(H)

:func:`perplexity` is the one place the exponential is taken.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd


def perplexity(mean_nll: float) -> float:
    """``exp(mean NLL)``: nats per token to perplexity."""
    return math.exp(mean_nll)


@dataclass(frozen=True)
class Perplexity:
    """Summed NLL (nats) over ``n_tokens`` predicted tokens; ``ppl = exp(nll_sum / n_tokens)``."""

    nll_sum: float
    n_tokens: int

    @property
    def ppl(self) -> float:
        if self.n_tokens <= 0:
            raise ValueError("no tokens were scored: perplexity is undefined")
        return perplexity(self.nll_sum / self.n_tokens)

    def __add__(self, other: Perplexity) -> Perplexity:
        return Perplexity(self.nll_sum + other.nll_sum, self.n_tokens + other.n_tokens)


def perplexities(tokens: pd.DataFrame) -> tuple[Perplexity, Perplexity]:
    """Corpus PPL and CPL (token-weighted, as the paper's) from per-abstract sums (columns
    ``n_tokens``, ``nll_sum``, ``n_content``, ``content_nll_sum``)."""
    ppl = Perplexity(float(tokens["nll_sum"].sum()), int(tokens["n_tokens"].sum()))
    cpl = Perplexity(float(tokens["content_nll_sum"].sum()), int(tokens["n_content"].sum()))
    if ppl.n_tokens == 0:
        raise ValueError("no tokens were scored: the split is empty")
    if cpl.n_tokens == 0:
        raise ValueError("no content tokens in the scored abstracts: CPL is undefined (is the "
                         "stopword list right for this tokenizer?)")
    return ppl, cpl


def cross_entropy(counts: np.ndarray, log_p: np.ndarray) -> float:
    """Nats per observed token of ``counts`` under the distribution ``log_p`` (entries of
    ``log_p`` beyond ``len(counts)``, e.g. padded output ids, are ignored): the mean NLL of a
    context-free model that predicts every token with ``log_p``."""
    counts = np.asarray(counts, dtype=np.float64)
    n = counts.sum()
    if n <= 0:
        raise ValueError("the period has no tokens to score the forecast on")
    return float(-(counts @ np.asarray(log_p, dtype=np.float64)[:len(counts)]) / n)
