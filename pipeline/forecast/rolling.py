"""Rolling-origin backtests: every forecaster forecasts every period it can, from its past only.

For each horizon ``h`` and each target period ``Y`` from ``first`` to ``last`` (an **origin**),
every forecaster forecasts ``Y`` from ``data.until(Y − h + 1)`` — the periods up to ``Y − h``,
nothing later — once per setting of its grid, and each forecast is scored on ``Y``'s documents
(the NLL of its tokens). Every choice is made on **earlier origins only**:

* a forecaster's **setting** at ``Y`` is the one with the lowest pooled NLL per token over the
  origins before ``Y`` (same horizon; ties: the earlier grid entry); at the first scored origin
  there is none, and the grid's first entry is used (the record says so);
* the **reference** at ``Y`` is the stationary forecaster whose forecasts at the origins before
  ``Y`` (each with the setting it had chosen there) had the lowest pooled NLL per token — "the
  best stationary forecast", chosen the way a forecaster would have had to choose it; at the first
  origin, the first stationary forecaster of the registry.

**Warm-up origins**: targets before ``first`` (from ``warmup``) are scored the same way but make
no claim; they only give the choices at ``first`` earlier origins to learn from, so the first
claimed origin does not run on a grid's first entry and an arbitrary reference. A warm-up target
without enough history is passed over silently. The first scored origin of a horizon is always a
warm-up origin: with nothing earlier, its setting and reference would be no choice at all (the
first stationary forecaster of the registry, persistence, is a weak reference on a corpus
without trends, and a forecaster beating it there has no temporal skill).

An origin is **skipped**, with its reason, when its past has fewer periods than the forecasters
need (the largest ``min_periods``) or ``Y`` has fewer than two documents. Every scored origin
scores every forecaster, so pooled comparisons pool the same origins. No usable origin at all is
a :class:`UserError` naming the corpus's periods and the periods the settings need.

A forecaster of several **fits** (:attr:`Forecaster.fits`: a learned one, whose forecast depends
on a seed) forecasts each setting once per fit; a setting's pooled NLL is the mean over its fits.

What is kept per origin (:class:`OriginScore`): each forecaster's chosen setting, its per-document
NLL sums under that setting (per fit, and their mean) and its log-probabilities (per fit, and
their mean), for the claims and the word tables of :mod:`pipeline.forecast.skill`, where the
claims and their tests are.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from pipeline.forecast.documents import PeriodDocuments, document_nll
from pipeline.forecast.forecasters.base import Forecaster, PeriodCounts
from pipeline.infra.errors import UserError

MIN_DOCUMENTS = 2            # a paired test over documents needs two


@dataclass(frozen=True)
class Chosen:
    """A forecaster's setting at one origin: its grid index, the setting, and why (``note``)."""

    index: int
    setting: Mapping[str, Any]
    note: str


@dataclass
class OriginScore:
    """One scored origin: target period index ``target`` (label ``period``), ``horizon``, the
    reference (and why), every forecaster's chosen setting, per-document NLL sums ``fit_nll``
    (``[documents, fits]`` each) and log-probabilities ``fit_log_p`` (one ``[V]`` per fit); their
    means over the fits are :attr:`nll` and :attr:`log_p`."""

    target: int
    period: str
    horizon: int
    warmup: bool
    reference: str
    reference_note: str
    chosen: dict[str, Chosen]
    lengths: np.ndarray
    seconds: dict[str, float]
    fit_nll: dict[str, np.ndarray]
    fit_log_p: dict[str, tuple[np.ndarray, ...]]

    @cached_property
    def nll(self) -> dict[str, np.ndarray]:
        """float64 ``[documents]`` per forecaster: the mean of its fits' per-document NLL sums."""
        return {n: v[:, 0] if v.shape[1] == 1 else v.mean(axis=1) for n, v in self.fit_nll.items()}

    @cached_property
    def log_p(self) -> dict[str, np.ndarray]:
        """float64 ``[V]`` per forecaster: the mean of its fits' log-probabilities."""
        return {n: lps[0] if len(lps) == 1 else np.mean(np.stack(lps), axis=0)
                for n, lps in self.fit_log_p.items()}

    @property
    def n_tokens(self) -> int:
        return int(self.lengths.sum())

    def log_ppl(self, name: str) -> float:
        return float(self.nll[name].sum()) / self.n_tokens


@dataclass(frozen=True)
class Skip:
    """An origin left out, and why."""

    period: str
    horizon: int
    reason: str


@dataclass
class Rolling:
    """Every origin of a backtest: scored ones in (horizon, time) order, skipped ones."""

    forecasters: tuple[Forecaster, ...]
    origins: list[OriginScore]          # claimed origins only
    skipped: list[Skip]
    warmup: list[OriginScore] = field(default_factory=list)

    def of(self, horizon: int) -> list[OriginScore]:
        """The claimed origins of ``horizon``, in time order."""
        return [o for o in self.origins if o.horizon == horizon]


def needed_periods(forecasters: Sequence[Forecaster]) -> int:
    """The past periods every forecaster can work with."""
    return max(f.min_periods for f in forecasters)


def _best(totals: Sequence[tuple[float, float]]) -> int | None:
    """The index with the lowest pooled NLL per token (``(nll, tokens)`` each; None: no data)."""
    if not totals or totals[0][1] == 0:
        return None
    rates = [nll / tokens for nll, tokens in totals]
    return min(range(len(rates)), key=lambda i: (rates[i], i))


def rolling_origins(data: PeriodCounts, documents: Sequence[PeriodDocuments],
                    forecasters: Sequence[Forecaster], first: int, last: int,
                    horizons: Sequence[int] = (1, 2), warmup: int | None = None,
                    log: Callable[[str], None] = lambda _: None) -> Rolling:
    """Score every forecaster at every origin ``first..last`` (indices into ``data.periods``,
    whose documents are ``documents``) and horizon, after the warm-up origins
    ``warmup..first − 1`` (module doc)."""
    if len(documents) != data.n_periods:
        raise ValueError(f"{len(documents)} periods of documents, {data.n_periods} of counts")
    stationary = [f.name for f in forecasters if f.kind == "stationary"]
    if not stationary:
        raise UserError("the backtest needs at least one stationary forecaster (the reference)")
    need = needed_periods(forecasters)
    origins: list[OriginScore] = []
    warm: list[OriginScore] = []
    skipped: list[Skip] = []
    start = first if warmup is None else min(max(warmup, 0), first)
    for h in horizons:
        # pooled (NLL, tokens) over the earlier origins: per setting, and per chosen forecast
        grid_totals = {f.name: [(0.0, 0.0)] * len(f.grid()) for f in forecasters}
        chosen_totals = {f.name: (0.0, 0.0) for f in forecasters}
        for y in range(start, last + 1):
            period, past_end = data.periods[y], y - h + 1
            docs = documents[y]
            if y < first and (past_end < need or docs.n_documents < MIN_DOCUMENTS):
                continue
            if past_end < need:
                skipped.append(Skip(period, h, f"{max(past_end, 0)} past period(s) up to "
                                                f"{data.periods[y - h] if y - h >= 0 else '—'}; "
                                                f"the forecasters need {need}"))
                continue
            if docs.n_documents < MIN_DOCUMENTS:
                skipped.append(Skip(period, h, f"{docs.n_documents} document(s) in {period}"))
                continue
            first_scored = chosen_totals[stationary[0]][1] == 0
            score = _score_origin(data, docs, forecasters, y, h, grid_totals, chosen_totals,
                                  stationary, warmup=y < first or first_scored)
            (warm if score.warmup else origins).append(score)
            log(f"h{h} {period}{' (warm-up)' if score.warmup else ''}: "
                f"reference {score.reference}")
    if not origins:
        raise UserError(
            f"no usable forecast origin: the corpus has {data.n_periods} consecutive period(s) "
            f"({data.periods[0] if data.periods else '—'}..{data.periods[-1] if data.periods else '—'}); "
            f"the settings need {need} past period(s) before each target from "
            f"{data.periods[first] if first < data.n_periods else first} at horizon "
            f"{max(horizons)} (that is {need + max(horizons)} periods up to the last target) "
            "and targets with at least two documents, after one such origin to choose "
            "settings and the reference on",
            fix="give the corpus more periods, choose an earlier first target, or shorter periods")
    return Rolling(tuple(forecasters), origins, skipped, warm)


def _score_origin(data: PeriodCounts, docs: PeriodDocuments, forecasters: Sequence[Forecaster],
                  y: int, h: int, grid_totals: dict[str, list[tuple[float, float]]],
                  chosen_totals: dict[str, tuple[float, float]],
                  stationary: Sequence[str], warmup: bool = False) -> OriginScore:
    """Every forecaster at one origin; updates the running totals for the later origins."""
    past = data.until(y - h + 1)
    counts = docs.counts().astype(np.float64)
    tokens = float(counts.sum())
    chosen: dict[str, Chosen] = {}
    fit_log_p: dict[str, tuple[np.ndarray, ...]] = {}
    seconds: dict[str, float] = {}
    for f in forecasters:
        grid = f.grid()
        best = _best(grid_totals[f.name])
        index = 0 if best is None else best
        note = ("first grid entry: no earlier origin" if best is None
                else "lowest pooled NLL over the earlier origins")
        chosen[f.name] = Chosen(index, dict(grid[index]), note)
        t0 = time.perf_counter()
        totals = grid_totals[f.name]
        for i, setting in enumerate(grid):
            lps = tuple(np.asarray(f.forecast(past, h, s), dtype=np.float64)
                        for s in f.fit_settings(setting))
            nll_sum = sum(float(counts @ lp[:len(counts)]) for lp in lps) / len(lps)
            totals[i] = (totals[i][0] - nll_sum, totals[i][1] + tokens)
            if i == index:
                fit_log_p[f.name] = lps
        seconds[f.name] = time.perf_counter() - t0
    best_ref = _best([chosen_totals[name] for name in stationary])
    reference = stationary[0 if best_ref is None else best_ref]
    reference_note = ("the first stationary forecaster: no earlier origin" if best_ref is None
                      else "the stationary forecaster with the lowest pooled NLL over the "
                           "earlier origins")
    names = [f.name for f in forecasters]
    nll_matrix = document_nll(docs, np.stack([lp for n in names for lp in fit_log_p[n]]))
    fit_nll, col = {}, 0
    for n in names:
        fit_nll[n] = nll_matrix[:, col:col + len(fit_log_p[n])]
        col += len(fit_log_p[n])
    score = OriginScore(y, data.periods[y], h, warmup, reference, reference_note, chosen,
                        docs.lengths.copy(), seconds, fit_nll, fit_log_p)
    for n in names:
        chosen_totals[n] = (chosen_totals[n][0] + float(score.nll[n].sum()),
                            chosen_totals[n][1] + tokens)
    return score
