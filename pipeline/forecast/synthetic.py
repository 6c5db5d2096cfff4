"""Synthetic corpora with a known law: bursty documents over a Zipf vocabulary, for simulations.

A :class:`TopicCorpus` is a population of documents whose every token has a known marginal
probability (:meth:`TopicCorpus.marginal`), so population quantities — a forecast's cross-entropy,
whether a word's frequency moves — are exact, while the documents are as clumpy as abstracts:

* a vocabulary of ``vocab`` token ids in **twin pairs** (ids ``2i`` and ``2i+1`` have the same
  probability everywhere), Zipf-distributed over the pairs; the :data:`STOPWORDS` most frequent
  ids are not content tokens;
* each document has one of ``topics`` topics (a topic boosts a sparse, Gamma-drawn set of words);
  a token comes from its topic with probability ``topic_share``, else from the background, and
  with probability ``repeat`` it repeats an earlier draw of the same document (a word that occurs
  once tends to recur). Token counts are log-normal like the sample's abstracts
  (:func:`pipeline.stats.calibration.token_counts`); every token's marginal law is the corpus's,
  whatever the document's length;
* a **rewrite** moves a share of one word's occurrences to another (a planted trend).

Used by :mod:`pipeline.forecast.calibration`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pipeline.forecast.documents import PeriodDocuments
from pipeline.stats.calibration import TOKENS_MEAN, token_counts

STOPWORDS = 20


@dataclass(frozen=True)
class TopicCorpus:
    """A population of bursty documents (module doc). ``seed`` fixes the topics."""

    vocab: int = 3000
    topics: int = 30
    topic_share: float = 0.3
    repeat: float = 0.2
    zipf: float = 1.05
    boost_shape: float = 0.2
    seed: int = 0

    def __post_init__(self) -> None:
        if self.vocab % 2:
            raise ValueError("the vocabulary comes in twin pairs: give an even size")
        rng = np.random.default_rng([self.seed, self.vocab, self.topics])
        pairs = self.vocab // 2
        base = np.repeat(1.0 / (np.arange(pairs) + 2.7) ** self.zipf, 2)
        boost = np.repeat(rng.gamma(self.boost_shape, 1 / self.boost_shape, (self.topics, pairs)),
                          2, axis=1)
        dists = np.vstack([base, base * boost])
        dists /= dists.sum(axis=1, keepdims=True)
        object.__setattr__(self, "_dists", dists)           # row 0: background, 1..K: topics
        tables = [alias_table(d) for d in dists]
        object.__setattr__(self, "_prob", np.concatenate([t[0] for t in tables]))
        object.__setattr__(self, "_alias", np.concatenate([t[1] for t in tables]))

    def marginal(self, rewrite: Mapping[int, int] | None = None, share: float = 0.0,
                 topic_shares: np.ndarray | None = None) -> np.ndarray:
        """Every token's probability (``rewrite``: a share ``share`` of each key's occurrences
        becomes its value's; ``topic_shares``: as in :meth:`sample`)."""
        d = self._dists                                       # type: ignore[attr-defined]
        topics = (d[1:].mean(axis=0) if topic_shares is None
                  else (np.asarray(topic_shares)[:, None] * d[1:]).sum(axis=0))
        p = (1 - self.topic_share) * d[0] + self.topic_share * topics
        for x, y in (rewrite or {}).items():
            p[y] += share * p[x]
            p[x] *= 1 - share
        return p

    @property
    def content(self) -> np.ndarray:
        """bool ``[vocab]``: all but the :data:`STOPWORDS` most frequent ids."""
        keep = np.ones(self.vocab, dtype=bool)
        keep[np.argsort(-self.marginal(), kind="stable")[:STOPWORDS]] = False
        return keep

    def sample(self, rng: np.random.Generator, n_docs: int, period: str = "Y", tag: str = "",
               rewrite: Mapping[int, int] | None = None, share: float = 0.0,
               topic_shares: np.ndarray | None = None) -> PeriodDocuments:
        """``n_docs`` documents (keys ``<tag><period>-<j>``); ``rewrite``/``share`` as in
        :meth:`marginal`; ``topic_shares`` (``[topics]``, summing to 1): how often each topic
        is a document's (uniform when None: the corpus's own law)."""
        lengths = token_counts(rng, n_docs).astype(np.int64)
        n = int(lengths.sum())
        owner = np.repeat(np.arange(n_docs), lengths)
        topic = (rng.integers(1, self.topics + 1, n_docs) if topic_shares is None
                 else 1 + np.searchsorted(np.cumsum(topic_shares), rng.random(n_docs) *
                                          float(np.sum(topic_shares)), side="right"))
        topic = np.minimum(topic, self.topics)
        src = np.where(rng.random(n) < self.topic_share, topic[owner], 0)
        u = rng.random(n) * self.vocab                 # Walker's alias method, source by source
        cell = u.astype(np.int64)
        at = src * self.vocab + cell
        prob, alias = self._prob, self._alias                 # type: ignore[attr-defined]
        flat = np.where(u - cell < prob[at], cell, alias[at])
        start = np.concatenate([[0], np.cumsum(lengths)[:-1]])[owner]
        pos = np.arange(n) - start
        copy = (rng.random(n) < self.repeat) & (pos > 0)
        source = start + np.floor(rng.random(n) * pos).astype(np.int64)
        flat = np.where(copy, flat[source], flat)
        if rewrite and share > 0:
            partner = np.arange(self.vocab)
            partner[list(rewrite)] = list(rewrite.values())
            moved = (partner[flat] != flat) & (rng.random(n) < share)
            flat = np.where(moved, partner[flat], flat)
        keys = tuple(f"{tag}{period}-{j}" for j in range(n_docs))
        return PeriodDocuments(period, keys, flat.astype(np.int64), lengths, self.vocab)


def drifting_topics(corpus: TopicCorpus, rng: np.random.Generator, n_periods: int,
                    sd: float) -> list[np.ndarray]:
    """Topic shares of ``n_periods`` consecutive periods whose log shares take a random walk
    with steps of sd ``sd``: each period's topic mix moves by chance, so what rose last period
    says nothing of what rises next (no forecaster has skill on such a corpus)."""
    log_shares = np.zeros(corpus.topics)
    out = []
    for _ in range(n_periods):
        shares = np.exp(log_shares - log_shares.max())
        out.append(shares / shares.sum())
        log_shares = log_shares + rng.normal(0.0, sd, corpus.topics)
    return out


def alias_table(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Walker's alias table of the distribution ``p``: draw a cell ``i`` uniformly and a uniform
    ``v``; the draw is ``i`` if ``v < prob[i]``, else ``alias[i]`` (Vose's construction)."""
    n = len(p)
    scaled = np.asarray(p, dtype=np.float64) * n / np.sum(p)
    prob, alias = np.ones(n), np.arange(n)
    small = [i for i in range(n) if scaled[i] < 1]
    large = [i for i in range(n) if scaled[i] >= 1]
    while small and large:
        s, g = small.pop(), large.pop()
        prob[s], alias[s] = scaled[s], g
        scaled[g] -= 1 - scaled[s]
        (small if scaled[g] < 1 else large).append(g)
    return prob, alias


def cross_entropy(p: np.ndarray, log_q: np.ndarray) -> float:
    """The population cross-entropy ``−Σ p log q`` (nats per token)."""
    return float(-(p * log_q).sum())


def corpus_settings(corpus: TopicCorpus) -> dict[str, object]:
    """The corpus's parameters, for a calibration's settings."""
    return dict(vocab=corpus.vocab, topics=corpus.topics, topic_share=corpus.topic_share,
                repeat=corpus.repeat, zipf=corpus.zipf, boost_shape=corpus.boost_shape,
                stopwords=STOPWORDS)


def planted_pairs(corpus: TopicCorpus, rng: np.random.Generator, n_docs: int,
                  min_count: int, n_pairs: int) -> dict[int, int]:
    """``n_pairs`` (falling → rising) content-word pairs: each falling word is expected at least
    ``1.5 min_count`` times in half A of period Y−1 (``n_docs`` documents) once 60 % of it is
    rewritten, so both words of a pair are trend tokens there; its partner is a content word at
    most a quarter as frequent, so the two trade places (the rising word ends near 80 % of the
    falling word's old frequency)."""
    p = corpus.marginal()
    content = corpus.content
    falling = rng.permutation(np.flatnonzero(content & (0.4 * p * n_docs / 2 * TOKENS_MEAN
                                                        >= 1.5 * min_count)))
    used = set(falling[:n_pairs].tolist())
    pairs = {}
    for x in falling[:n_pairs]:
        pool = np.flatnonzero(content & (p <= p[x] / 4))
        pool = np.setdiff1d(pool, list(used))
        y = int(rng.choice(pool))
        used.add(y)
        pairs[int(x)] = y
    return pairs
