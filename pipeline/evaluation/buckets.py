"""Where the temporal bias helps: NLL of target tokens by how often they occurred in the history.

Perplexity averages over every token, so it hides what the history is for: words that are rare
in the past periods, or new, or rising. For a scored period ``i`` (a label,
:mod:`pipeline.corpus.periods`) with history periods ``i-m .. i-1``, each target token (one row of
the score stage's ``positions_<label>.parquet``) falls in one frequency bucket by its *history
count*, the sum of its counts over the ``m`` history periods:

    unseen (0) · 1 · 2-10 · 11-100 · >100 occurrences

and is *emerging* when its smoothed log frequency rose in each of the last ``m`` period-to-period
steps (periods ``i-m-1 -> … -> i-1``, so ``m + 1`` periods are read,
:func:`pipeline.features.windows.bucket_periods`) and it occurred in period ``i-1``. The last
condition matters: with add-one smoothing a token never seen at all "rises" whenever the corpus
shrinks from one period to the next. Per bucket we report the mean NLL (nats per token) and
recall@10, the share of positions whose target was among the model's 10 most likely tokens.

Everything here is a pure function of arrays, except :func:`load_bucket_features`, which reads the
frequency files.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.corpus.by_period import missing_feature_fix
from pipeline.infra.errors import UserError
from pipeline.features.windows import bucket_periods
from pipeline.features.frequencies import read_period

BUCKETS = ("unseen", "1", "2-10", "11-100", ">100")
RARE_BUCKETS = ("unseen", "1", "2-10")
EMERGING = "emerging"
# np.digitize edges: count 0 -> 0 (unseen), 1 -> 1, 2..10 -> 2, 11..100 -> 3, >100 -> 4
_EDGES = np.array([1, 2, 11, 101])


def bucket_index(history_counts: np.ndarray) -> np.ndarray:
    """Bucket number (index into :data:`BUCKETS`) of every token, from its history count."""
    counts = np.asarray(history_counts)
    if (counts < 0).any():
        raise ValueError("history counts must be non-negative")
    return np.digitize(counts, _EDGES).astype(np.int8)


def emerging_tokens(log_freq: np.ndarray, last_counts: np.ndarray) -> np.ndarray:
    """Tokens whose log frequency rose in every step of ``log_freq`` ``[|V|, m+1]`` (oldest period
    first) and that occur in the last period (``last_counts > 0``)."""
    log_freq = np.asarray(log_freq, dtype=np.float64)
    if log_freq.ndim != 2 or log_freq.shape[1] < 2:
        raise ValueError(f"need log frequencies [|V|, m+1] with m >= 1, got shape {log_freq.shape}")
    return (np.diff(log_freq, axis=1) > 0).all(axis=1) & (np.asarray(last_counts) > 0)


def bucket_metrics(target_ids: np.ndarray, nll: np.ndarray, top10: np.ndarray,
                   history_counts: np.ndarray, emerging: np.ndarray) -> pd.DataFrame:
    """One row per bucket (:data:`BUCKETS` then ``"emerging"``): ``bucket``, ``n`` (target
    positions), ``mean_nll``, ``recall10``; NaN for a bucket without positions.

    ``target_ids``/``nll``/``top10`` are per scored position; ``history_counts``/``emerging`` are
    per vocabulary id.
    """
    target_ids = np.asarray(target_ids, dtype=np.int64)
    nll = np.asarray(nll, dtype=np.float64)
    top10 = np.asarray(top10, dtype=bool)
    if not (target_ids.shape == nll.shape == top10.shape):
        raise ValueError(f"per-position arrays differ in shape: {target_ids.shape}, {nll.shape}, "
                         f"{top10.shape}")
    groups = bucket_index(history_counts)[target_ids]
    masks = [groups == b for b in range(len(BUCKETS))] + [np.asarray(emerging, bool)[target_ids]]
    rows = []
    for name, mask in zip((*BUCKETS, EMERGING), masks):
        n = int(mask.sum())
        rows.append({"bucket": name, "n": n,
                     "mean_nll": float(nll[mask].mean()) if n else float("nan"),
                     "recall10": float(top10[mask].mean()) if n else float("nan")})
    return pd.DataFrame(rows)


def load_bucket_features(frequencies_dir: str | os.PathLike[str], period: str | int,
                         window: int) -> tuple[np.ndarray, np.ndarray]:
    """History counts (sum over ``period-window .. period-1``) and the emerging mask of
    ``period`` (a label), from ``<frequencies_dir>/<label>.parquet`` for the labels
    ``period-window-1 .. period-1``."""
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    periods = bucket_periods(period, window)
    freqs = []
    for p in periods:
        path = Path(frequencies_dir) / f"{p}.parquet"
        if not path.exists():
            raise UserError(f"bucket metrics of {period} need the frequencies of {p} (history "
                            f"{periods[1]}-{periods[-1]}, and {periods[0]} for 'emerging')",
                            path=path, fix=missing_feature_fix(f"frequencies@{p}"))
        freqs.append(read_period(path))
    history = np.sum([f.counts for f in freqs[1:]], axis=0)
    emerging = emerging_tokens(np.stack([f.log_freq for f in freqs], axis=1), freqs[-1].counts)
    return history, emerging
