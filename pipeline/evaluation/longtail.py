"""Long-tail word prediction: token accuracy and correctly predicted *types*, by frequency bin.

The evaluation of paper 004 (``../shared/papers/004-continuous-output-long-tail.txt``, section 2
"Evaluation", Table 1 and Figure 1). At every position whose target is a whole word (the caller
selects them) a model proposes a ranked list of word ids, best first. Then

* **tokens** ``top_k`` (Table 1 "top_1 (top_10)"): the share of positions whose target is among
  the first ``k`` proposals — :func:`token_accuracy`;
* **types** ``T_k`` (Table 1 "T_1 (T_10)"): "how many correctly-predicted unique vocabulary types
  were retrieved", the number of distinct target words predicted correctly (within the first
  ``k``) at least once — :func:`types_correct`;
* both stratified by the target's training frequency into high-, mid- and low-frequency bins
  (Figure 1, "types stratified by frequency") — :func:`frequency_bins`, :func:`longtail_table`.

The paper's lower-bound baselines (section 3, Table 1): ``freq``, "predicting top 10 most common
words in train set" (:func:`freq_baseline_predictions`), and ``ugrm``, which "sampled from a
unigram distribution learned from the training set" (:func:`unigram_baseline_predictions`).

Everything here is a pure function of numpy arrays (no torch): ``targets`` ``[n]`` and
``predictions`` ``[n, k]`` are word ids, ``train_counts`` ``[V]`` the training count of every id.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

BINS = ("high", "mid", "low")
ALL = "all"
_ROWS_PER_CHUNK = 1 << 16      # bounds the memory of the ugrm sampler


def _ids(name: str, array, ndim: int) -> np.ndarray:
    """``array`` as int64 with ``ndim`` dimensions, or a ValueError naming ``name``."""
    array = np.asarray(array)
    if array.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {array.shape}")
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{name} must hold integer word ids, got dtype {array.dtype}")
    return array.astype(np.int64, copy=False)


def _counts(train_counts) -> np.ndarray:
    counts = _ids("train_counts", train_counts, 1)
    if counts.size == 0:
        raise ValueError("train_counts is empty: need one count per vocabulary id")
    if (counts < 0).any():
        raise ValueError("train_counts must be non-negative")
    return counts


def _hits(targets, predictions, k: int) -> np.ndarray:
    """Boolean ``[n]``: the target is among the first ``k`` predictions of its position."""
    targets = _ids("targets", targets, 1)
    predictions = _ids("predictions", predictions, 2)
    if predictions.shape[0] != targets.shape[0]:
        raise ValueError(f"predictions has {predictions.shape[0]} rows, targets has "
                         f"{targets.shape[0]} positions: need one ranked row per target")
    if not 1 <= k <= predictions.shape[1]:
        raise ValueError(f"k must be between 1 and the {predictions.shape[1]} predictions per "
                         f"position, got {k}")
    return (predictions[:, :k] == targets[:, None]).any(axis=1)


def frequency_bins(train_counts, edges: Sequence[int]) -> np.ndarray:
    """The frequency bin (``"high"``, ``"mid"`` or ``"low"``) of every word id, by training count.

    ``edges = (high_min, mid_min)``: ``high`` when ``count >= high_min``, ``mid`` when
    ``mid_min <= count < high_min``, ``low`` when ``count < mid_min``. ``mid_min`` must be at
    least 1, so words unseen in training (count 0) are always ``low``; ``high_min >= mid_min``
    (equal leaves ``mid`` empty). The paper gives no edges for its Figure 1; they are a parameter.
    """
    counts = _counts(train_counts)
    if len(edges) != 2:
        raise ValueError(f"edges must be (high_min, mid_min), got {edges!r}")
    high_min, mid_min = (int(e) for e in edges)
    if not 1 <= mid_min <= high_min:
        raise ValueError(f"edges must satisfy 1 <= mid_min <= high_min, got high_min={high_min}, "
                         f"mid_min={mid_min}")
    return np.where(counts >= high_min, "high", np.where(counts >= mid_min, "mid", "low"))


def token_accuracy(targets, predictions, k: int) -> float:
    """Token ``top_k`` (paper 004, Table 1): share of positions whose target is among the first
    ``k`` columns of ``predictions``; NaN without positions."""
    hits = _hits(targets, predictions, k)
    return float(hits.mean()) if hits.size else float("nan")


def types_correct(targets, predictions, k: int) -> int:
    """Types ``T_k`` (paper 004, section 2 "Evaluation" and Table 1): the number of distinct target
    words that are among the first ``k`` predictions at least at one of their positions."""
    hits = _hits(targets, predictions, k)
    return int(np.unique(np.asarray(targets, dtype=np.int64)[hits]).size)


def longtail_table(targets, predictions, train_counts, edges: Sequence[int]) -> pd.DataFrame:
    """Tokens and types per training-frequency bin (paper 004, Table 1 stratified as in Figure 1),
    from ranked ``predictions`` ``[n, k]``: :func:`longtail_from_hits` of their top-1 and (with
    ``k >= 10``) top-10 hits."""
    hits10 = _hits(targets, predictions, 10) if np.shape(predictions)[1] >= 10 else None
    return longtail_from_hits(targets, _hits(targets, predictions, 1), hits10, train_counts, edges)


def longtail_from_hits(targets, hits1, hits10, train_counts, edges: Sequence[int]) -> pd.DataFrame:
    """Tokens and types per training-frequency bin, from per-position hits: ``hits1[j]`` (the
    target of position ``j`` was the first proposal), ``hits10[j]`` (among the first 10; ``None``
    when the model proposed fewer), as the score stage records them for a softmax's argmax and
    top 10.

    One row per bin of :func:`frequency_bins` (``high``, ``mid``, ``low``) then ``all``, with
    columns ``bin``; ``n`` (positions whose target is in the bin); ``n_types`` (distinct targets
    in the bin: Figure 1's "n: number of items in each bin", over which it shows T_1 as a
    percentage); ``acc@1``, ``acc@10`` (token accuracy, NaN for a bin without positions); ``T1``,
    ``T10`` (types). Without ``hits10``, ``acc@10`` and ``T10`` are NaN.
    """
    counts = _counts(train_counts)
    targets = _ids("targets", targets, 1)
    if targets.size and (targets.min() < 0 or targets.max() >= counts.size):
        raise ValueError(f"target ids outside the vocabulary of {counts.size} train_counts")
    hits1 = _flags("hits1", hits1, targets.size)
    hits10 = None if hits10 is None else _flags("hits10", hits10, targets.size)
    labels = frequency_bins(counts, edges)[targets]
    rows = []
    for name in (*BINS, ALL):
        mask = np.ones_like(hits1) if name == ALL else labels == name
        n = int(mask.sum())
        row = {"bin": name, "n": n, "n_types": int(np.unique(targets[mask]).size),
               "acc@1": float(hits1[mask].mean()) if n else float("nan"),
               "acc@10": float("nan"),
               "T1": int(np.unique(targets[mask & hits1]).size), "T10": float("nan")}
        if hits10 is not None:
            row["acc@10"] = float(hits10[mask].mean()) if n else float("nan")
            row["T10"] = int(np.unique(targets[mask & hits10]).size)
        rows.append(row)
    return pd.DataFrame(rows)


def _flags(name: str, array, n: int) -> np.ndarray:
    array = np.asarray(array)
    if array.shape != (n,) or array.dtype != bool:
        raise ValueError(f"{name} must be {n} booleans (one per target), got shape {array.shape} "
                         f"and dtype {array.dtype}")
    return array


def freq_baseline_predictions(train_counts, n: int, k: int = 10) -> np.ndarray:
    """Paper 004's ``freq`` baseline: the same ``k`` most frequent training words at each of ``n``
    positions, ``[n, k]``, most frequent first; equal counts are ranked by smaller word id first."""
    counts = _counts(train_counts)
    if not 1 <= k <= counts.size:
        raise ValueError(f"k must be between 1 and the vocabulary size {counts.size}, got {k}")
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    top = np.argsort(-counts, kind="stable")[:k]
    return np.tile(top, (n, 1))


def _first_distinct(draws: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``draws`` holding at least ``k`` distinct ids, and for those rows the first ``k``
    distinct ids in draw order ``[rows, k]``."""
    order = np.argsort(draws, axis=1, kind="stable")       # equal ids keep their draw order
    ranked = np.take_along_axis(draws, order, axis=1)
    first_sorted = np.ones(draws.shape, dtype=bool)
    first_sorted[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
    first = np.empty_like(first_sorted)
    np.put_along_axis(first, order, first_sorted, axis=1)  # True at an id's first draw
    n_distinct = np.cumsum(first, axis=1)
    done = n_distinct[:, -1] >= k
    keep = first[done] & (n_distinct[done] <= k)           # exactly k per finished row
    return done, draws[done][keep].reshape(-1, k)


def unigram_baseline_predictions(train_counts, n: int, k: int, seed: int) -> np.ndarray:
    """Paper 004's ``ugrm`` baseline: ``[n, k]`` ids sampled from the training unigram
    distribution ``p_w = c_w / sum(c)`` (maximum likelihood, no smoothing: unseen words are never
    proposed), with ``numpy.random.default_rng(seed)``.

    The ``k`` proposals of a position are ``k`` *distinct* words, sampled successively without
    replacement (the second from ``p`` renormalised without the first, ...), in sampling order:
    draws with replacement, repeats discarded. Column 0 is one plain draw from ``p``, so when the
    targets follow ``p`` the expected top-1 accuracy is ``sum_w p_w^2``. (The paper does not say;
    its ugrm top-10 accuracy, 8.46, is more than 10x its top-1, 0.71, which 10 draws with
    replacement cannot reach, as ``1 - (1 - p)^10 <= 10 p``.)
    """
    counts = _counts(train_counts)
    seen = int((counts > 0).sum())
    if not 1 <= k <= seen:
        raise ValueError(f"k must be between 1 and the {seen} words seen in training, got {k}")
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    rng = np.random.default_rng(seed)
    cumulative = np.cumsum(counts)
    total = int(cumulative[-1])

    def draw(rows: int, columns: int) -> np.ndarray:
        # id w is drawn when the uniform integer falls in [cumulative[w-1], cumulative[w])
        return np.searchsorted(cumulative, rng.integers(0, total, (rows, columns)), side="right")

    out = np.empty((n, k), dtype=np.int64)
    for start in range(0, n, _ROWS_PER_CHUNK):
        rows = np.arange(start, min(start + _ROWS_PER_CHUNK, n))
        draws = draw(rows.size, 2 * k)
        while rows.size:
            done, chosen = _first_distinct(draws, k)
            out[rows[done]] = chosen
            # rows still short of k distinct ids draw more, after the draws they already have
            rows, draws = rows[~done], draws[~done]
            if rows.size:
                draws = np.concatenate([draws, draw(rows.size, draws.shape[1])], axis=1)
    return out
