"""Forecasting a period's vocabulary: the future LM's predicted distribution and its word lists.

Periods are labels (``2024``, ``2024H1``, ``2024Q3``, ``2024-07``; :mod:`pipeline.corpus.periods`);
``Y−1`` is the period before ``Y`` (:func:`pipeline.corpus.periods.shift`, across year
boundaries: the period before ``2021Q1`` is ``2020Q4``), and ``Y−m .. Y−1`` its history window.

**Predicted vocabulary of period Y**. A future LM with period Y's bias (its history
``Y-m .. Y-1``) reads a fixed set of *reference contexts*, the abstracts of the last observed
period ``Y-1``, teacher-forced; its predicted vocabulary is the mean of its next-token softmax over
every position that predicts a token (the positions scored by PPL: the abstract's tokens and the
closing EOS, cut at the model's context length)::

    p̂_Y(w) = (1 / #positions) · Σ_{abstracts a of Y-1} Σ_t softmax(z_{a,t} + B_Y)[w]

It sums to 1, needs no text of period Y, and for Baseline (no history) it does not depend on Y:
Baseline is the "no change" LM forecaster. :func:`predicted_distribution` computes it in one
batched pass over the contexts (no Python loop per token); :func:`predicted_distributions` computes
p̂_Y and p̂'_{Y−1} below in one pass, the LM run once for both biases.

**Predicted change** of token w in period Y (the ranking of rising and falling terms, and the
trend backtests): ``Δ̂_Y(w) = log p̂_Y(w) − log p̂'_{Y−1}(w)``, where ``p̂'_{Y−1}`` is the same model
on the *same* contexts with period ``Y−1``'s bias. Both terms share the LM and the contexts, so
their difference is exactly what the temporal history predicts will change; comparing p̂_Y with
the observed frequencies of Y−1 instead would mix in how far the LM's unigram distribution is from
the data (an LM trained periods earlier), which is not a forecast. Baseline's Δ̂ is 0, and so is
a time-free control's (``<variant>-static``: its history, pooled over the training periods, is
the same for Y and Y−1; one pass gives both): like Baseline it has no trend ranking.

**Count forecasters** (persistence, linear extrapolation and the others the forecast report
compares the models with) read only the observed counts of the history periods: they are the
registry's (:mod:`pipeline.forecast.forecasters`).

**Whole word** (for showing terms as words): a CPL content token (:mod:`pipeline.evaluation.content`) that
begins a word (its text starts with the leading-space marker and the rest is letters, digits,
``-`` or ``'``) and usually ends it: in the reference abstracts, at least half of its occurrences
are followed by a token that does not continue the word (one starting with a space, a
non-alphanumeric character, or the end of the abstract). ``" transl"`` of ``" translation"`` is not
a whole word; ``" BERT"`` is. Tokens absent from the reference abstracts are not shown.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from transformers import PreTrainedTokenizerBase

from pipeline.corpus.by_period import missing_feature_fix, period_abstracts
from pipeline.corpus.periods import shift
from pipeline.infra.errors import UserError
from pipeline.models.future_lm import FutureLM
from pipeline.features.history import PeriodHistory, load_history
from pipeline.features.windows import history_periods
from pipeline.features.words import WordPieces
from pipeline.models.encoding import longest_first
from pipeline.models.nll import IGNORE, MAX_ELEMENTS, collate, next_token_targets


@torch.no_grad()
def predicted_distribution(model: FutureLM, encoded: Sequence[Sequence[int]],
                           history: PeriodHistory | None, batch_size: int = 8,
                           pad_id: int = 0) -> np.ndarray:
    """Mean next-token distribution ``float64 [|V_out|]`` of ``model`` with ``history``'s bias
    over every predicting position of ``encoded`` (token ids per context, already cut).

    One forward pass per batch of contexts (batched by length); the softmax runs in fp32 in
    chunks of at most :data:`pipeline.models.nll.MAX_ELEMENTS` values, summed in fp32 per chunk and in
    float64 across chunks; the result is renormalised to remove fp32 rounding (~1e-7).
    """
    return predicted_distributions(model, encoded, [history], batch_size, pad_id)[0]


@torch.no_grad()
def predicted_distributions(model: FutureLM, encoded: Sequence[Sequence[int]],
                            histories: Sequence[PeriodHistory | None], batch_size: int = 8,
                            pad_id: int = 0) -> list[np.ndarray]:
    """:func:`predicted_distribution` under each of ``histories`` on the same contexts, the LM
    run once per batch for all of them (:meth:`FutureLM.logits_under`): the same numbers as
    separate calls, for about half the cost of two (the output layer's product dominates)."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if not encoded or any(len(ids) < 2 for ids in encoded):
        raise ValueError("every reference context needs >= 2 tokens (EOS + text + EOS) and there "
                         "must be at least one")
    order = longest_first(encoded)
    was_training = model.training
    model.eval()                   # no dropout: the forecast is the model's mean prediction
    try:
        totals, positions = _softmax_sums(model, encoded, order, histories, batch_size, pad_id)
    finally:
        model.train(was_training)
    out = []
    for total in totals:
        mean = (total / positions).cpu().numpy()
        out.append(mean / mean.sum())   # fp32 softmax rows sum to 1 only within ~1e-7
    return out


def _softmax_sums(model: FutureLM, encoded: Sequence[Sequence[int]], order: list[int],
                  histories: Sequence[PeriodHistory | None], batch_size: int,
                  pad_id: int) -> tuple[list[torch.Tensor], int]:
    device = model.device
    totals: list[torch.Tensor] = []
    positions = 0
    for start in range(0, len(order), batch_size):
        batch = collate([encoded[i] for i in order[start:start + batch_size]], pad_id)
        ids, mask = batch["input_ids"].to(device), batch["attention_mask"].to(device)
        keep = next_token_targets(ids, mask) != IGNORE
        for k, logits in enumerate(model.logits_under(ids, mask, histories)):
            rows = logits[keep]       # [P, |V_out|]
            if len(totals) <= k:
                totals.append(torch.zeros(rows.shape[-1], dtype=torch.float64, device=device))
            step = max(1, MAX_ELEMENTS // rows.shape[-1])
            for lo in range(0, rows.shape[0], step):
                # fp32 sum within a chunk (half the cost of a float64 copy), float64 across chunks
                totals[k] += torch.softmax(rows[lo:lo + step].float(), dim=-1).sum(0).double()
        positions += int(keep.sum())
    return totals, positions


def whole_word_mask(tokenizer: PreTrainedTokenizerBase, content_mask: np.ndarray,
                    reference: Sequence[Sequence[int]]) -> np.ndarray:
    """bool ``[|V|]``: content tokens that are whole words (module doc), judged on ``reference``."""
    vocab = len(content_mask)
    texts = tokenizer.batch_decode([[i] for i in range(vocab)])
    pieces = WordPieces.from_texts(texts)
    starts, continues = pieces.starts, pieces.continues
    special = set(tokenizer.all_special_ids)
    occurrences = np.zeros(vocab, dtype=np.int64)
    word_ends = np.zeros(vocab, dtype=np.int64)
    for ids in reference:
        arr = np.asarray(ids, dtype=np.int64)
        nxt = arr[1:]
        ends = ~continues[nxt] | np.isin(nxt, list(special))
        np.add.at(occurrences, arr[:-1], 1)
        np.add.at(word_ends, arr[:-1], ends.astype(np.int64))
    return content_mask & starts & (occurrences > 0) & (2 * word_ends >= occurrences)


def rank_terms(delta: np.ndarray, eligible: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Token ids of the ``k`` largest and ``k`` smallest ``delta`` among ``eligible`` (ties by
    id); tokens whose delta is exactly 0 are not trends and are left out."""
    delta = np.asarray(delta, dtype=np.float64)
    ids = np.flatnonzero(np.asarray(eligible, bool) & (delta != 0))
    up, down = ids[delta[ids] > 0], ids[delta[ids] < 0]
    return up[np.lexsort((up, -delta[up]))][:k], down[np.lexsort((down, delta[down]))][:k]


def reference_texts(corpus: str | os.PathLike[str], period: str | int) -> list[str]:
    """The reference contexts of a forecast for ``period``: the abstracts of the period before it
    in the corpus table (:func:`pipeline.corpus.by_period.period_abstracts`)."""
    prev = shift(period, -1)
    return period_abstracts(corpus, prev, purpose=f"forecast {period} (its reference contexts "
                                                  f"are the abstracts of {prev})")


def period_history(model: FutureLM, period: str | int,
                   frequencies_dir: str | os.PathLike[str] | None,
                   embeddings_dir: str | os.PathLike[str] | None, purpose: str,
                   tokenizer: str | os.PathLike[str] | None = None) -> PeriodHistory | None:
    """``load_history`` for the bias of ``period`` (None for Baseline), errors naming
    ``purpose``; ``tokenizer`` (its folder) makes feature files of another tokenizer an error."""
    kinds = model.history_kinds
    if not kinds:
        return None
    if frequencies_dir is None or ("embeddings" in kinds and embeddings_dir is None):
        flags = "--frequencies and --embeddings" if "embeddings" in kinds else "--frequencies"
        raise UserError(f"cannot {purpose}: the {model.variant} model reads the per-period features "
                        f"{sorted(kinds)}", fix=f"pass {flags}")
    try:
        return load_history(period, model.window, frequencies_dir, embeddings_dir, kinds=kinds,
                            tokenizer=tokenizer, static_periods=model.static_periods,
                            reference_periods=model.reference_periods)
    except UserError as err:
        raise UserError(f"cannot {purpose}: {err.what}", path=err.path, fix=err.fix) from None
    except FileNotFoundError as err:
        window = history_periods(period, model.window)
        raise UserError(f"cannot {purpose}: the history of {period} (periods {window[0]}"
                        f"..{window[-1]}) is incomplete: {err}",
                        fix=missing_feature_fix(*(f"{kind}@{p}" for kind in sorted(kinds)
                                                  for p in window))) from None


def vocabulary_forecast(model: FutureLM, encoded: Sequence[Sequence[int]], period: str | int,
                        frequencies_dir: str | os.PathLike[str] | None,
                        embeddings_dir: str | os.PathLike[str] | None, batch_size: int = 8,
                        pad_id: int = 0, tokenizer: str | os.PathLike[str] | None = None
                        ) -> pd.DataFrame:
    """One row per output token id: ``log_prob`` = log p̂_Y and ``log_prob_prev`` = log p̂'_{Y−1}
    on the same contexts ``encoded`` (module doc). Baseline and a time-free control need one pass
    (they are equal)."""
    history = period_history(model, period, frequencies_dir, embeddings_dir,
                             f"forecast {period}", tokenizer)
    if history is None or model.static_periods is not None:
        p_next = p_prev = predicted_distribution(model, encoded, history, batch_size, pad_id)
    else:
        before = shift(period, -1)
        prev = period_history(model, before, frequencies_dir, embeddings_dir,
                              f"measure the predicted change of {period} against {before}",
                              tokenizer)
        p_next, p_prev = predicted_distributions(model, encoded, [history, prev], batch_size,
                                                 pad_id)
    # A probability can underflow to 0 in fp32 softmax; the floor keeps logs finite.
    tiny = np.finfo(np.float64).tiny
    return pd.DataFrame({"token_id": np.arange(len(p_next), dtype=np.int32),
                         "log_prob": np.log(np.maximum(p_next, tiny)),
                         "log_prob_prev": np.log(np.maximum(p_prev, tiny))})
