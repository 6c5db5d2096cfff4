"""A model's predicted change from half A of period Y−1 (the trend test).

The trend test compares a predicted change with the change observed against half B of Y−1
(:mod:`pipeline.corpus.halves`), so the prediction may read half A only: the reference contexts
are half A's abstracts of Y−1, and in Y's history the log frequencies of Y−1 are those of half A,
counted in-process exactly as the frequencies stage counts (:func:`count_tokens`, add-one
smoothed). Y−1's own history (Y−1−m .. Y−2) holds no document of Y−1 and is unchanged::

    Δ̂^A_Y(w) = log p̂_Y(w | half-A history, half-A contexts) − log p̂'_{Y−1}(w | half-A contexts)

written as ``log_prob_half`` and ``log_prob_prev_half`` of ``vocab_<Y>.parquet``. Models that
read **embeddings** (context, context², temporal attention) would need Y−1's embeddings of half A,
which only a rerun of the encoder gives: they get no such columns and the report marks their trend
claim untested. Models without a history predict no change and get none either.
"""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pandas as pd
import torch
from transformers import PreTrainedTokenizerBase

from pipeline.corpus.by_period import read_period
from pipeline.corpus.halves import in_half_a
from pipeline.corpus.periods import shift
from pipeline.features.frequencies import count_tokens, log_frequencies
from pipeline.features.history import PeriodHistory
from pipeline.models.encoding import encode_for_model
from pipeline.models.future_lm import FutureLM
from pipeline.forecast.vocabulary import period_history, predicted_distributions

HALF_COLUMNS = ("log_prob_half", "log_prob_prev_half")


def half_a_texts(corpus: str | os.PathLike[str], period: str) -> list[str]:
    """Half A's abstracts of the period before ``period`` (corpus order)."""
    prev = shift(period, -1)
    frame = read_period(corpus, prev, ["key", "abstract"],
                        purpose=f"forecast {period} from half A of {prev}")
    return frame.loc[in_half_a(frame["key"]), "abstract"].tolist()


def with_last_period(history: PeriodHistory, counts: np.ndarray) -> PeriodHistory:
    """``history`` with its last period's log frequencies replaced by those of ``counts``
    (``observed`` is kept: a superset of the tokens that differ from unseen ones, so exact)."""
    log_freq = history.log_freq.clone()
    log_freq[:, -1] = torch.as_tensor(log_frequencies(counts[:history.vocab_size]),
                                      dtype=log_freq.dtype)
    return replace(history, log_freq=log_freq)


def why_no_half(model: FutureLM) -> str | None:
    """Why ``model`` gets no half-A change (None: it gets one)."""
    kinds = model.history_kinds
    if not kinds:
        return "no history: it predicts no change"
    if "embeddings" in kinds:
        return ("reads embeddings: a half-A history of Y−1 needs the encoder rerun on half A, "
                "which the forecast stage does not do")
    return None


def half_a_forecast(model: FutureLM, tok: PreTrainedTokenizerBase,
                    corpus: str | os.PathLike[str], period: str,
                    frequencies_dir: str | os.PathLike[str], batch_size: int = 8,
                    tokenizer: str | os.PathLike[str] | None = None
                    ) -> tuple[pd.DataFrame, int] | None:
    """``(frame of HALF_COLUMNS, n contexts)`` for ``period`` (module doc); None for a model
    without a half-A change (:func:`why_no_half`)."""
    if why_no_half(model) is not None:
        return None
    texts = half_a_texts(corpus, period)
    encoded, _ = encode_for_model(tok, texts, model.context_length)
    purpose = f"forecast {period} from half A"
    history = period_history(model, period, frequencies_dir, None, purpose, tokenizer)
    prev = period_history(model, shift(period, -1), frequencies_dir, None, purpose, tokenizer)
    half = with_last_period(history, count_tokens(tok, texts))
    p_half, p_prev = predicted_distributions(model, encoded, [half, prev], batch_size,
                                             tok.eos_token_id)
    tiny = np.finfo(np.float64).tiny
    return pd.DataFrame({HALF_COLUMNS[0]: np.log(np.maximum(p_half, tiny)),
                         HALF_COLUMNS[1]: np.log(np.maximum(p_prev, tiny))}), len(encoded)
