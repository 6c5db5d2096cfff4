"""Reference points for content METEOR (CM) and a fluency measure beside it.

CM (:func:`pipeline.evaluation.meteor.content_meteor`) scores a generated abstract by its best
METEOR against any gold abstract of the target period, on content words only. It has no reference
point: a text that is nothing but a list of frequent content words scores well, whatever its
fluency. Two anchors, scored with exactly the same CM function against the same gold abstracts:

- **Content-word sampler** (:class:`ContentSampler`): for each generated slot, content words drawn
  i.i.d. with their training-period frequency (CM's own filter,
  :func:`pipeline.evaluation.content.content_words`, applied to the training abstracts), as many
  as a real training abstract has (its content-word count, drawn uniformly from those of the
  training abstracts with at least one). A model whose CM does not beat this has shown no
  topical knowledge beyond word frequency.
- **Stopword-matched sampler** (:meth:`ContentSampler.sample_matching`), one per model: the same
  draw, but for each of the model's generated texts exactly as many content words as that text
  has. CM drops stopwords, so a model that writes mostly stopwords leaves few content words to
  match, and loses to the plain sampler by its fluency, not by its choice of words; against the
  matched sampler, length and stopword share are equal and only the choice of words differs.
- **Previous period's real abstracts** (:func:`previous_period_sample`): abstracts of period
  Y−1 drawn without replacement and scored as if generated for Y: what a perfectly fluent,
  perfectly stale writer gets.

Each draws as many texts as each model generates for the period, with a seeded generator that
depends only on the seed, the period label and the anchor (integer arithmetic only: the same
texts on every CPU).

Fluency (:func:`stopword_share`): the share of a text's word tokens (nltk word tokens with a
letter) that are on the paper's stopword list, the list CM drops. Real abstracts are around 0.6;
a list of content words is 0 by construction.
"""

from __future__ import annotations

import os
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.corpus.by_period import read_period
from pipeline.corpus.periods import shift
from pipeline.evaluation.content import content_words, word_tokenize
from pipeline.evaluation.meteor import content_meteor
from pipeline.infra.io import read_parquet

ANCHOR_SEED = 0


def _rng(seed: int, period: str, purpose: int) -> np.random.Generator:
    """A generator for one (seed, period, anchor): independent streams, no float in the seed."""
    return np.random.default_rng([seed, zlib.crc32(str(period).encode("utf-8")), purpose])


@dataclass(frozen=True)
class ContentSampler:
    """Content words with their training counts (sorted by word) and real content-word lengths."""

    words: tuple[str, ...]
    counts: np.ndarray          # int64, one per word
    lengths: np.ndarray         # int64, content words per training abstract (each >= 1)

    @classmethod
    def fit(cls, texts: Sequence[str], stopwords: frozenset[str]) -> ContentSampler:
        """Counts and lengths of the training abstracts' CM content words."""
        counts: Counter[str] = Counter()
        lengths = []
        for text in texts:
            words = content_words(text, stopwords)
            counts.update(words)
            if words:
                lengths.append(len(words))
        if not lengths:
            raise ValueError("no training abstract has a content word: the content-word sampler "
                             "needs training text")
        vocab = sorted(counts)
        return cls(tuple(vocab), np.array([counts[w] for w in vocab], dtype=np.int64),
                   np.array(lengths, dtype=np.int64))

    def sample(self, n: int, period: str, seed: int = ANCHOR_SEED) -> list[str]:
        """``n`` texts of space-separated content words for ``period`` (deterministic)."""
        rng = _rng(seed, period, 1)
        return self._draw(rng, self.lengths[rng.integers(0, len(self.lengths), size=n)])

    def sample_matching(self, texts: Sequence[str], period: str, stopwords: frozenset[str],
                        seed: int = ANCHOR_SEED) -> list[str]:
        """One text per text of ``texts`` (a model's generations for ``period``), with as many
        content words as it has, drawn as :meth:`sample` draws them (deterministic; a text
        without content words gets an empty one)."""
        counts = np.array([len(content_words(t, stopwords)) for t in texts], dtype=np.int64)
        return self._draw(_rng(seed, period, 3), counts)

    def _draw(self, rng: np.random.Generator, lengths: np.ndarray) -> list[str]:
        """One text of ``length`` i.i.d. content words (training frequency) per length."""
        cumulative = np.cumsum(self.counts)
        total = int(cumulative[-1])
        texts = []
        for length in lengths:
            ids = np.searchsorted(cumulative, rng.integers(0, total, size=int(length)),
                                  side="right")
            texts.append(" ".join(self.words[i] for i in ids))
        return texts


def sampler_cms(texts: Sequence[str], gold: Sequence[str], stopwords: frozenset[str],
                gold_words: Sequence[Sequence[str]] | None = None) -> np.ndarray:
    """float64 CM of each sampled text against ``gold`` (``gold_words``: their content words,
    if already found); an empty text (no content word) scores 0, as a text without content
    words does in CM."""
    scores = np.zeros(len(texts), dtype=np.float64)
    kept = [i for i, t in enumerate(texts) if t]
    if kept:
        scores[kept] = [b.score for b in content_meteor([texts[i] for i in kept], gold, stopwords,
                                                        gold_words)]
    return scores


def previous_period_sample(texts: Sequence[str], n: int, period: str,
                           seed: int = ANCHOR_SEED) -> list[str]:
    """``n`` non-empty abstracts of the previous period (``texts``), drawn without replacement
    for target ``period`` (all of them, in a drawn order, when there are fewer)."""
    pool = [t for t in texts if t.strip()]
    if not pool:
        raise ValueError(f"no abstracts in the period before {period}: the previous-period "
                         "anchor needs them")
    order = _rng(seed, period, 2).permutation(len(pool))[:n]
    return [pool[i] for i in order]


def previous_abstracts(corpus: str | os.PathLike[str], period: str) -> tuple[str, list[str]]:
    """The label of the period before ``period`` and its abstracts (corpus table, corpus order):
    the previous-period anchor reads these and nothing else."""
    previous = shift(period, -1)
    frame = read_period(corpus, previous, ["abstract"],
                        purpose=f"anchor the content METEOR of {period}")
    return previous, frame["abstract"].tolist()


def gold_abstracts(period: str, splits: Mapping[str, str | os.PathLike[str]],
                   corpus: str | os.PathLike[str]) -> list[str]:
    """The gold abstracts CM compares ``period``'s generations with, read as the score stage
    reads them (:func:`pipeline.evaluation.evaluate.read_eval_periods`): the split file of the dev
    or test period (``splits``: period label -> file), else the period's rows of the corpus."""
    if str(period) in splits:
        return read_parquet(splits[str(period)], columns=["abstract"])["abstract"].tolist()
    return read_period(corpus, period, ["abstract"], purpose=f"score {period}")["abstract"].tolist()


def word_tokens(text: str) -> list[str]:
    """nltk word tokens (as CM tokenizes) holding at least one letter, lowercased."""
    return [w.lower() for w in word_tokenize(text) if any(c.isalpha() for c in w)]


def stopword_share(text: str, stopwords: frozenset[str]) -> float:
    """Share of ``text``'s word tokens on the stopword list (NaN for a text without words)."""
    words = word_tokens(text)
    if not words:
        return float("nan")
    return sum(w in stopwords for w in words) / len(words)


def mean_stopword_share(texts: Sequence[str], stopwords: frozenset[str]) -> float:
    """Mean :func:`stopword_share` over the texts that have words (NaN if none has)."""
    shares = np.array([stopword_share(t, stopwords) for t in texts], dtype=np.float64)
    shares = shares[~np.isnan(shares)]
    return float(shares.mean()) if len(shares) else float("nan")


@dataclass(frozen=True)
class PeriodAnchors:
    """The two reference CMs of one scored period (per-text scores) and the real stopword share."""

    period: str
    previous: str               # the previous period's label
    sampler_cm: np.ndarray      # CM of each content-word sample
    previous_cm: np.ndarray     # CM of each previous-period abstract
    real_stopword_share: float  # mean over the period's gold abstracts
    n_gold: int

    @property
    def n(self) -> int:
        return len(self.sampler_cm)


def period_anchors(period: str, previous: str, gold: Sequence[str], previous_texts: Sequence[str],
                   sampler: ContentSampler, n: int, stopwords: frozenset[str],
                   seed: int = ANCHOR_SEED) -> PeriodAnchors:
    """Both anchors of ``period`` (``n`` texts each), scored by :func:`content_meteor` against
    ``gold`` (the period's abstracts, as the score stage reads them), in one gold index."""
    if n < 1:
        raise ValueError(f"n must be >= 1 (the models' generated abstracts per period), got {n}")
    samples = sampler.sample(n, period, seed)
    earlier = previous_period_sample(previous_texts, n, period, seed)
    scores = np.array([b.score for b in content_meteor(samples + earlier, gold, stopwords)])
    return PeriodAnchors(period=period, previous=previous, sampler_cm=scores[:len(samples)],
                         previous_cm=scores[len(samples):],
                         real_stopword_share=mean_stopword_share(gold, stopwords),
                         n_gold=len(gold))
