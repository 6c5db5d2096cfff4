"""Content METEOR (CM, §4.6): nltk-exact METEOR, and its max over a period's gold abstracts, fast.

CM scores a generated abstract by its best METEOR against *any* gold abstract of the target period.
The brute force calls nltk's ``single_meteor_score`` once per (generated, gold) pair; each call
re-stems every word and re-reads WordNet, ~0.5-3 ms, times ~6,000 gold abstracts per period.

This module computes the same numbers, bit for bit, much faster:

1. **Exact re-implementation** (:func:`single_meteor`, :meth:`Lexicon.align`). nltk 3.10.4's
   alignment is greedy, in three stages, each over the words the previous one left unmatched:
   exact (lowercased) words, then Porter stems, then WordNet synonyms *of the stem* (nltk passes
   the stemmed leftovers on, so its synonym stage compares stems with synonym lemma names). In each
   stage the hypothesis is walked from its last word to its first, and a word takes the *highest*
   still-free reference position that matches. We replay exactly that on interned integer ids,
   with the stem and synonym set of every distinct word computed once (:class:`Lexicon`).
2. **Exact pruning** (:class:`GoldIndex`). Every match pairs a hypothesis word with stem ``s``
   with a reference word whose stem lies in ``Syn(s)`` (WordNet lemmas of ``s`` plus ``s``), and
   the alignment is one-to-one. So the match count ``m`` is at most
   ``sum_s min(h_s, #ref words with stem in Syn(s))`` and, symmetrically,
   ``sum_t min(r_t, #hyp words whose Syn contains t)`` — both computed for all gold abstracts at
   once with sparse matrix products. METEOR with ``m`` matches is at most
   ``m / (alpha*|ref| + (1-alpha)*|hyp|) * (1 - gamma / m**beta)`` (one chunk), increasing in ``m``.
   Gold abstracts are then scored exactly in decreasing-bound order until the bound falls below
   the best score found: the maximum (and its first arg-max) equal the brute force's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from pipeline.infra.wordnet import lemma_names

ALPHA = 0.9   # precision/recall weight (nltk default)
BETA = 3.0    # fragmentation penalty shape
GAMMA = 0.5   # fragmentation penalty weight
# Bounds are computed with a different (mathematically equal) float expression than the score;
# inflating them by this relative margin keeps the pruning exact despite rounding.
_BOUND_SLACK = 1e-9

Encoded = tuple[list[int], list[int]]   # (word ids, stem ids) of a sentence, see Lexicon.encode


class Lexicon:
    """Interned words and stems with cached Porter stems and WordNet synonym sets.

    Everything nltk recomputes per call is computed here once per distinct word: the stem of a
    lowercased word, and for a stem the ids of its synonym lemma names (single-word lemmas only,
    as nltk filters ``_``) plus the stem itself. Lemma names are interned into the stem table, so
    a synonym set stays complete whatever words are interned later.
    """

    def __init__(self, stem: Callable[[str], str] | None = None,
                 synonyms: Callable[[str], Sequence[str]] | None = None) -> None:
        if stem is None:
            from nltk.stem.porter import PorterStemmer
            stem = PorterStemmer().stem
        if synonyms is None:
            synonyms = lemma_names   # nltk's WordNet synsets, loaded faster
        self._stem_fn = stem
        self._syn_fn = synonyms
        self.word_ids: dict[str, int] = {}
        self.word_stem: list[int] = []          # word id -> stem id
        self.stem_ids: dict[str, int] = {}
        self.stem_names: list[str] = []
        self._syn_cache: dict[int, frozenset[int]] = {}

    def _stem_id(self, stem: str) -> int:
        sid = self.stem_ids.get(stem)
        if sid is None:
            sid = self.stem_ids[stem] = len(self.stem_names)
            self.stem_names.append(stem)
        return sid

    def encode(self, tokens: Sequence[str]) -> Encoded:
        """Word ids and stem ids of ``tokens`` (lowercased first, as nltk's default preprocess)."""
        words, stems = [], []
        for token in tokens:
            token = token.lower()
            wid = self.word_ids.get(token)
            if wid is None:
                wid = self.word_ids[token] = len(self.word_stem)
                self.word_stem.append(self._stem_id(self._stem_fn(token)))
            words.append(wid)
            stems.append(self.word_stem[wid])
        return words, stems

    def synonyms(self, stem_id: int) -> frozenset[int]:
        """Stem ids nltk's WordNet stage accepts for a hypothesis stem: its lemma names + itself."""
        syn = self._syn_cache.get(stem_id)
        if syn is None:
            stem = self.stem_names[stem_id]
            syn = frozenset([self._stem_id(n) for n in self._syn_fn(stem) if "_" not in n]
                            + [stem_id])
            self._syn_cache[stem_id] = syn
        return syn

    def align(self, hyp: Encoded, ref: Encoded) -> list[tuple[int, int]]:
        """nltk's ``_enum_align_words``: exact, then stem, then synonym matches, sorted by hyp index."""
        h_words, h_stems = hyp
        r_words, r_stems = ref
        matches: list[tuple[int, int]] = []
        h_left = range(len(h_words))
        r_left: Sequence[int] = range(len(r_words))
        for keys_h, keys_r in ((h_words, r_words), (h_stems, r_stems)):
            positions: dict[int, list[int]] = defaultdict(list)
            for j in r_left:                       # ascending: pop() gives the highest free one
                positions[keys_r[j]].append(j)
            unmatched = []
            taken = set()
            for i in reversed(h_left):
                free = positions.get(keys_h[i])
                if free:
                    j = free.pop()
                    taken.add(j)
                    matches.append((i, j))
                else:
                    unmatched.append(i)
            h_left = unmatched[::-1]
            r_left = [j for j in r_left if j not in taken]
        # WordNet stage: the highest free reference position among all synonyms of the hyp stem.
        positions = defaultdict(list)
        for j in r_left:
            positions[r_stems[j]].append(j)
        for i in reversed(h_left):
            best_j, best_key = -1, -1
            for key in self.synonyms(h_stems[i]):
                free = positions.get(key)
                if free and free[-1] > best_j:
                    best_j, best_key = free[-1], key
            if best_j >= 0:
                positions[best_key].pop()
                matches.append((i, best_j))
        matches.sort()
        return matches

    def score(self, hyp: Encoded, ref: Encoded) -> float:
        """nltk's ``single_meteor_score`` on encoded sentences (same float operations, same value)."""
        return meteor_from_alignment(self.align(hyp, ref), len(hyp[0]), len(ref[0]))


def count_chunks(matches: Sequence[tuple[int, int]]) -> int:
    """Fewest runs of matches adjacent on both sides (nltk ``_count_chunks``; matches sorted)."""
    chunks = 1
    for (i0, j0), (i1, j1) in zip(matches, matches[1:]):
        if not (i1 == i0 + 1 and j1 == j0 + 1):
            chunks += 1
    return chunks


def meteor_from_alignment(matches: Sequence[tuple[int, int]], hyp_len: int, ref_len: int,
                          alpha: float = ALPHA, beta: float = BETA, gamma: float = GAMMA) -> float:
    """METEOR (Lavie & Agarwal 2007) from an alignment, with nltk's exact float expression.

    F_mean = P*R / (alpha*P + (1-alpha)*R); penalty = gamma * (chunks/m)**beta;
    score = (1 - penalty) * F_mean; 0 when there is no match or an empty side (as nltk).
    """
    m = len(matches)
    if m == 0 or hyp_len == 0 or ref_len == 0:
        return 0.0
    precision = float(m) / hyp_len
    recall = float(m) / ref_len
    fmean = (precision * recall) / (alpha * precision + (1 - alpha) * recall)
    frag_frac = float(count_chunks(matches)) / m
    penalty = gamma * frag_frac ** beta
    return (1 - penalty) * fmean


def single_meteor(reference: Sequence[str], hypothesis: Sequence[str],
                  lexicon: Lexicon | None = None) -> float:
    """Drop-in equal of ``nltk.translate.meteor_score.single_meteor_score(reference, hypothesis)``."""
    if isinstance(reference, str) or isinstance(hypothesis, str):
        raise TypeError("single_meteor expects pre-tokenized sentences (lists of str), not str")
    lexicon = lexicon or Lexicon()
    return lexicon.score(lexicon.encode(hypothesis), lexicon.encode(reference))


@dataclass(frozen=True)
class BestMatch:
    """The max METEOR of one hypothesis over the gold set, its first arg-max, and the work done."""
    score: float
    index: int          # position of the best gold abstract (-1 if every score is 0)
    n_exact: int        # gold abstracts scored exactly (the rest were pruned by the bound)


class GoldIndex:
    """The gold abstracts of one period, encoded once, for repeated max-METEOR queries."""

    def __init__(self, references: Sequence[Sequence[str]], lexicon: Lexicon | None = None) -> None:
        if len(references) == 0:
            raise ValueError("no gold abstracts: content METEOR needs at least one gold abstract "
                             "of the target period (check the split for that period)")
        self.lexicon = lexicon or Lexicon()
        self.refs = [self.lexicon.encode(r) for r in references]
        self.ref_len = np.array([len(w) for w, _ in self.refs], dtype=np.float64)
        rows = np.repeat(np.arange(len(self.refs)), self.ref_len.astype(np.int64))
        cols = np.fromiter((s for _, stems in self.refs for s in stems), dtype=np.int64,
                           count=len(rows))
        self.n_stems = len(self.lexicon.stem_names)
        # [gold x stem] stem counts (duplicates summed by the COO -> CSR conversion).
        self.counts = sp.csr_matrix((np.ones(len(rows)), (rows, cols)),
                                    shape=(len(self.refs), self.n_stems))
        self.counts.sum_duplicates()

    def __len__(self) -> int:
        return len(self.refs)

    def upper_bounds(self, hyp: Encoded) -> np.ndarray:
        """An upper bound on METEOR(hyp, gold_r) for every gold abstract r (see module doc)."""
        stems = np.asarray(hyp[1], dtype=np.int64)
        hyp_len = len(stems)
        if hyp_len == 0:
            return np.zeros(len(self.refs))
        uniq, h_count = np.unique(stems, return_counts=True)
        syn_rows, syn_cols = [], []
        for u, stem in enumerate(uniq):
            ids = [s for s in self.lexicon.synonyms(int(stem)) if s < self.n_stems]
            syn_rows.extend([u] * len(ids))
            syn_cols.extend(ids)
        syn = sp.csr_matrix((np.ones(len(syn_rows)), (syn_rows, syn_cols)),
                            shape=(len(uniq), self.n_stems))
        # Hyp side: words of stem s can only match gold words whose stem is in Syn(s).
        reachable = (syn @ self.counts.T).toarray()                    # [uniq, gold]
        hyp_side = np.minimum(reachable, h_count[:, None]).sum(axis=0)
        # Gold side: a gold word of stem t can only match hyp words whose Syn contains t.
        demand = np.asarray(syn.T @ h_count.astype(np.float64)).ravel()  # [stem]
        capped = self.counts.copy()
        capped.data = np.minimum(capped.data, demand[capped.indices])
        gold_side = np.asarray(capped.sum(axis=1)).ravel()
        m = np.minimum(np.minimum(hyp_side, gold_side), np.minimum(self.ref_len, hyp_len))
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = m / (ALPHA * self.ref_len + (1 - ALPHA) * hyp_len) * (1 - GAMMA / m ** BETA)
        return np.where(m > 0, bound * (1 + _BOUND_SLACK) + _BOUND_SLACK, 0.0)

    def best(self, hypothesis: Sequence[str]) -> BestMatch:
        """max_r METEOR(hypothesis, gold_r), equal to the brute force over all gold abstracts."""
        hyp = self.lexicon.encode(hypothesis)
        bounds = self.upper_bounds(hyp)
        order = np.argsort(-bounds, kind="stable")
        best, best_index, n_exact = 0.0, -1, 0
        for r in order:
            if bounds[r] < best or bounds[r] == 0.0:
                break                      # sorted: no later gold abstract can reach `best`
            n_exact += 1
            score = self.lexicon.score(hyp, self.refs[r])
            # Ties go to the lower index, as Python's max() over the gold list in order would.
            if score > best or (score == best and score > 0 and r < best_index):
                best, best_index = score, int(r)
        return BestMatch(score=best, index=best_index, n_exact=n_exact)


def content_meteor(generated: Sequence[str], gold: Sequence[str], stopwords: frozenset[str],
                   gold_words: Sequence[Sequence[str]] | None = None) -> list[BestMatch]:
    """CM (§4.6) of each generated abstract: max METEOR over the gold abstracts of the target
    period, both sides reduced to content words (:func:`pipeline.evaluation.content.content_words`).
    ``gold_words``: the gold abstracts' content words, already computed (the ``gold_words``
    stage; one list per gold abstract, in order), instead of computing them here.

    The reported CM is the mean of the returned scores. An empty generated text is an error (it
    would silently score 0); a text without content words scores 0, as in nltk.
    """
    from pipeline.evaluation.content import content_words
    empty = [i for i, text in enumerate(generated) if not text.strip()]
    if empty:
        raise ValueError(f"generated abstracts {empty[:5]} are empty: content METEOR needs text "
                         "(check the generation step)")
    if len(gold) == 0:
        raise ValueError("no gold abstracts for the target period: content METEOR compares each "
                         "generated abstract with that period's abstracts (check the dev/test split)")
    if gold_words is None:
        gold_words = [content_words(text, stopwords) for text in gold]
    elif len(gold_words) != len(gold):
        raise ValueError(f"{len(gold_words)} lists of gold content words for {len(gold)} gold "
                         "abstracts")
    index = GoldIndex([list(words) for words in gold_words])
    return [index.best(content_words(text, stopwords)) for text in generated]
