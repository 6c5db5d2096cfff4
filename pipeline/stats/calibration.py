"""Calibration of the verdict engine's tests by simulation: simulated nulls and planted effects.

Each function here simulates data whose truth is known, runs one test of
:mod:`pipeline.stats.comparisons` or :mod:`pipeline.stats.ranks` on every simulated data set and
returns a :class:`Calibration`: the **false-positive rate** (share of p < 0.05 when the truth is no
difference), the **coverage** of the 95 % interval (share of intervals that contain the true
effect; the smallest over the simulated effect sizes, null included) and the **power** at planted
effects of the sizes the reports meet (share of p < 0.05). Each simulation draws a new data set
from its population (new documents, runs, items or words): the truth is the population value.
Seeds are fixed, so a calibration is the same numbers on every run.

* :func:`calibrate_model_comparison`: two trained variants, ``runs`` seeds each, scoring the
  same abstracts (:func:`pipeline.stats.comparisons.compare_rates`). Per-document NLL sums are
  ``t_j (d_j + μ_s + a_sj + ρ_sr + e_srj) + √t_j (σ_shared z_j + σ_token z_srj)``: ``t_j``
  tokens (log-normal, like the sample's abstracts), ``d_j`` the document's difficulty
  (nats/token), ``μ_s`` the variant's true mean, ``a_sj`` the variant × document interaction,
  ``ρ_sr`` the run's offset (the run spread of log PPL), ``e_srj`` the run × document
  interaction, and token noise shared by both variants or not (:data:`RATE_MODEL`). The truth
  is ``μ_A − μ_B``. Paired by seed (``shared_sd``): run ``r`` of both sides adds the seed's
  offset ``σ_seed z_r`` (a shared Baseline) and the sides name their seeds, so the engine pairs
  them. In venue clusters (``venue_sd``, :func:`venue_groups`), each side gains an offset per
  venue, so the difference is correlated within a venue, and the test resamples venues. The A/A
  simulations also go through :func:`pipeline.stats.verdict.judge` (a family of one), counting
  ``better``/``worse``.
* :func:`calibrate_cm`: CM of generated abstracts
  (:func:`~pipeline.stats.comparisons.compare_items`), items Gamma-distributed (mean 0.04,
  sd 0.03), a run offset per trained run (:data:`CM_MODEL`); a trained variant against another
  (3 runs a side) or against the content-word sampler (untrained, one sample).
* :func:`calibrate_diebold_mariano`: the pooled skill test over forecast origins
  (:func:`pipeline.stats.diebold_mariano.diebold_mariano`) on ``n`` AR(1) loss differentials
  (coefficient φ, stationary start; at horizon ``h`` summed over ``h`` overlapping steps),
  shifted by a planted mean in units of their marginal sd;
  the Newey–West variant's rates ride along in ``extra``, for the record of why it is not used.
* :func:`calibrate_semantic_rho`: :func:`pipeline.stats.ranks.spearman_test` over ``n`` target
  words whose scores are bivariate normal with the population Spearman ρ planted
  (``ρ_S = (6/π) asin(r/2)``).

The trend tests, which need :mod:`pipeline.forecast`, are calibrated in
:mod:`pipeline.forecast.calibration` (this layer does not import it); ``scripts/calibrate.py``
runs everything and writes ``reports/calibration.json``. :func:`runs_for_mde` gives the runs a
variant needs for a minimal detectable PPL change (:func:`pipeline.stats.power.t_mde`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from pipeline.stats.clusters import design_effect, intra_cluster_correlation
from pipeline.stats.comparisons import MIN_RUNS, Side, TestResult, compare_items, compare_rates
from pipeline.stats.diebold_mariano import diebold_mariano
from pipeline.stats.power import t_mde
from pipeline.stats.ranks import spearman_test
from pipeline.stats.verdict import claim_of, judge

ALPHA = 0.05
TESTS = ("model-comparison", "model-comparison, paired by seed", "cm", "cm-anchor",
         "semantic-change ρ", "forecast-skill pooled")                    # calibrated here
FPR_MAX, COVERAGE_MIN = 0.07, 0.93            # the bounds a test must meet
FPR_GOAL, COVERAGE_GOAL = 0.05, 0.95          # what an exact test gives
MC_Z = 1.96               # a rate's Monte-Carlo interval: ± this many of its standard errors
# Tokens per abstract: the sample's 2017-2021 abstracts (≥ 20 words) under the default run's
# 4,096-token scratch BPE have mean 193, sd 65 tokens (measured once; a log-normal with them).
TOKENS_MEAN, TOKENS_SD = 193.0, 65.0
SAMPLE_TEST_DOCS, FULL_TEST_DOCS = 259, 6000   # test abstracts: the sample's, the full export's
# Venue clusters of the export's test years: ~120 proceedings volumes, the largest ~1,000
# abstracts, so that an abstract sits in a volume of Σ m²/n ≈ 0.08 n on average (2023: 575 of
# 7,079 abstracts in 123 volumes). Log-normal shares with log-sd 1.5 give exp(1.5²)/120 ≈ 0.08.
VENUES, VENUE_SIZE_SD = 120, 1.5
# The document model of a model comparison (nats per token; module doc).
RATE_MODEL = dict(difficulty_mean=6.0, difficulty_sd=0.3, variant_doc_sd=0.08, run_doc_sd=0.03,
                  shared_token_sd=2.5, token_sd=0.5)
CM_MODEL = dict(mean=0.04, item_sd=0.03, run_sd=0.01)     # CM of one generated abstract; runs


@dataclass
class Calibration:
    """One test at one size: ``n_sims`` per truth, the false-positive rate and its Monte-Carlo
    SE, the share of ``better``/``worse`` verdicts of the engine under the null (``fpr_verdict``;
    NaN where not run), the coverage (smallest over the truths; None with ``coverage_note`` where
    it is not defined), power per planted effect and the settings. ``diagnostic``: where set, the
    simulated data are known not to be an exact null (the reason); the row records how far the
    test moves there and is not held to the bounds."""

    test: str
    size: str
    n_sims: int
    fpr: float
    coverage: float | None
    power: dict[str, float]
    settings: dict[str, object]
    fpr_verdict: float = math.nan
    coverage_by_effect: dict[str, float] = field(default_factory=dict)
    coverage_note: str = ""
    extra: dict[str, object] = field(default_factory=dict)
    diagnostic: str = ""      # why the data are not an exact null: the row measures, is not held

    @property
    def fpr_se(self) -> float:
        return mc_se(self.fpr, self.n_sims)

    @property
    def passed(self) -> bool | None:
        """:func:`passes`; None for a diagnostic row."""
        if self.diagnostic:
            return None
        return passes(self.fpr, self.fpr_verdict, self.coverage, self.n_sims)

    def as_record(self) -> dict[str, object]:
        record = asdict(self)
        record.update(fpr_se=self.fpr_se, **{"pass": self.passed},
                      coverage_se=None if self.coverage is None
                      else mc_se(self.coverage, self.n_sims),
                      fpr_verdict=None if math.isnan(self.fpr_verdict) else self.fpr_verdict)
        return _rounded(record)


def passes(fpr: float, fpr_verdict: float | None, coverage: float | None, n_sims: int) -> bool:
    """Bounds met with the Monte-Carlo error counted against the test: the upper end of the
    FPR's (and the engine's verdict rate's, where run) Monte-Carlo interval ≤ :data:`FPR_MAX`,
    the lower end of the coverage's (where defined) ≥ :data:`COVERAGE_MIN`."""
    ok = fpr + MC_Z * mc_se(fpr, n_sims) <= FPR_MAX
    if fpr_verdict is not None and not math.isnan(fpr_verdict):
        ok = ok and fpr_verdict + MC_Z * mc_se(fpr_verdict, n_sims) <= FPR_MAX
    if coverage is not None:
        ok = ok and coverage - MC_Z * mc_se(coverage, n_sims) >= COVERAGE_MIN
    return ok


def mc_se(share: float, n: int) -> float:
    """The Monte-Carlo standard error of a share estimated from ``n`` simulations."""
    return math.sqrt(max(share * (1 - share), 1.0 / n) / n) if n else math.nan


def _rounded(x: object) -> object:
    if isinstance(x, float):
        return None if math.isnan(x) else float(f"{x:.4g}")
    if isinstance(x, dict):
        return {k: _rounded(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_rounded(v) for v in x]
    return x


def token_counts(rng: np.random.Generator, n: int, mean: float = TOKENS_MEAN,
                 sd: float = TOKENS_SD) -> np.ndarray:
    """``n`` abstracts' token counts, log-normal with ``mean`` and ``sd`` (at least 2)."""
    s2 = math.log1p((sd / mean) ** 2)
    return np.maximum(2, np.rint(rng.lognormal(math.log(mean) - s2 / 2, math.sqrt(s2), n)))


def covers(result: TestResult, truth: float) -> bool:
    return bool(result.ci[0] <= truth <= result.ci[1])


def _summary(test: str, size: str, n_sims: int, results: Mapping[str, list[tuple[float, bool]]],
             settings: dict[str, object], **more: object) -> Calibration:
    """``results[label]``: (p, covered) per simulation; the label ``null`` is the null."""
    share = {label: float(np.mean([p < ALPHA for p, _ in rows])) for label, rows in results.items()}
    cover = {label: float(np.mean([c for _, c in rows])) for label, rows in results.items()}
    return Calibration(test, size, n_sims, share.pop("null"), min(cover.values()), share,
                       settings, coverage_by_effect=cover, **more)  # type: ignore[arg-type]


def _aa_verdicts(results: Sequence[TestResult], family: str, scale: str) -> float:
    """Share of ``better``/``worse`` verdicts of the engine, each result a family of one."""
    bad = 0
    for r in results:
        claim = claim_of(r, report="calibration", family=family, a="A", b="B", metric="m",
                         scale=scale)
        bad += judge([claim], words_only=True)[0].verdict in ("better", "worse")
    return bad / len(results)


def venue_groups(rng: np.random.Generator, n_docs: int, venues: int = VENUES,
                 spread: float = VENUE_SIZE_SD) -> np.ndarray:
    """int64 ``[n_docs]``: each abstract's venue, ``venues`` of them with log-normal shares of
    log-sd ``spread`` (a few volumes of ~1,000 abstracts and many small workshops, module doc)."""
    shares = rng.lognormal(0.0, spread, venues)
    return rng.choice(venues, size=n_docs, p=shares / shares.sum())


def simulate_rates(rng: np.random.Generator, n_docs: int, runs: int, run_sd: float,
                   effect: float, model: Mapping[str, float] = RATE_MODEL,
                   shared_sd: float | None = None, venues: np.ndarray | None = None,
                   venue_sd: float = 0.0) -> tuple[Side, Side, np.ndarray]:
    """One data set of a model comparison (module doc): sides A (true mean ``effect`` nats/token
    above B's) and B with ``runs`` trained runs each, and the token counts. ``shared_sd``: the
    sd of each seed's offset common to both sides, whose runs then name their seeds (paired);
    None: independent runs without seeds (Welch). ``venues [n_docs]`` with ``venue_sd``: each
    side gains its own offset of that sd (nats/token) on every abstract of a venue, so that the
    difference is correlated within a venue."""
    t = token_counts(rng, n_docs)
    by_venue = None if venues is None else rng.normal(0, venue_sd, (2, int(venues.max()) + 1))
    d = rng.normal(model["difficulty_mean"], model["difficulty_sd"], n_docs)
    shared = model["shared_token_sd"] * np.sqrt(t) * rng.standard_normal(n_docs)
    paired = shared_sd is not None            # (no draw otherwise: the Welch rows keep their data)
    seed_offset = rng.normal(0, shared_sd, runs) if paired else np.zeros(runs)
    seeds = tuple(range(runs)) if paired else ()
    sides = []
    for side, mu in enumerate((effect, 0.0)):
        venue = 0.0 if by_venue is None else by_venue[side][venues]
        per_token = (d + mu + venue + rng.normal(0, model["variant_doc_sd"], n_docs))[:, None] \
            + (seed_offset + rng.normal(0, run_sd, runs))[None, :] \
            + rng.normal(0, model["run_doc_sd"], (n_docs, runs))
        nll = t[:, None] * per_token + shared[:, None] \
            + model["token_sd"] * np.sqrt(t)[:, None] * rng.standard_normal((n_docs, runs))
        sides.append(Side(nll, trained=True, seeds=seeds))
    return sides[0], sides[1], t


def calibrate_model_comparison(runs: int, run_sd: float, n_sims: int,
                               n_docs: int = SAMPLE_TEST_DOCS,
                               gains: Sequence[float] = (0.02, 0.05, 0.10),
                               seed: int = 0, shared_sd: float | None = None,
                               run_doc_sd: float | None = None,
                               venue_sd: float | None = None) -> Calibration:
    """Two trained variants (``runs`` seeds a side, log-PPL run spread ``run_sd``) on ``n_docs``
    paired abstracts; power at relative PPL gains ``gains`` (A's PPL ``1 − g`` times B's).
    ``shared_sd`` (not None): runs paired by seed, each seed adding an offset of that sd to both
    sides (the test ``model-comparison, paired by seed``). ``run_doc_sd`` (not None): the run ×
    abstract interaction's sd instead of :data:`RATE_MODEL`'s. ``extra`` holds ``se_ratio``, the
    root mean square of the reported standard errors under the null over the simulated effects'
    sd (1: each variance counted once; the mean of the standard errors would be below 1 at three
    runs however right the variance, ``E s < σ``).``venue_sd`` (not None): abstracts
    in :func:`venue_groups` clusters, each side offset by that sd on a venue's abstracts, tested
    with the venues as the unit (``extra``: the false-positive rate of the same data taken as
    independent abstracts, and the mean intra-cluster correlation and design effect of the
    per-abstract contributions under the null)."""
    model = dict(RATE_MODEL) if run_doc_sd is None else dict(RATE_MODEL, run_doc_sd=run_doc_sd)
    truths = {"null": 0.0, **{f"{100 * g:g} %": math.log1p(-g) for g in gains}}
    out: dict[str, list[tuple[float, bool]]] = {}
    nulls = []
    stream = [] if shared_sd is None else [int(1e4 * shared_sd)]   # the unpaired rows' draws stay
    stream += [] if run_doc_sd is None else [int(1e4 * run_doc_sd)]
    stream += [] if venue_sd is None else [int(1e4 * venue_sd), VENUES]
    independent: list[float] = []
    clustering: list[tuple[float, float]] = []
    for i, (label, truth) in enumerate(truths.items()):
        rng = np.random.default_rng([seed, runs, int(1e4 * run_sd), n_docs, i, *stream])
        rows = []
        for _ in range(n_sims):
            venues = None if venue_sd is None else venue_groups(rng, n_docs)
            a, b, t = simulate_rates(rng, n_docs, runs, run_sd, truth, model,
                                     shared_sd=shared_sd, venues=venues,
                                     venue_sd=venue_sd or 0.0)
            r = compare_rates(a, b, t, groups=venues)
            rows.append((r.p, covers(r, truth)))
            if label == "null":
                nulls.append(r)
                if venues is not None:
                    independent.append(compare_rates(a, b, t).p)
                    clustering.append(_clustering(a, b, t, venues))
        out[label] = rows
    settings = dict(n_docs=n_docs, runs=runs, run_sd=run_sd, tokens=dict(mean=TOKENS_MEAN,
                    sd=TOKENS_SD, law="log-normal"), **model, gains=list(gains))
    test, size = "model-comparison", f"{runs} runs, run sd {run_sd:g}"
    if shared_sd is not None:
        settings.update(shared_seed_sd=shared_sd)
        test = "model-comparison, paired by seed"
        size = f"{runs} seeds, {n_docs:,} abstracts, run sd {run_sd:g}, seed sd {shared_sd:g}"
    if run_doc_sd is not None:
        size += f", run × abstract sd {run_doc_sd:g}"
    se_ratio = float(np.sqrt(np.mean([r.se ** 2 for r in nulls]))
                     / np.std([r.effect for r in nulls], ddof=1))
    extra: dict[str, object] = {"se_ratio": se_ratio}
    if venue_sd is not None:
        settings.update(venues=VENUES, venue_size_sd=VENUE_SIZE_SD, venue_sd=venue_sd)
        size += f", {VENUES} venues, venue sd {venue_sd:g}"
        extra.update(fpr_independent=float(np.mean(np.asarray(independent) < ALPHA)),
                     icc=float(np.mean([c for c, _ in clustering])),
                     design_effect=float(np.mean([d for _, d in clustering])))
    return _summary(test, size, n_sims, out, settings,
                    fpr_verdict=_aa_verdicts(nulls, "variant", "relative"), extra=extra)


def _clustering(a: Side, b: Side, tokens: np.ndarray, venues: np.ndarray) -> tuple[float, float]:
    """``(ICC, design effect)`` of the run-averaged per-abstract contributions of A − B."""
    diff = np.mean(a.values, axis=1) - np.mean(b.values, axis=1)
    u = diff - diff.sum() / tokens.sum() * tokens
    return intra_cluster_correlation(u, venues), design_effect(u, venues)


def cm_items(rng: np.random.Generator, runs: int, items: int, mean: float, item_sd: float,
             run_sd: float) -> list[np.ndarray]:
    """``runs`` samples of ``items`` CM scores: Gamma with sd ``item_sd`` around each run's mean,
    which is ``mean`` plus N(0, ``run_sd``) (kept positive)."""
    out = []
    for _ in range(runs):
        m = max(1e-4, mean + run_sd * rng.standard_normal()) if run_sd else mean
        shape = (m / item_sd) ** 2
        out.append(rng.gamma(shape, m / shape, items))
    return out



def calibrate_cm(items: int, n_sims: int, anchor: bool = False, runs: int = 3,
                 effects: Sequence[float] = (0.01, 0.02, 0.04), seed: int = 0) -> Calibration:
    """CM of ``runs`` trained runs × ``items`` generated abstracts against another variant's
    (``anchor=False``) or against the content-word sampler's one sample of ``items``
    (``anchor=True``: no run spread); A's true mean CM is ``effect`` above B's."""
    truths = {"null": 0.0, **{f"{e:g}": e for e in effects}}
    out: dict[str, list[tuple[float, bool]]] = {}
    nulls = []
    mean, sd, run_sd = CM_MODEL["mean"], CM_MODEL["item_sd"], CM_MODEL["run_sd"]
    for i, (label, truth) in enumerate(truths.items()):
        rng = np.random.default_rng([seed, items, int(anchor), runs, i])
        rows = []
        for _ in range(n_sims):
            a = Side(cm_items(rng, runs, items, mean + truth, sd, run_sd), trained=True)
            b = (Side(cm_items(rng, 1, items, mean, sd, 0.0), trained=False) if anchor
                 else Side(cm_items(rng, runs, items, mean, sd, run_sd), trained=True))
            r = compare_items(a, b)
            rows.append((r.p, covers(r, truth)))
            if label == "null":
                nulls.append(r)
        out[label] = rows
    settings = dict(runs=(runs, 0 if anchor else runs), items_per_run=items, **CM_MODEL,
                    item_law="Gamma", effects=list(effects))
    size = f"{items} item{'s' if items != 1 else ''} per run"
    family = "cm-anchor" if anchor else "variant"
    return _summary("cm-anchor" if anchor else "cm", size, n_sims, out, settings,
                    fpr_verdict=_aa_verdicts(nulls, family, "identity"))


def pearson_for(rho_s: float) -> float:
    """The Pearson ``r`` whose bivariate normal has population Spearman ``rho_s``."""
    return 2 * math.sin(math.pi * rho_s / 6)


def calibrate_semantic_rho(n_words: int, n_sims: int, rhos: Sequence[float] = (0.3, 0.5),
                           seed: int = 0) -> Calibration:
    """A method's change scores against the truth over ``n_words`` target words (Spearman ρ,
    :func:`pipeline.stats.ranks.spearman_test`); power at population ρ ``rhos``."""
    truths = {"null": 0.0, **{f"ρ {r:g}": r for r in rhos}}
    out: dict[str, list[tuple[float, bool]]] = {}
    for i, (label, rho) in enumerate(truths.items()):
        rng = np.random.default_rng([seed, n_words, i])
        r = pearson_for(rho)
        rows = []
        for _ in range(n_sims):
            x = rng.standard_normal(n_words)
            y = r * x + math.sqrt(1 - r * r) * rng.standard_normal(n_words)
            est, ci, p, _ = spearman_test(x, y)
            rows.append((p, ci[0] <= rho <= ci[1]))
        out[label] = rows
    return _summary("semantic-change ρ", f"{n_words} words", n_sims, out,
                    dict(n_words=n_words, rhos=list(rhos), law="bivariate normal"))


def ar1(rng: np.random.Generator, n: int, phi: float) -> np.ndarray:
    """``n`` consecutive values of a stationary AR(1) with coefficient ``phi`` and marginal
    variance 1."""
    x = np.empty(n)
    x[0] = rng.standard_normal()
    scale = math.sqrt(1 - phi * phi)
    for t in range(1, n):
        x[t] = phi * x[t - 1] + scale * rng.standard_normal()
    return x


def overlapping_ar1(rng: np.random.Generator, n: int, phi: float, horizon: int) -> np.ndarray:
    """``n`` loss differentials of ``horizon``-step forecasts: sums of ``horizon`` consecutive
    values of an AR(1) (:func:`ar1`; the targets of neighbouring origins overlap), scaled back
    to marginal variance 1. Horizon 1 is :func:`ar1` itself, draw for draw."""
    x = ar1(rng, n + horizon - 1, phi)
    if horizon == 1:
        return x
    d = np.convolve(x, np.ones(horizon), mode="valid")
    return d / math.sqrt(sum(phi ** abs(i - j) for i in range(horizon) for j in range(horizon)))


def calibrate_diebold_mariano(n_origins: int, phi: float, n_sims: int, horizon: int = 1,
                              shifts: Sequence[float] = (0.5, 1.0), seed: int = 0
                              ) -> Calibration:
    """The pooled skill test at ``n_origins`` AR(1) loss differentials (coefficient ``phi``,
    marginal sd 1) whose true mean is 0 or one of ``shifts`` (in marginal sds); the Newey–West
    variant's false-positive rate and power on the same draws in ``extra``."""
    truths = {"null": 0.0, **{f"{s:g} sd": s for s in shifts}}
    out: dict[str, list[tuple[float, bool]]] = {}
    nw: dict[str, float] = {}
    nulls = []
    for i, (label, truth) in enumerate(truths.items()):
        rng = np.random.default_rng([seed, n_origins, int(round(100 * phi)), horizon, i])
        rows, nw_rejects = [], 0
        for _ in range(n_sims):
            d = overlapping_ar1(rng, n_origins, phi, horizon) + truth
            r = diebold_mariano(d, horizon)
            rows.append((r.p, covers(r, truth)))
            nw_rejects += diebold_mariano(d, horizon, kernel="newey-west").p < ALPHA
            if label == "null":
                nulls.append(r)
        out[label] = rows
        nw[label] = nw_rejects / n_sims
    settings = dict(n_origins=n_origins, phi=phi, horizon=horizon,
                    law="AR(1) summed over the horizon's overlapping steps, marginal sd 1",
                    shifts=list(shifts))
    size = f"{n_origins} origins, φ {phi:g}" + (f", horizon {horizon}" if horizon > 1 else "")
    return _summary("forecast-skill pooled", size, n_sims, out,
                    settings, fpr_verdict=_aa_verdicts(nulls, "forecast-skill", "relative"),
                    extra={"newey-west": {"fpr": nw.pop("null"), "power": nw}})


def rate_doc_var(n_docs: int, runs: int, model: Mapping[str, float] = RATE_MODEL,
                 mean: float = TOKENS_MEAN, sd: float = TOKENS_SD) -> float:
    """The expected document part of :func:`compare_rates`'s variance under :data:`RATE_MODEL`:
    ``(E t² · 2(σ_a² + σ_e²/r) + E t · 2σ_token²/r) / (n (E t)²)``."""
    et, et2 = mean, mean * mean + sd * sd
    per_doc = et2 * 2 * (model["variant_doc_sd"] ** 2 + model["run_doc_sd"] ** 2 / runs) \
        + et * 2 * model["token_sd"] ** 2 / runs
    return per_doc / (n_docs * et * et)


def runs_for_mde(gain: float, run_sd: float, n_docs: int, doc_var: Callable[[int, int], float]
                 = rate_doc_var, max_runs: int = 200, level: float = ALPHA) -> int | None:
    """The fewest runs a side (equal on both sides, at least :data:`MIN_RUNS`) whose minimal
    detectable effect (80 % power, two-sided ``level``) is at most a relative PPL change of
    ``gain``: the engine's variance (runs plus documents, Welch–Satterthwaite df). None: more
    than ``max_runs``."""
    target = -math.log1p(-gain)
    for r in range(MIN_RUNS, max_runs + 1):
        dv, rv = doc_var(n_docs, r), run_sd * run_sd / r
        se = math.sqrt(dv + 2 * rv)
        df = (dv + 2 * rv) ** 2 / (dv * dv / (n_docs - 1) + 2 * rv * rv / (r - 1))
        if t_mde(se, df, level) <= target:
            return r
    return None
