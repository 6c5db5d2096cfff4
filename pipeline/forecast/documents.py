"""A period's documents as the backtests resample them: each abstract's LM tokens, by document.

The backtests' unit is the **document** (an abstract's tokens are not independent draws:
resampling tokens gives intervals far too narrow). :class:`PeriodDocuments` holds one period's
abstracts tokenized exactly as the frequencies stage counts them
(:func:`pipeline.features.frequencies.document_tokens`: the abstract's tokens and its closing
EOS), so their histogram is the period's frequency file; it gives the per-document NLL sums of a
forecast (:func:`document_nll`) and the half-split of the period (:mod:`pipeline.corpus.halves`)
that the trend test reads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from transformers import PreTrainedTokenizerBase

from pipeline.corpus.halves import in_half_a
from pipeline.features.frequencies import document_tokens


@dataclass(frozen=True)
class PeriodDocuments:
    """``flat``: every document's token ids, concatenated (int64); ``lengths``: tokens per
    document; ``keys``: the documents' corpus keys; ``vocab_size``: |V|."""

    period: str
    keys: tuple[str, ...]
    flat: np.ndarray
    lengths: np.ndarray
    vocab_size: int

    def __post_init__(self) -> None:
        if len(self.keys) != len(self.lengths) or int(self.lengths.sum()) != len(self.flat):
            raise ValueError(f"{self.period}: keys, lengths and tokens disagree")

    @property
    def n_documents(self) -> int:
        return len(self.keys)

    @property
    def owner(self) -> np.ndarray:
        """int64 ``[N]``: the document of each token."""
        return np.repeat(np.arange(self.n_documents), self.lengths)

    def counts(self) -> np.ndarray:
        """int64 ``[|V|]``: the period's token counts (its frequency file's ``count``)."""
        return np.bincount(self.flat, minlength=self.vocab_size).astype(np.int64)

    def matrix(self, columns: np.ndarray | None = None) -> sparse.csr_matrix:
        """Sparse int64 ``[documents, |V|]`` counts (or only ``columns``, token ids, in order)."""
        full = sparse.csr_matrix((np.ones(len(self.flat), dtype=np.int64), (self.owner, self.flat)),
                                 shape=(self.n_documents, self.vocab_size))
        return full if columns is None else full[:, np.asarray(columns)]

    def subset(self, keep: np.ndarray, label: str) -> PeriodDocuments:
        """The documents where ``keep`` (bool ``[documents]``) holds, in order."""
        keep = np.asarray(keep, dtype=bool)
        return PeriodDocuments(label, tuple(k for k, x in zip(self.keys, keep) if x),
                               self.flat[keep[self.owner]], self.lengths[keep], self.vocab_size)

    def halves(self) -> tuple[PeriodDocuments, PeriodDocuments]:
        """Halves A and B of the period (:func:`pipeline.corpus.halves.in_half_a`)."""
        a = in_half_a(self.keys)
        return self.subset(a, f"{self.period}/A"), self.subset(~a, f"{self.period}/B")


def tokenize_documents(tok: PreTrainedTokenizerBase, period: str, keys: list[str],
                       texts: list[str]) -> PeriodDocuments:
    """``texts`` (the abstracts of ``period``, keys ``keys``) as the frequencies stage counts them."""
    flat, lengths = document_tokens(tok, texts)
    return PeriodDocuments(str(period), tuple(map(str, keys)), flat, lengths, len(tok))


def document_nll(docs: PeriodDocuments, log_ps: np.ndarray) -> np.ndarray:
    """float64 ``[documents, F]``: each document's NLL sum ``−Σ_t log p̂_f(w_t)`` under each of
    the ``F`` forecasts (rows of ``log_ps``, ``[F, ≥|V|]``; padded LM outputs are ignored)."""
    log_ps = np.atleast_2d(np.asarray(log_ps, dtype=np.float64))[:, :docs.vocab_size]
    if docs.n_documents == 0:
        return np.zeros((0, log_ps.shape[0]))
    starts = np.concatenate([[0], np.cumsum(docs.lengths)[:-1]])
    return -np.add.reduceat(log_ps[:, docs.flat], starts, axis=1).T
