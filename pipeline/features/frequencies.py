"""Per-period LM-token frequencies f_iw (paper §3.2), one Parquet file per period.

f_iw is the log relative frequency of LM token w among the tokens of period i's abstracts, with
add-one smoothing over the whole vocabulary (the reference implementation's definition)::

    log_freq[w] = log((count[w] + 1) / (N + |V|)),   N = sum_w count[w]

What is counted: the tokens the LM is trained to predict for each abstract, i.e. the abstract's
tokens plus its closing end-of-text token (``eos + abstract + eos`` minus the leading context EOS,
see :func:`pipeline.features.tokenizer.encode_abstracts`), without truncation.

File: ``<label>.parquet`` (``2020.parquet``, ``2020H2.parquet``; :mod:`pipeline.corpus.periods`)
with one row per token id 0..|V|-1 (``token_id`` int32, ``count`` int64, ``log_freq`` float64)
and schema metadata ``period`` (the label), ``n_tokens``, ``vocab_size``, and the
identities (:mod:`pipeline.infra.identity`) ``tokenizer_sha256`` and ``corpus_sha256`` of the tokenizer
and abstracts it was counted with. :func:`read_period` given the tokenizer in use refuses a file
counted with another one. Files written before periods existed say ``year``: read as its label.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from transformers import PreTrainedTokenizerBase

from pipeline.infra.errors import UserError
from pipeline.infra.identity import (CORPUS_KEY, TOKENIZER_KEY, check_tokenizer,
                                     require_feature_file)
from pipeline.infra.io import parquet_metadata, write_parquet
from pipeline.features.tokenizer import tokenize_texts


@dataclass(frozen=True)
class PeriodFrequencies:
    """One period's counts and smoothed log frequencies, indexed by LM token id."""

    period: str             # the period's label, e.g. "2020" or "2020H2"
    counts: np.ndarray      # int64 [|V|]
    log_freq: np.ndarray    # float64 [|V|]
    n_tokens: int
    tokenizer_id: str | None = None   # sha256 of the tokenizer folder (pipeline.infra.identity)
    corpus_id: str | None = None      # sha256 of the period's abstracts

    @property
    def vocab_size(self) -> int:
        return int(self.counts.shape[0])


def log_frequencies(counts: np.ndarray) -> np.ndarray:
    """``log((c + 1) / (N + |V|))`` for every token (add-one smoothing over the vocabulary)."""
    counts = np.asarray(counts, dtype=np.int64)
    return np.log(counts + 1.0) - np.log(float(counts.sum()) + counts.shape[0])


def document_tokens(tok: PreTrainedTokenizerBase, texts: Sequence[str],
                    batch_size: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """What is counted of each text, per text: ``(flat, lengths)``, int64, the concatenated token
    ids of every text (its abstract tokens + one closing EOS) and each text's number of them.
    :func:`count_tokens` is their histogram; the forecast report resamples documents with them."""
    flats, lengths = [], []
    for start in range(0, len(texts), batch_size):
        batch = tokenize_texts(tok, texts[start:start + batch_size])
        lens = np.fromiter((len(ids) + 1 for ids in batch), dtype=np.int64, count=len(batch))
        flat = np.fromiter((i for ids in batch for i in (*ids, tok.eos_token_id)),
                           dtype=np.int64, count=int(lens.sum()))
        flats.append(flat)
        lengths.append(lens)
    if not flats:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(flats), np.concatenate(lengths)


def count_tokens(tok: PreTrainedTokenizerBase, texts: Sequence[str],
                 batch_size: int = 4096) -> np.ndarray:
    """Count every LM token (abstract tokens + one closing EOS per abstract) over ``texts``.

    Tokenization runs in Rust in batches (:func:`document_tokens`); counting is one
    ``np.bincount``, so the cost is dominated by the tokenizer (no Python loop per token).
    """
    vocab_size = len(tok)
    flat, _ = document_tokens(tok, texts, batch_size)
    return np.bincount(flat, minlength=vocab_size)[:vocab_size].astype(np.int64)


def frequencies_table(counts: np.ndarray) -> pd.DataFrame:
    """The per-period table: one row per token id with its count and log frequency."""
    counts = np.asarray(counts, dtype=np.int64)
    return pd.DataFrame({
        "token_id": np.arange(counts.shape[0], dtype=np.int32),
        "count": counts,
        "log_freq": log_frequencies(counts),
    })


def write_period(path: str | os.PathLike[str], period: str, counts: np.ndarray, *,
                 tokenizer_id: str | None = None, corpus_id: str | None = None) -> None:
    """Write one period's frequencies (atomically, deterministically) to ``path``; ``period``
    is its label (``"2020"``, ``"2020H2"``).

    ``tokenizer_id`` / ``corpus_id`` (:mod:`pipeline.infra.identity`) are recorded in the metadata; the
    frequencies stage always passes both, readers checking the tokenizer refuse a file without.
    """
    counts = np.asarray(counts, dtype=np.int64)
    if counts.ndim != 1 or (counts < 0).any():
        raise ValueError(f"counts for {period} must be a 1-D array of non-negative integers")
    metadata = {"period": str(period), "n_tokens": str(int(counts.sum())),
                "vocab_size": str(int(counts.shape[0]))}
    if tokenizer_id is not None:
        metadata[TOKENIZER_KEY] = tokenizer_id
    if corpus_id is not None:
        metadata[CORPUS_KEY] = corpus_id
    write_parquet(frequencies_table(counts), path, metadata=metadata)


def read_period(path: str | os.PathLike[str], tokenizer_id: str | None = None) -> PeriodFrequencies:
    """Read a file written by :func:`write_period` (two columns only, no pandas round trip).

    With ``tokenizer_id`` (the identity of the tokenizer in use), a file counted with another
    tokenizer, or recording none, is refused with the stage that recomputes it.
    """
    stage = require_feature_file("frequencies", path, "frequency")
    try:
        meta = parquet_metadata(path)
        table = pq.read_table(path, columns=["count", "log_freq"])
        period = meta["period"] if "period" in meta else str(int(meta["year"]))
        vocab_size, n_tokens = int(meta["vocab_size"]), int(meta["n_tokens"])
    except (pa.ArrowException, OSError, KeyError, ValueError) as err:
        raise UserError(f"the frequency file is damaged or not a frequency file ({err})", path=path,
                        fix=f"recompute it: `dvc repro {stage}`") from err
    counts = table.column("count").to_numpy().astype(np.int64, copy=False)
    if counts.shape[0] != vocab_size:
        raise UserError(f"the frequency file has {counts.shape[0]} rows but vocab_size={vocab_size}: "
                        "it is damaged", path=path, fix=f"recompute it: `dvc repro {stage}`")
    if tokenizer_id is not None:
        check_tokenizer(path, meta.get(TOKENIZER_KEY), tokenizer_id, stage)
    return PeriodFrequencies(period=period, counts=counts,
                             log_freq=table.column("log_freq").to_numpy().astype(np.float64,
                                                                                 copy=False),
                             n_tokens=n_tokens, tokenizer_id=meta.get(TOKENIZER_KEY),
                             corpus_id=meta.get(CORPUS_KEY))


@dataclass(frozen=True)
class WordMatch:
    """The LM tokens a plotted word is read from."""

    word: str
    token_ids: tuple[int, ...]
    match: str   # how: the single-token forms used, or the first-token fallback


def match_word(tok: PreTrainedTokenizerBase, word: str) -> WordMatch:
    """Map a word to LM token ids for plotting its frequency (the paper's Figure 1b).

    Every casing (as given, lower, Capitalised, UPPER) with and without the leading space that
    the tokenizer keeps as ONE token is used, so "bert" collects " BERT", " Bert", "BERT", ...
    A word that is several tokens in every form is read from the first token of " <word>" (as
    given), and ``match`` says so.
    """
    forms = dict.fromkeys(f"{space}{cased}" for space in (" ", "")
                          for cased in (word, word.lower(), word.capitalize(), word.upper()))
    single = {}
    for form in forms:
        ids = tokenize_texts(tok, [form])[0]
        if len(ids) == 1:
            single.setdefault(ids[0], form)
    if single:
        ids = tuple(sorted(single))
        return WordMatch(word, ids, "tokens " + " | ".join(repr(single[i]) for i in ids))
    pieces = tokenize_texts(tok, [" " + word])[0]
    shown = [tok.convert_ids_to_tokens(i) for i in pieces]
    return WordMatch(word, (pieces[0],), f"first token {shown[0]!r} of {len(pieces)}: {' '.join(shown)}")


def word_log_freq(freqs: PeriodFrequencies, match: WordMatch) -> float:
    """log((c+1)/(N+|V|)) with c summed over the word's matched tokens."""
    c = int(freqs.counts[list(match.token_ids)].sum())
    return float(np.log(c + 1.0) - np.log(float(freqs.n_tokens) + freqs.vocab_size))
