"""The backtest claims of one period Y.

**Family ``forecast-vocabulary``** (``scope`` = Y): every forecaster that is not a stationary
baseline against **each** stationary baseline (the registry's stationary forecasters of the
report: persistence, the pooled past, mean reversion; each smoothed by a rule fitted on the
training periods only, :mod:`pipeline.forecast.fits`):
the relative change of unigram PPL on Y's documents, tested by
:func:`pipeline.stats.comparisons.compare_rates` (documents paired; a trained forecaster's runs
add their spread, Welch's t). A forecaster has *temporal skill* only where it is ``better`` than
every one of them: which stationary baseline is best differs from period to period, so no single
reference chosen in advance can stand for "the best stationary forecast".

**Family ``forecast-trend``** (``scope`` = Y): does a forecaster's predicted change order the words
as they moved? Three choices keep its null honest:

* the prediction reads **half A** of Y−1 only (:mod:`pipeline.corpus.halves`) and the observed
  change is measured between **half B** and Y, so predictor and observation share no document;
* the **trend tokens** are the content tokens seen ≥ ``min_count`` times in half A — chosen on
  the predictor's side, not on the observed counts (selecting on observed counts with add-one
  smoothing left a null mean ρ of +0.02..+0.03 that did not shrink with corpus size);
* the observed change of a word is its **standardised** change of document frequency from half B
  to Y, ``z_w = (p_Y − p_B) / s_w`` (two-proportion z, ``s_w`` from the pooled share): under no
  change every word's z has mean 0 and variance 1 whatever its frequency or burstiness.

The **predicted change** a claim ranks is each forecaster's change scaled to its sampling noise:
the change times ``√c_w``, ``c_w`` the word's count in half A (the log of a count of ``c`` has a
sampling sd of about ``1/√c``). Ranked raw, the largest predicted moves are those of the rarest
trend tokens, whose half-A log counts are the noisiest: they filled the top-k, and ten planted
word pairs trading 0.2 more of their uses each year among ~830 trend tokens at 1,200 documents a
period were found by either claim in 71 % of 200 simulations (the top-k claim alone 55 %);
ranked scaled, in 99 % (the top-k claim 98.5 %; ``reports/calibration.json``). The scale reads
half A only, so the null is untouched.

Each claim is a weighted sum of the z's, ``T = Σ_w a_w z_w``, with weights ``a`` fixed by the
prediction. ``T`` is a difference of two means over **documents** —
``x_d = Σ_w a_w 1[w ∈ d] / s_w`` averaged over Y's documents minus over half B's — so it is
tested over the documents, not the words: a period with a few more papers on one topic moves
hundreds of words at once, and a test with the word as the unit (a Spearman p over words) said
``better`` for forecasters of a corpus whose dates were permuted. The two periods are compared
**within topic clusters** of their documents (:mod:`pipeline.forecast.topics`;
post-stratification, :func:`post_stratified`): a cluster's difference of means counts with the
cluster's share of both periods' documents. A period's topic mix also moves by chance, and a
forecaster whose predictions have topic structure lines up with that move, or against it, by
luck. Within clusters the topic mix does not enter the claim, so its null is "no skill beyond the
topic mix": skill at predicting which topics rise, which one period cannot tell from luck, is not
credited (the pooled forecast-skill test over origins is where it can show). The clusters find
the topics only in part, which the calibration measures as a known limit
(:mod:`pipeline.forecast.topics`). Two claims per forecaster:

* **rank correlation**: ``a`` = the centred ranks of the scaled predicted change (unit norm), ``T``
  divided by the norm of the centred z's — the correlation of predicted ranks with the
  standardised change, over every trend token;
* **top-k movers**: ``a`` = +1/(2k) on the k words predicted to rise most and −1/(2k) on the k
  predicted to fall most (k = 1 % of the trend tokens, at least 10): half the difference of the
  mean z of the predicted risers and fallers. A field's vocabulary moves a few words at a time;
  a statistic over every word dilutes them, the extremes of a ranking do not.

The tests are conditional on the forecast and on the clusters (only the documents of Y and half B
within each cluster are resampled): under no change ``T`` has mean 0 and the test holds its level;
under a topic mix that drifts by chance it does so only as far as the clusters find the topics
(``reports/calibration.json``: corpora with no change, with planted trends, with drifting topics
and a topic-guessing forecaster, and the sample with its dates permuted). A trained forecaster
whose training (or early stopping) read Y−1 has seen half B: its trend claims are untested
(``seen``). A forecaster without a predicted change makes no trend claim; one whose half-A change
could not be computed makes an untested one (NaN p, ``note``). A forecaster of several runs or
fits (``changes``: a learned forecaster's fits) is judged by the mean of its runs' statistics,
``T̄ = Σ ā_w z_w`` (``ā`` the mean of the runs' weights), whose variance is the documents' (the
test above, of ``ā``) plus the runs' spread ``var_k(T_k) / K``, with Welch–Satterthwaite degrees
of freedom.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import sparse
from scipy.stats import rankdata

from pipeline.forecast import backtest as bt
from pipeline.forecast.documents import PeriodDocuments, document_nll
from pipeline.forecast.topics import topic_clusters
from pipeline.stats.fixed_point import fixed_sum
from pipeline.stats.comparisons import (Side, TestResult, compare_rates,
                                        rate_interval, t_result)
from pipeline.stats.ranks import top_k
from pipeline.stats.verdict import Claim, claim_of

REPORT = "forecast"
VOCABULARY, TREND = "forecast-vocabulary", "forecast-trend"
CHANCE = "chance (ρ = 0)"
NO_MOVE = "chance (0)"
TREND_TEST = ("t over the documents of Y and half B within topic clusters (post-stratified; a "
              "weighted sum of standardised changes; the forecast fixed)")
RUNS_TREND_TEST = ("t over the documents of Y and half B within topic clusters (post-stratified; "
                   "a weighted sum of standardised changes, averaged over the forecaster's runs) "
                   "plus the runs' spread")


@dataclass(frozen=True)
class Predictions:
    """What one forecaster predicted for period Y, all the claims read of it. ``log_ps``: one
    forecast ``[≥|V|]`` per trained run (one for a forecaster without training, ``runs = 0``).
    ``change``: the predicted change from half-A inputs (mean over runs), None for no trend
    claim, or — with ``trend_note`` — for an untested one."""

    name: str
    log_ps: tuple[np.ndarray, ...]
    change: np.ndarray | None = None
    runs: int = 0
    trend_note: str = ""
    changes: tuple[np.ndarray, ...] = ()     # per run (their mean is ``change``)


def vocabulary_claims(period: str, docs: PeriodDocuments, forecasters: Sequence[Predictions],
                      references: Sequence[str]
                      ) -> tuple[list[Claim], dict[str, dict[str, float]]]:
    """``forecast-vocabulary`` claims of every forecaster not in ``references`` against each of
    them (module doc), and each forecaster's unigram PPL with its 95 % interval
    (``{name: {ppl, ppl_lo, ppl_hi}}``)."""
    nll = document_nll(docs, np.stack([lp for f in forecasters for lp in f.log_ps]))
    sides, col = {}, 0
    for f in forecasters:
        sides[f.name] = Side(nll[:, col:col + len(f.log_ps)], trained=f.runs > 0)
        col += len(f.log_ps)
    rows = {name: dict(zip(("ppl", "ppl_lo", "ppl_hi"),
                           (math.exp(x) for x in rate_interval(side, docs.lengths))))
            for name, side in sides.items()}
    references = [r for r in references if r in sides]
    claims = [claim_of(compare_rates(sides[f.name], sides[ref], docs.lengths, (f.name, ref)),
                       report=REPORT, family=VOCABULARY, a=f.name, b=ref, metric="unigram PPL",
                       scale="relative", effect_unit="% PPL", scope=period)
              for f in forecasters if f.name not in references for ref in references]
    return claims, rows


def _incidence(docs: PeriodDocuments, ids: np.ndarray) -> sparse.csr_matrix:
    return (docs.matrix(ids) > 0).astype(np.float64)


def standardised_change(in_y: sparse.spmatrix, in_b: sparse.spmatrix
                        ) -> tuple[np.ndarray, np.ndarray]:
    """``(z, s)`` over the columns of the incidence matrices ``in_y`` (Y's documents × tokens,
    0/1) and ``in_b`` (half B's): each token's standardised change of document frequency from half
    B of Y−1 to Y (two-proportion z) and its standard error ``s`` from the pooled share (0 where
    the token is in no or every document: such a token has no z and gets none)."""
    df_y = np.asarray(in_y.sum(axis=0)).ravel()
    df_b = np.asarray(in_b.sum(axis=0)).ravel()
    n_y, n_b = float(in_y.shape[0]), float(in_b.shape[0])
    pooled = (df_y + df_b) / (n_y + n_b)
    s = np.sqrt(pooled * (1 - pooled) * (1 / n_y + 1 / n_b))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(s > 0, (df_y / n_y - df_b / n_b) / s, 0.0), s


@dataclass(frozen=True)
class Compared:
    """Y's documents against half B's over the trend tokens ``ids`` that have a standardised
    change: their incidence (``in_y``, ``in_b``: documents × tokens, 0/1), each token's ``z`` and
    standard error ``s`` (:func:`standardised_change`). Built once a period; every claim reads
    it."""

    ids: np.ndarray
    in_y: sparse.csr_matrix
    in_b: sparse.csr_matrix
    z: np.ndarray
    s: np.ndarray

    @classmethod
    def of(cls, docs: PeriodDocuments, half_b: PeriodDocuments, ids: np.ndarray) -> Compared:
        """Over ``ids``, less the tokens in no or every document of both sides (no z)."""
        in_y, in_b = _incidence(docs, ids), _incidence(half_b, ids)
        z, s = standardised_change(in_y, in_b)
        keep = s > 0
        if not keep.all():
            ids = ids[keep]
            in_y, in_b = _incidence(docs, ids), _incidence(half_b, ids)
        return cls(ids, in_y, in_b, z[keep], s[keep])

    def topic_clusters(self) -> tuple[np.ndarray, np.ndarray]:
        """Each document's topic cluster (:mod:`pipeline.forecast.topics`), clustered over both
        sides at once: ``(Y's, half B's)``."""
        both = topic_clusters(sparse.vstack([self.in_y, self.in_b]))
        return both[:self.in_y.shape[0]], both[self.in_y.shape[0]:]


def weighted_change(compared: Compared, weights: np.ndarray,
                    clusters: tuple[np.ndarray, np.ndarray]) -> TestResult:
    """The test of ``T = Σ_w weights_w z_w`` (module doc) over the per-document sums
    ``x_d = Σ_{w ∈ d} weights_w / s_w`` of Y's documents against half B's, within ``clusters``
    (each document's cluster in Y and in half B; all zeros: Welch's t) —
    :func:`post_stratified`."""
    per_word = weights / compared.s
    in_y = np.asarray(compared.in_y @ per_word).ravel()
    in_b = np.asarray(compared.in_b @ per_word).ravel()
    return post_stratified(in_y, in_b, *clusters)


def post_stratified(in_y: np.ndarray, in_b: np.ndarray, c_y: np.ndarray, c_b: np.ndarray
                    ) -> TestResult:
    """The post-stratified difference of the means of ``in_y`` and ``in_b``,
    ``Σ_c π_c (x̄_{Y,c} − x̄_{B,c})`` with ``π_c`` cluster c's share of both sides' documents
    (``c_y``, ``c_b``: each document's cluster), its variance
    ``Σ_c π_c² (s²_{Y,c}/n_{Y,c} + s²_{B,c}/n_{B,c})`` and Satterthwaite's degrees of freedom
    (with one cluster: Welch's t). A cluster with fewer than two documents on a side is left out
    and the shares of the others renormalised."""
    k = int(max(c_y.max(initial=0), c_b.max(initial=0))) + 1
    n_y, n_b = np.bincount(c_y, minlength=k), np.bincount(c_b, minlength=k)
    kept = (n_y >= 2) & (n_b >= 2)
    n = len(in_y) + len(in_b)
    if not kept.any():
        return TestResult(math.nan, (math.nan, math.nan), math.nan, math.nan, math.nan, n, (0, 0),
                          TREND_TEST, "documents", note="fewer than two documents on a side")
    share = np.where(kept, n_y + n_b, 0).astype(np.float64)
    share /= share.sum()
    effect, variance, df_terms = [], [], []
    for c in np.flatnonzero(kept):
        y, b = in_y[c_y == c], in_b[c_b == c]
        my, mb = float(fixed_sum(y)) / len(y), float(fixed_sum(b)) / len(b)
        vy = float(fixed_sum((y - my) ** 2)) / (len(y) - 1) / len(y)
        vb = float(fixed_sum((b - mb) ** 2)) / (len(b) - 1) / len(b)
        effect.append(share[c] * (my - mb))
        variance += [share[c] ** 2 * vy, share[c] ** 2 * vb]
        df_terms += [(share[c] ** 2 * vy) ** 2 / (len(y) - 1),
                     (share[c] ** 2 * vb) ** 2 / (len(b) - 1)]
    total = math.fsum(variance)
    df = total ** 2 / math.fsum(df_terms) if total > 0 else math.nan
    return t_result(math.fsum(effect), math.sqrt(total), df, n, (0, 0), TREND_TEST, "documents")


def rank_weights(predicted: np.ndarray) -> np.ndarray:
    """Centred mid-ranks of ``predicted`` scaled to unit norm (zeros where it is constant)."""
    r = rankdata(predicted) - (len(predicted) + 1) / 2
    norm = float(np.sqrt((r * r).sum()))
    return r / norm if norm > 0 else np.zeros(len(predicted))


def mover_weights(predicted: np.ndarray, k: int) -> np.ndarray:
    """+1/(2k) on the ``k`` largest predicted changes, −1/(2k) on the ``k`` smallest (ties by
    position)."""
    order = np.argsort(-np.asarray(predicted, dtype=np.float64), kind="stable")
    w = np.zeros(len(order))
    w[order[:k]], w[order[len(order) - k:]] = 1 / (2 * k), -1 / (2 * k)
    return w


def _scaled(result: TestResult, factor: float) -> TestResult:
    """A test result whose effect, interval and standard error are divided by ``factor``."""
    return replace(result, effect=result.effect / factor, se=result.se / factor,
                   ci=(result.ci[0] / factor, result.ci[1] / factor))


def trend_claims(period: str, docs: PeriodDocuments, half_a: PeriodDocuments,
                 half_b: PeriodDocuments, forecasters: Sequence[Predictions], content: np.ndarray,
                 min_count: int = bt.MIN_COUNT, seen: str = ""
                 ) -> tuple[list[Claim], dict[str, dict[str, float]]]:
    """``forecast-trend`` claims (module doc) and each ranking forecaster's point values
    (``{name: {rho, rho_lo, rho_hi, movers, k, n_trend}}``). ``seen``: why a trained
    forecaster's trend claims are untested here (its training read Y−1), or empty."""
    counts_a = half_a.counts()
    compared = Compared.of(docs, half_b, np.flatnonzero(
        bt.trend_tokens(counts_a, np.asarray(content)[:len(counts_a)], min_count)))
    z = compared.z
    n, k = len(compared.ids), top_k(len(compared.ids))
    noise_scale = np.sqrt(np.asarray(counts_a, dtype=np.float64)[compared.ids])  # module doc
    z_norm = float(np.sqrt(((z - z.mean()) ** 2).sum())) if n else 0.0
    clusters: tuple[np.ndarray, np.ndarray] | None = None     # clustered for the first test
    claims: list[Claim] = []
    rows: dict[str, dict[str, float]] = {}
    where = dict(report=REPORT, family=TREND, scope=period, better_when="higher")
    for f in forecasters:
        note = f.trend_note if f.change is None else (seen if f.runs > 0 else "")
        if f.change is None and not note:
            continue
        if note or n < 2 * k or z_norm == 0:
            claims.append(Claim(a=f.name, b=CHANCE, metric="rank correlation", effect=math.nan,
                                ci=(math.nan, math.nan), p=math.nan, test=TREND_TEST,
                                unit="documents", n=docs.n_documents + half_b.n_documents,
                                seeds=(f.runs, 0), note=note or f"{n} trend tokens: too few",
                                **where))                                 # type: ignore[arg-type]
            continue
        preds = [np.asarray(c, dtype=np.float64)[compared.ids] * noise_scale
                 for c in (f.changes if len(f.changes) > 1 else (f.change,))]
        clusters = clusters or compared.topic_clusters()
        rho = over_runs(compared, [rank_weights(p) for p in preds], clusters, z_norm)
        movers = over_runs(compared, [mover_weights(p, k) for p in preds], clusters)
        claims += [claim_of(_runs(rho, f.runs), a=f.name, b=CHANCE, metric="rank correlation",
                            **where),
                   claim_of(_runs(movers, f.runs), a=f.name, b=NO_MOVE,
                            metric=f"top-{k} movers", effect_unit="z", **where)]
        rows[f.name] = {"rho": rho.effect, "rho_lo": rho.ci[0], "rho_hi": rho.ci[1],
                        "movers": movers.effect, "k": k, "n_trend": n}
    return claims, rows


def over_runs(compared: Compared, weights: Sequence[np.ndarray],
              clusters: tuple[np.ndarray, np.ndarray], scale: float = 1.0) -> TestResult:
    """The test of ``T`` (divided by ``scale``) for one run's ``weights``, or for several runs'
    (module doc): their mean statistic, its documents' variance plus the runs' spread."""
    mean = _scaled(weighted_change(compared, np.mean(weights, axis=0), clusters), scale)
    if len(weights) == 1:
        return mean
    per_run = np.array([_scaled(weighted_change(compared, w, clusters), scale).effect
                        for w in weights])
    spread = float(per_run.var(ddof=1)) / len(weights)
    variance = mean.se ** 2 + spread
    if variance == 0:
        return replace(mean, test=RUNS_TREND_TEST)
    df = variance ** 2 / (mean.se ** 4 / mean.df + spread ** 2 / (len(weights) - 1))
    return t_result(mean.effect, math.sqrt(variance), df, mean.n, mean.runs, RUNS_TREND_TEST,
                    mean.unit)


def _runs(result: TestResult, runs: int) -> TestResult:
    """The result with the forecaster's runs (their spread is in the test where ``runs`` > 1)."""
    test = RUNS_TREND_TEST if result.test == RUNS_TREND_TEST else TREND_TEST
    return replace(result, runs=(runs, 0), test=test, unit="documents")
