"""The engine's tests of "A scores better than B": analytic, valid at three runs a side.

Two shapes of data reach a verdict:

* **paired documents** (:func:`compare_rates`): both sides score the same abstracts, and a side's
  value is a rate — Σ NLL / Σ tokens over the abstracts (log PPL). A side is one forecast (a
  forecaster without training: no run-to-run spread) or a set of trained runs (seeds), each
  scoring every abstract;
* **independent items** (:func:`compare_items`): each side is its own sample of items (CM of
  generated abstracts), one sample per trained run or one sample for a side without training.

**Why not the two-level bootstrap.** Drawing three runs with replacement gives a run-mean variance
of 2/3 of the unbiased one, and its percentile interval behaves like a normal reference where a
t with about four degrees of freedom belongs: two identical variants came out `better` or
`worse` in ~18 % of simulations at three runs a side. The test here is Welch's: the effect's
variance is the sum of

* the **run** part, ``s_A²/r_A + s_B²/r_B`` from the per-run values (unbiased sample variances;
  with ``r`` runs each term has ``r − 1`` degrees of freedom), and
* the **document** part, the variance of the difference of run means under resampling of
  abstracts: the ratio estimator's linearisation, ``n/(n−1) Σ_j u_j² / T²`` with
  ``u_j = Δnll_j − Δ·tokens_j`` (the delta method of a cluster sample: abstracts, not tokens,
  are the unit); where the corpus names each abstract's venue, the venues are the unit instead
  (the cluster-robust variance of :mod:`pipeline.stats.clusters`, with Bell and McCaffrey's
  degrees of freedom);

and the reference is Student's t with the Welch–Satterthwaite degrees of freedom of that sum.
With one run a side there is no run part and the test is the paired cluster test on documents
(``n − 1`` degrees of freedom).

**Each variance once.** Runs and abstracts are crossed: every run scores every abstract, so a
trained side's values hold an abstract part, a run part and a run × abstract interaction
``σ²_int``. The document part (abstracts' run-averaged contributions) carries ``σ²_int/(n r)``,
and so does the run part (each run's rate averages its own interaction over ``n`` abstracts). The
two-way decomposition of the linearised contributions ``w_jk = nll_jk − rate·tokens_j`` gives
the interaction's mean square ``MS_int = Σ e²/((n−1)(r−1))`` (``e`` the residual after abstract
and run means), and its share of the mean's variance is subtracted once (:func:`_interaction`):
the variance of a crossed design's mean, ``(MS_doc + MS_run − MS_int)/(n r)``, unbiased under
random abstracts and runs. The negative term enters Satterthwaite's degrees of freedom with its
own ``(n−1)(r−1)``, and a run part enters them inflated to its value at the 30 % quantile of its
χ² law (:func:`_once`: a run part that comes out small by chance must not raise the degrees of
freedom). Where the subtraction would take the sum below its larger part (the smaller part
estimated at zero), the larger part alone is the variance, with the degrees of freedom of the
three estimates.

**Paired by seed.** When both sides were trained and name their runs' seeds, the runs of one
seed share its initialisation, its batch order and, under shared-base training, the seed's whole
Baseline: most of the run-to-run spread is the seed's, common to both sides (on the full export
the Baselines of five seeds span 169-202 test PPL while a variant and its control differ by
< 0.2 % within each seed). The run part is then that of the per-seed differences,
``s_d²/r`` with ``d_s = log PPL(A_s) − log PPL(B_s)`` over the ``r`` seeds both sides ran
(``r − 1`` degrees of freedom; runs of a seed only one side ran are left out of the test), plus
the same document part. The rule is fixed by the design (both sides trained, at least
:data:`MIN_RUNS` shared seeds), never by which test gives the smaller p; with uncorrelated runs
the paired test stays exact and only loses degrees of freedom. p-values and intervals are closed-form: there is no replicate
floor, so Holm works in a family of any size, and the result is the same bytes on every CPU
(sums of fixed-point integers, :mod:`pipeline.stats.fixed_point`). The false-positive
rate, coverage and power of both tests are measured by simulation in
:mod:`pipeline.stats.calibration` (``reports/calibration.json``).

A trained side needs at least :data:`MIN_RUNS` runs; with fewer the result is untested (NaN
p-value and a ``note``): its run-to-run spread is unknown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from pipeline.stats.clusters import document_variance
from pipeline.stats.fixed_point import fixed_sum

MIN_RUNS = 3
LEVEL = 0.95
# The χ² quantile a run part is inflated to for Satterthwaite's weights (:func:`_once`).
RUN_DF_QUANTILE = 0.3
RATE_TEST = "Welch t over runs, document variance added (abstracts paired)"
PAIRED_RATE_TEST = "paired t over seeds, document variance added (abstracts paired)"
DOCUMENT_TEST = "paired t over documents (cluster delta method)"
ITEM_TEST = "Welch t over per-run means of independent items"


@dataclass(frozen=True)
class Side:
    """One side of a comparison: ``values [n, r]`` (per-document NLL sums of ``r`` runs, or per
    item scores as one array per run), whether it was trained (its runs vary) and the seed of
    each run (empty: unknown; rate comparisons of two trained sides pair runs of one seed)."""

    values: np.ndarray | Sequence[np.ndarray]
    trained: bool
    seeds: tuple[int, ...] = ()


@dataclass(frozen=True)
class TestResult:
    """``effect`` (A − B on the test's native scale: log PPL for rates, the item mean for items),
    its ``ci`` at :data:`LEVEL`, two-sided ``p``, standard error ``se``, degrees of freedom
    ``df`` of the t reference, ``n`` resampled units, ``runs`` per side (0: no training),
    the ``test`` and its ``unit``; ``note`` says why a NaN p is untested."""

    effect: float
    ci: tuple[float, float]
    p: float
    se: float
    df: float
    n: int
    runs: tuple[int, int]
    test: str
    unit: str
    note: str = ""


def t_result(effect: float, se: float, df: float, n: int, runs: tuple[int, int], test: str,
             unit: str, level: float = LEVEL) -> TestResult:
    """A t test of ``effect = 0`` with standard error ``se`` and ``df`` degrees of freedom (a
    zero or undefined ``se`` is untested: nothing varies to test against)."""
    if not (se > 0 and df > 0 and math.isfinite(se)):
        return TestResult(effect, (math.nan, math.nan), math.nan, se, df, n, runs, test, unit,
                          note="zero-width interval: nothing varies to test against")
    half = float(sps.t.ppf(0.5 + level / 2, df)) * se
    p = float(2 * sps.t.sf(abs(effect) / se, df))
    return TestResult(effect, (effect - half, effect + half), p, se, df, n, runs, test, unit)


def _untested(effect: float, n: int, runs: tuple[int, int], test: str, unit: str,
              note: str) -> TestResult:
    return TestResult(effect, (math.nan, math.nan), math.nan, math.nan, math.nan, n, runs, test,
                      unit, note=note)


def _short(names: tuple[str, str], sides: tuple[Side, Side], counts: tuple[int, int]) -> str:
    short = [name for name, s, r in zip(names, sides, counts) if s.trained and r < MIN_RUNS]
    return "" if not short else (f"{' and '.join(short)}: fewer than {MIN_RUNS} trained runs, so "
                                 "the run-to-run spread is unknown")


def _unit(groups: np.ndarray | None) -> str:
    """The unit a rate test resamples: abstracts, or their groups."""
    return "abstracts" if groups is None else "abstracts in venue clusters"


def _welch_df(terms: Sequence[tuple[float, float]]) -> float:
    """Welch–Satterthwaite degrees of freedom of a sum of variance terms ``(v, df)``."""
    total = sum(v for v, _ in terms)
    denom = sum(v * v / d for v, d in terms if v > 0 and d > 0)
    return math.inf if denom == 0 else total * total / denom


def _values(side: Side) -> np.ndarray:
    v = np.asarray(side.values, dtype=np.float64)
    v = v[:, None] if v.ndim == 1 else v
    if side.seeds and len(side.seeds) != v.shape[1]:
        raise ValueError(f"{v.shape[1]} runs of NLL but {len(side.seeds)} seeds")
    return v


def shared_seeds(a: Side, b: Side) -> tuple[int, ...]:
    """The seeds whose runs a rate comparison pairs (in A's order): those both sides ran when
    both were trained and name their seeds and there are at least :data:`MIN_RUNS` of them;
    empty otherwise (Welch's test)."""
    if not (a.trained and b.trained and a.seeds and b.seeds):
        return ()
    shared = tuple(s for s in a.seeds if s in set(b.seeds))
    return shared if len(shared) >= MIN_RUNS else ()


def compare_rates(a: Side, b: Side, tokens: np.ndarray, names: tuple[str, str] = ("A", "B"),
                  level: float = LEVEL, groups: np.ndarray | None = None) -> TestResult:
    """A vs B on the same abstracts: ``a.values``/``b.values`` ``[n, r]`` NLL sums per abstract
    and run, ``tokens [n]`` the abstracts' token counts. The effect is mean log PPL of A's runs
    minus B's; runs of the seeds both sides ran are paired (:func:`shared_seeds`; module doc).
    ``groups [n]``: each abstract's group (its venue), whose abstracts are resampled together
    (:mod:`pipeline.stats.clusters`); None: abstracts are independent."""
    tokens = np.asarray(tokens, dtype=np.float64)
    va, vb = _values(a), _values(b)
    n = len(tokens)
    if va.shape[0] != n or vb.shape[0] != n:
        raise ValueError(f"{va.shape[0]} and {vb.shape[0]} abstracts of NLL but {n} token counts")
    if n < 2 or tokens.sum() <= 0:
        raise ValueError(f"a rate comparison needs at least two abstracts with tokens, got {n}")
    paired = shared_seeds(a, b)
    if paired:
        va = va[:, [a.seeds.index(s) for s in paired]]
        vb = vb[:, [b.seeds.index(s) for s in paired]]
    ra, rb = va.shape[1], vb.shape[1]
    runs = (ra if a.trained else 0, rb if b.trained else 0)
    test = PAIRED_RATE_TEST if paired else RATE_TEST if a.trained or b.trained else DOCUMENT_TEST
    total = float(tokens.sum())
    per_run_a, per_run_b = fixed_sum(va) / total, fixed_sum(vb) / total    # log PPL per run
    effect = float(per_run_a.mean() - per_run_b.mean())
    why = _short(names, (a, b), (ra, rb))
    if why:
        return _untested(effect, n, runs, test, _unit(groups), why)
    u = va.mean(axis=1) - vb.mean(axis=1) - effect * tokens          # linearised contributions
    doc = document_variance(u, total, groups)
    run_terms, interaction = [], []
    if paired:
        run_terms.append((float((per_run_a - per_run_b).var(ddof=1)) / ra, ra - 1.0))
        interaction.append(_interaction(va - vb, effect, tokens))
    for side, values, per_run, r in ((a, va, per_run_a, ra), (b, vb, per_run_b, rb)):
        if side.trained and r > 1 and not paired:
            run_terms.append((float(per_run.var(ddof=1)) / r, r - 1.0))
            interaction.append(_interaction(values, float(per_run.mean()), tokens))
    variance, df = _once([doc], run_terms, interaction)
    return t_result(effect, math.sqrt(variance), df, n, runs, test, _unit(groups), level)


def _interaction(values: np.ndarray, rate: float, tokens: np.ndarray) -> tuple[float, float]:
    """The run × abstract interaction's share of a crossed side's mean (module doc), as a
    variance term to subtract: ``(MS_int / (n r) · n²/T², (n−1)(r−1))`` from ``values [n, r]``
    (NLL sums, or per-seed differences of them) whose rate is ``rate``."""
    n, r = values.shape
    total = float(tokens.sum())
    w = values - rate * tokens[:, None]
    by_run = fixed_sum(w) / n                                         # run (column) means
    e = w - w.mean(axis=1, keepdims=True) - by_run[None, :]
    ms_int = float(fixed_sum(e.ravel() * e.ravel())) / ((n - 1) * (r - 1))
    return ms_int * n / (r * total * total), (n - 1.0) * (r - 1.0)


def _once(doc: list[tuple[float, float]], runs: list[tuple[float, float]],
          interaction: list[tuple[float, float]]) -> tuple[float, float]:
    """``(variance, df)`` with the interaction counted once: document and run parts minus the
    interaction, at least the larger part (the other part's own share then estimated at zero).

    The degrees of freedom are Satterthwaite's over the three estimates, the subtracted one
    included, with the run parts inflated to ``v d / χ²_d(q)``, ``q`` = :data:`RUN_DF_QUANTILE`,
    for the weights (``d`` the fewest degrees of freedom among them, one factor for all, so that
    two run parts alone keep Welch's degrees of freedom). With the sample estimate itself, a run
    part that comes out small by chance (two degrees of freedom at three seeds) hands its weight to
    the precise document part and raises the degrees of freedom exactly when the variance is too
    small: coverage 0.924-0.936 where 0.95 is due, in 3,000 simulations of 3 seeds on 259
    abstracts. At the median (``q`` = 0.5) the false-positive rate was still 6.2 % in 6,000
    simulations of that design (a run part of 2 degrees of freedom beside a document part of
    3-30 % of the variance: 6.4-6.8 % in a direct simulation of the two parts); at ``q`` = 0.3 the
    same direct simulation gives 4.0-5.4 % at 2 and 4.6-5.1 % at 4 degrees of freedom for every
    document share from 0 to 90 % (``reports/calibration.json`` holds the engine's rows)."""
    terms = doc + runs + [(-v, d) for v, d in interaction]
    parts = (sum(v for v, _ in doc), sum(v for v, _ in runs))
    variance = max(sum(v for v, _ in terms), *parts)
    scale = max(d / _chi2_quantile(d) for _, d in runs) if runs else 1.0   # the fewest d's
    weighted = doc + [(v * scale, d) for v, d in runs] + [(-v, d) for v, d in interaction]
    total = max(sum(v for v, _ in weighted), sum(v for v, _ in doc),
                sum(v for v, _ in weighted[len(doc):len(doc) + len(runs)]))
    denom = sum(v * v / d for v, d in weighted if v != 0 and d > 0)
    return variance, (math.inf if denom == 0 else total * total / denom)


def _chi2_quantile(df: float) -> float:
    return float(sps.chi2.ppf(RUN_DF_QUANTILE, df))


def compare_items(a: Side, b: Side, names: tuple[str, str] = ("A", "B"),
                  level: float = LEVEL) -> TestResult:
    """A vs B on independent items: each side's ``values`` is one array of item scores per run.
    A trained side is summarised by its per-run means (each already carries its items' noise:
    ``r − 1`` degrees of freedom). A side without training facing a trained one with ``r`` runs
    is split into ``r`` consecutive groups of items and summarised the same way: Welch's degrees
    of freedom with 3 run means on one side and a hundred items on the other overshoot (a
    false-positive rate of 7.5 % at 100 items per run, ``reports/calibration.json``), matched
    groups do not. Two sides without training: each sample's mean and standard error
    (``n − 1``). The effect is the difference of the mean item score."""
    sides = []
    for side in (a, b):
        runs = [np.asarray(x, dtype=np.float64) for x in side.values]
        if not runs or any(len(x) == 0 for x in runs):
            raise ValueError("every run of an item comparison needs at least one item")
        sides.append(runs)
    n = sum(len(x) for runs in sides for x in runs)
    counts = (len(sides[0]), len(sides[1]))
    trained = (a.trained, b.trained)
    runs_out = tuple(r if t else 0 for r, t in zip(counts, trained))
    means = [np.array([float(fixed_sum(x) / len(x)) for x in runs]) for runs in sides]
    effect = float(means[0].mean() - means[1].mean())
    why = _short(names, (a, b), counts)
    if why:
        return _untested(effect, n, runs_out, ITEM_TEST, "generated abstracts", why)  # type: ignore[arg-type]
    trained_runs = max((len(r) for r, t in zip(sides, trained) if t), default=0)
    terms = []
    for runs, m, t in zip(sides, means, trained):
        pooled = np.concatenate(runs)
        if not t and trained_runs > 1 and len(pooled) >= trained_runs:
            m = np.array([float(fixed_sum(g) / len(g))
                          for g in np.array_split(pooled, trained_runs)])
            t = True
        if t:
            terms.append((float(m.var(ddof=1)) / len(m), len(m) - 1.0))
        else:
            if len(pooled) < 2:
                return _untested(effect, n, runs_out, ITEM_TEST, "generated abstracts",  # type: ignore[arg-type]
                                 "a side without training has fewer than two items")
            terms.append((float(pooled.var(ddof=1)) / len(pooled), len(pooled) - 1.0))
    se = math.sqrt(sum(v for v, _ in terms))
    return t_result(effect, se, _welch_df(terms), n, runs_out, ITEM_TEST,  # type: ignore[arg-type]
                    "generated abstracts", level)


def relative_percent(log_ratio: float) -> float:
    """A log-PPL difference as a relative PPL change in per cent, ``100 (e^Δ − 1)``."""
    return 100.0 * math.expm1(log_ratio)


def rate_interval(side: Side, tokens: np.ndarray, level: float = LEVEL,
                  groups: np.ndarray | None = None) -> tuple[float, float, float]:
    """``(log rate, lo, hi)`` of one side's mean log PPL over its runs, with the same variance as
    :func:`compare_rates` (abstracts or their ``groups``, plus runs for a trained side): a
    description, not a test."""
    tokens = np.asarray(tokens, dtype=np.float64)
    values = np.asarray(side.values, dtype=np.float64)
    values = values[:, None] if values.ndim == 1 else values
    n, r, total = len(tokens), values.shape[1], float(tokens.sum())
    per_run = fixed_sum(values) / total
    rate = float(per_run.mean())
    u = values.mean(axis=1) - rate * tokens
    terms = [document_variance(u, total, groups)]
    interaction = [_interaction(values, rate, tokens)] if side.trained and r > 1 else []
    runs = [(float(per_run.var(ddof=1)) / r, r - 1.0)] if interaction else []
    variance, df = _once(terms, runs, interaction)
    result = t_result(rate, math.sqrt(variance), df, n, (r, 0), "", "abstracts", level)
    return rate, result.ci[0], result.ci[1]
