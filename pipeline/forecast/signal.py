"""The signal: how much lower the test period's unigram perplexity is under recent counts.

Before a model's temporal gain is judged, the yardstick: the abstracts of the test period ``Y``
(each abstract's LM tokens and its closing EOS, as the frequencies stage counts them:
:class:`pipeline.forecast.documents.PeriodDocuments`) are scored under add-one smoothed unigram
distributions over the LM vocabulary, ``log p̂(w) = log((c_w + 1) / (N + |V|))``
(:func:`pipeline.features.frequencies.log_frequencies`), from these counts ``c``:

* ``pooled``: the training periods' counts summed (the level a Baseline trained on them learns);
* ``past``: every period before ``Y`` summed (the training periods up to ``Y−1``, so the dev
  period too): the pool the permuted check draws from;
* ``recent-1``: period ``Y−1``'s counts (persistence);
* ``recent-2``: ``Y−2`` and ``Y−1`` summed (a history window of two periods);
* ``oracle``: the same period split in halves (:func:`pipeline.corpus.halves.in_half_a`), each
  half's documents scored with the other half's counts — what knowing ``Y``'s own distribution
  from as many documents as half of ``Y`` gives;
* ``recent-2 (dates permuted)``: a falsification check. The documents of every period before
  ``Y`` (the training periods up to ``Y−1``) get their period labels permuted (each period keeps
  its number of documents), then the counts of the permuted ``Y−2`` and ``Y−1``: a random sample
  of the past as large as ``recent-2``'s, drawn :data:`PERMUTATIONS` times (generator seeds
  ``(seed, k)``; untested with only two periods before ``Y``: every permutation then gives the
  whole past). Without time in the labels it must show no gain over ``past``, the pool it is
  drawn from, beyond sampling noise (a smaller sample of the same law is worse on average: its
  counts are noisier). Not over ``pooled``: where ``Y−1`` is the dev period, the pool holds it
  and ``pooled`` does not, and the share of ``Y−1`` in the sample is real recency (on the whole
  export, test 2021, the permuted sample is 1.8 % better than ``pooled``).

Per distribution ``d``, each abstract's NLL sum ``−Σ_t log p̂_d(w_t)``, and the perplexity
``PPL_d = exp(Σ_docs NLL / Σ_docs tokens)``. The share of the oracle's gain a distribution takes
is ``(log PPL_pooled − log PPL_d) / (log PPL_pooled − log PPL_oracle)``.

**Scopes.** ``<Y>/whole``: every counted token; ``<Y>/first-<n>``: each abstract cut to its first
``n`` counted tokens, ``n = max_length − 1`` — the tokens a model with a context of
``max_length`` predicts (its first position holds the leading EOS), so the yardstick is read on
what the models are scored on. The counts are always whole abstracts' (as the frequency features
are); only the scored tokens are cut.

**Claims** (family ``signal``, report ``signal``, metric unigram PPL, relative change in %):
``recent-1``, ``recent-2`` and ``oracle`` each against ``pooled``, ``recent-2`` against
``oracle``, and the permuted check against ``past``; the paired t over the test period's
abstracts (:func:`pipeline.stats.comparisons.compare_rates`: the unit is the abstract, not the
token; where the corpus names each abstract's venue, the venue: a year's topics sit in its
volumes), no trained side (seeds ``(0, 0)``); Holm within each scope. The permuted check is the
exception: one permutation is one draw, whose own deviation from the pool a test over the test
abstracts alone takes for signal (on the whole export one draw was "better" than ``past`` by
0.06 %, p < 1e-7). Its draws are its runs (seeds ``(PERMUTATIONS, 0)``): the Welch t over
them, the abstracts' variance added, so the draw-to-draw spread is in the test.
"""

from __future__ import annotations

from collections.abc import Sequence
import math
from dataclasses import dataclass, field, replace

import numpy as np

from pipeline.corpus.halves import in_half_a
from pipeline.features.frequencies import log_frequencies
from pipeline.forecast.documents import PeriodDocuments, document_nll
from pipeline.stats.comparisons import Side, compare_rates
from pipeline.stats.verdict import Claim, claim_of

REPORT = FAMILY = "signal"
METRIC = "unigram PPL"
POOLED, PAST, RECENT_1, RECENT_2 = "pooled", "past", "recent-1", "recent-2"
ORACLE, PERMUTED = "oracle", "recent-2 (dates permuted)"
DISTRIBUTIONS = (POOLED, PAST, RECENT_1, RECENT_2, ORACLE, PERMUTED)
COMPARISONS = ((RECENT_1, POOLED), (RECENT_2, POOLED), (ORACLE, POOLED), (RECENT_2, ORACLE),
               (PERMUTED, PAST))
# recent-2's window; the permuted check needs more past periods than it to be a sample
WINDOW = 2
# the permuted check's draws: its runs, whose spread its test reads (module doc)
PERMUTATIONS = 10


def joined(docs: Sequence[PeriodDocuments], label: str) -> PeriodDocuments:
    """The documents of ``docs`` (one vocabulary) as one collection, in order."""
    sizes = {d.vocab_size for d in docs}
    if len(sizes) != 1:
        raise ValueError(f"documents of several vocabularies ({sorted(sizes)}) cannot be joined")
    return PeriodDocuments(label, tuple(k for d in docs for k in d.keys),
                           np.concatenate([d.flat for d in docs]),
                           np.concatenate([d.lengths for d in docs]), sizes.pop())


def permuted_periods(past: Sequence[PeriodDocuments], seed: int | Sequence[int]
                     ) -> list[PeriodDocuments]:
    """``past``'s documents with their period labels permuted (``numpy`` generator ``seed``):
    the ``i``-th result holds as many documents as ``past[i]``, drawn without replacement from
    all of them, and keeps ``past[i]``'s label."""
    pool = joined(past, "past")
    labels = np.repeat(np.arange(len(past)), [d.n_documents for d in past])
    shuffled = np.random.default_rng(seed).permutation(labels)
    return [pool.subset(shuffled == i, d.period) for i, d in enumerate(past)]


def cut(docs: PeriodDocuments, n_tokens: int) -> PeriodDocuments:
    """Each document of ``docs`` cut to its first ``n_tokens`` counted tokens."""
    if n_tokens < 1:
        raise ValueError(f"a cut keeps at least one token per document, got {n_tokens}")
    starts = np.concatenate([[0], np.cumsum(docs.lengths)[:-1]]).astype(np.int64)
    position = np.arange(len(docs.flat)) - np.repeat(starts, docs.lengths)
    return PeriodDocuments(docs.period, docs.keys, docs.flat[position < n_tokens],
                           np.minimum(docs.lengths, n_tokens), docs.vocab_size)


@dataclass(frozen=True)
class Scope:
    """One scope's scores: ``nll[d]`` float64 ``[documents]`` per distribution (``[documents,
    draws]`` for the permuted check), ``lengths`` int64 ``[documents]`` the scored tokens of
    each abstract (module doc)."""

    name: str
    nll: dict[str, np.ndarray]
    lengths: np.ndarray
    untested: dict[str, str] = field(default_factory=dict)
    groups: np.ndarray | None = None     # each abstract's group (venue); None: independent

    @property
    def n_tokens(self) -> int:
        return int(self.lengths.sum())

    def log_ppl(self, name: str) -> float:
        """The mean over draws (one for all but the permuted check) of ``log PPL``."""
        nll = self.nll[name].reshape(len(self.lengths), -1)
        return float(nll.sum(axis=0).mean() / self.n_tokens)

    def ppl(self, name: str) -> float:
        return float(np.exp(self.log_ppl(name)))

    def share(self, name: str) -> float:
        """``(log PPL_pooled − log PPL_d) / (log PPL_pooled − log PPL_oracle)``; NaN when the
        oracle is no better or worse than ``pooled``."""
        gap = self.log_ppl(POOLED) - self.log_ppl(ORACLE)
        return float("nan") if gap == 0 else (self.log_ppl(POOLED) - self.log_ppl(name)) / gap

    def claims(self) -> list[Claim]:
        """The family's comparisons (:data:`COMPARISONS`) on this scope's abstracts; those of a
        distribution in ``untested`` untested, with its note."""
        claims = []
        for a, b in COMPARISONS:
            result = compare_rates(Side(self.nll[a], trained=a == PERMUTED),
                                   Side(self.nll[b], trained=False), self.lengths, (a, b),
                                   groups=self.groups)
            if a in self.untested:
                result = replace(result, p=math.nan, ci=(math.nan, math.nan),
                                 note=self.untested[a])
            claims.append(claim_of(result, report=REPORT, family=FAMILY, a=a, b=b, metric=METRIC,
                                   scale="relative", effect_unit="% PPL", scope=self.name))
        return claims


@dataclass(frozen=True)
class Signal:
    """The counts of every distribution but the oracle (``counts``: ``[|V|]``, ``[draws, |V|]``
    for the permuted check), the test period (the oracle's halves are its own) and the periods
    each distribution was made of."""

    test: PeriodDocuments
    counts: dict[str, np.ndarray]
    periods: dict[str, tuple[str, ...]]
    seed: int
    untested: dict[str, str] = field(default_factory=dict)

    def score(self, max_tokens: int | None = None,
              groups: np.ndarray | None = None) -> Scope:
        """Every distribution's per-abstract NLL on the test period, each abstract cut to its
        first ``max_tokens`` tokens when given (the counts stay whole abstracts'); ``groups``:
        each test abstract's group, whose abstracts the claims resample together."""
        docs = self.test if max_tokens is None else cut(self.test, max_tokens)
        nll = {name: document_nll(docs, np.stack([log_frequencies(r) for r in np.atleast_2d(c)]))
               for name, c in self.counts.items()}
        nll = {name: v if name == PERMUTED else v[:, 0] for name, v in nll.items()}
        half_a = in_half_a(self.test.keys)
        oracle = np.zeros(docs.n_documents)
        for mine, other in ((half_a, ~half_a), (~half_a, half_a)):
            counts = self.test.subset(other, "other half").counts()
            oracle[mine] = document_nll(docs.subset(mine, "half"), log_frequencies(counts))[:, 0]
        nll[ORACLE] = oracle
        scope = "whole" if max_tokens is None else f"first-{max_tokens}"
        return Scope(f"{self.test.period}/{scope}", {d: nll[d] for d in DISTRIBUTIONS},
                     docs.lengths, self.untested, groups)


def signal(past: Sequence[PeriodDocuments], n_train: int, test: PeriodDocuments,
           seed: int) -> Signal:
    """The distributions of the module doc. ``past``: the documents of every period before
    ``test``'s, oldest first, the last one ``Y−1``; its first ``n_train`` are the training
    periods; ``seed``: the permutations' (module doc)."""
    if len(past) < WINDOW:
        raise ValueError(f"{len(past)} periods before {test.period}: recent-{WINDOW} needs "
                         f"{WINDOW}")
    if not 1 <= n_train <= len(past):
        raise ValueError(f"{n_train} training periods of {len(past)} past ones")
    if any(d.vocab_size != test.vocab_size for d in past):
        raise ValueError("the past and the test period were tokenized with other vocabularies")
    recent = list(past[-WINDOW:])
    counts = {POOLED: np.sum([d.counts() for d in past[:n_train]], axis=0),
              PAST: np.sum([d.counts() for d in past], axis=0),
              RECENT_1: past[-1].counts(),
              RECENT_2: np.sum([d.counts() for d in recent], axis=0),
              PERMUTED: np.stack([np.sum([d.counts() for d in
                                          permuted_periods(past, (seed, k))[-WINDOW:]], axis=0)
                                  for k in range(PERMUTATIONS)])}
    labels = [d.period for d in past]
    periods = {POOLED: tuple(labels[:n_train]), PAST: tuple(labels), RECENT_1: (labels[-1],),
               RECENT_2: tuple(labels[-WINDOW:]), ORACLE: (test.period,),
               PERMUTED: tuple(labels)}
    untested = {} if len(past) > WINDOW else {PERMUTED: (
        f"{len(past)} periods before {test.period}: every permutation leaves recent-{WINDOW} all "
        f"of the past; the check needs more than {WINDOW}")}
    return Signal(test, counts, periods, seed, untested)
