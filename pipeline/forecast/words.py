"""A corpus's words by period: the tokens the forecast-skill backtest forecasts and scores.

The backtest asks whether a forecaster of next period's **word** distribution beats the
stationary ones, so its tokens are words, not an LM tokenizer's pieces (a subword vocabulary
trained on some periods would make the event space depend on them):

* a **word** is a maximal run of letters (Unicode letters, no digits, no underscore:
  ``[^\\W\\d_]+``) of the lower-cased text — "BERT-based" gives *bert*, *based*; "GPT-4" gives
  *gpt*; accented words stay whole;
* **stopwords** are kept by default (a forecast of the whole distribution); with
  ``drop_stopwords`` the words of the list are removed before counting;
* words seen fewer than ``min_count`` times in the whole corpus share one id, :data:`RARE`
  (the last id): a forecast of each of thousands of hapaxes is noise, and the pooled id keeps
  every document's tokens, so the document NLL stays a full account of the text.

The vocabulary — which words get an id — is fixed once for the whole corpus. It is the event
space every forecaster is scored on, the same for all of them at every origin, so it cannot
favour one; no forecaster reads a count it was not handed (the engine slices the counts by
period). Ids are ordered by descending total count (ties alphabetical), so the same corpus gives
the same ids. Documents without a word (none after filtering) are dropped and counted.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.forecast.documents import PeriodDocuments
from pipeline.forecast.forecasters.base import PeriodCounts

WORD = re.compile(r"[^\W\d_]+")
RARE = "<rare>"
MIN_COUNT = 10


def words(text: str) -> list[str]:
    """The words of ``text`` (module doc), in order."""
    return WORD.findall(text.lower())


@dataclass(frozen=True)
class WordCorpus:
    """One :class:`PeriodDocuments` per period (consecutive, time order) over ``vocab`` (id →
    word; :data:`RARE` last when some word was pooled); ``dropped``: documents without a word."""

    vocab: tuple[str, ...]
    documents: tuple[PeriodDocuments, ...]
    dropped: int = 0

    @property
    def periods(self) -> tuple[str, ...]:
        return tuple(d.period for d in self.documents)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def mask(self, keep: Callable[[str], bool]) -> np.ndarray:
        """bool ``[V]``: the words for which ``keep`` holds (never the pooled id)."""
        return np.array([w != RARE and keep(w) for w in self.vocab], dtype=bool)

    def counts(self) -> PeriodCounts:
        """Token and document counts of every period: what the forecasters read."""
        return period_counts(self.documents)


def period_counts(documents: Sequence[PeriodDocuments]) -> PeriodCounts:
    """The :class:`PeriodCounts` of consecutive periods' documents."""
    v = documents[0].vocab_size if documents else 0
    counts = np.stack([d.counts() for d in documents]) if documents else np.zeros((0, v), np.int64)
    doc_counts = np.stack([document_frequency(d) for d in documents]) if documents \
        else np.zeros((0, v), np.int64)
    n_docs = np.array([d.n_documents for d in documents], dtype=np.int64)
    return PeriodCounts(tuple(d.period for d in documents), counts, doc_counts, n_docs)


def document_frequency(docs: PeriodDocuments) -> np.ndarray:
    """int64 ``[V]``: the documents of ``docs`` that hold each id."""
    pairs = np.unique(docs.owner.astype(np.int64) * docs.vocab_size + docs.flat)
    return np.bincount(pairs % docs.vocab_size, minlength=docs.vocab_size).astype(np.int64)


def word_corpus(periods: Sequence[str], keys: Sequence[Sequence[str]],
                texts: Sequence[Sequence[str]], min_count: int = MIN_COUNT,
                stopwords: frozenset[str] = frozenset(), drop_stopwords: bool = False
                ) -> WordCorpus:
    """The :class:`WordCorpus` of ``texts[i]`` (keys ``keys[i]``), the documents of
    ``periods[i]`` (consecutive, time order; a period may have none)."""
    if min_count < 1:
        raise ValueError(f"min_count must be at least 1, got {min_count}")
    tokenized = [[[w for w in words(t) if not (drop_stopwords and w in stopwords)] for t in ts]
                 for ts in texts]
    total: Counter[str] = Counter()
    for docs in tokenized:
        for doc in docs:
            total.update(doc)
    kept = sorted((w for w, c in total.items() if c >= min_count), key=lambda w: (-total[w], w))
    pooled = len(kept) < len(total)
    vocab = tuple(kept) + ((RARE,) if pooled else ())
    ids = {w: i for i, w in enumerate(kept)}
    rare = len(kept)
    documents, dropped = [], 0
    for period, period_keys, docs in zip(periods, keys, tokenized):
        flat: list[int] = []
        lengths, doc_keys = [], []
        for key, doc in zip(period_keys, docs):
            if not doc:
                dropped += 1
                continue
            flat.extend(ids.get(w, rare) for w in doc)
            lengths.append(len(doc))
            doc_keys.append(str(key))
        documents.append(PeriodDocuments(str(period), tuple(doc_keys),
                                          np.asarray(flat, dtype=np.int64),
                                          np.asarray(lengths, dtype=np.int64), len(vocab)))
    return WordCorpus(vocab, tuple(documents), dropped)
