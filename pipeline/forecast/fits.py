"""The forecast report's forecasters, each with one setting fitted on the training periods only.

On a corpus without trends a forecaster that blends several past periods beats last-period
persistence (less variance), so "beats persistence" is no temporal skill: every backtest period
of ``reports/forecast.md`` compares each forecaster with **each** stationary one
(:mod:`pipeline.forecast.claims`). The forecasters are the registry's
(:func:`pipeline.forecast.forecasters.registry.all_forecasters` of the ``forecast`` backtest, in
its order), under their report names. Each reads the history window Y−m .. Y−1 only (the
report's declared inputs), so a forecaster needing more than m past periods is left out.

**Fit**: every one-step forecast whose target t and whole window t−m .. t−1 are training periods
(:func:`pipeline.forecast.baselines.fit_targets`) is made for each setting of the forecaster's
:meth:`~pipeline.forecast.forecasters.base.Forecaster.fit_grid`; the setting with the lowest
pooled training perplexity wins (ties: the earlier one). No backtest, dev or test period enters
the fit. Without a training forecast to fit on, each forecaster keeps its
:meth:`~pipeline.forecast.forecasters.base.Forecaster.unfitted` setting or, where it has none, is
left out; the report says so. The **reference** the report names is the stationary forecaster
with the lowest fitted training perplexity (ties: registry order); without a fit, the last
stationary one in registry order, which pools the most of the past (the least sampling noise on a
corpus without trends).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipeline.features.windows import history_periods
from pipeline.forecast.baselines import fit_targets
from pipeline.forecast.forecasters.base import Forecaster, PeriodCounts
from pipeline.forecast.forecasters.registry import all_forecasters
from pipeline.models.perplexity import perplexity

BACKTEST = "forecast"
# How a setting's values read in the report: symbol and format.
SYMBOLS: Mapping[str, tuple[str, str]] = {"alpha": ("α", "{:g}"), "lam": ("λ", "{:.2f}")}


@dataclass(frozen=True)
class Fit:
    """One forecaster with its fitted setting, its pooled training perplexity (NaN: not fitted)
    and the training targets it was fitted on."""

    forecaster: Forecaster
    setting: Mapping[str, Any] = field(default_factory=dict)
    train_ppl: float = float("nan")
    targets: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.forecaster.report_name

    @property
    def stationary(self) -> bool:
        return self.forecaster.kind == "stationary"

    def log_p(self, past: PeriodCounts) -> np.ndarray:
        """The forecast of the period after ``past`` (its history window, oldest first)."""
        return np.asarray(self.forecaster.forecast(past, 1, self.setting), dtype=np.float64)

    def change(self, past: PeriodCounts) -> np.ndarray | None:
        """Its predicted change against ``past``'s last period (None: it predicts none)."""
        return self.forecaster.change(past, 1, self.setting)

    def describe(self) -> str:
        values = [f"{SYMBOLS[k][0]} = {SYMBOLS[k][1].format(v)}" if k in SYMBOLS else f"{k} = {v}"
                  for k, v in self.setting.items()]
        fit = ("not fitted (no training forecast)" if math.isnan(self.train_ppl)
               else f"training PPL {self.train_ppl:.2f}")
        return f"{self.name} ({', '.join(values) + '; ' if values else ''}{fit})"


def window_counts(counts: Mapping[str, np.ndarray], period: str, window: int,
                  last: np.ndarray | None = None) -> PeriodCounts:
    """The history window ``period−m .. period−1`` of ``counts`` (per period label), what every
    forecaster of the report reads; ``last`` in place of the last period's counts (half A)."""
    periods = history_periods(period, window)
    rows = [counts[p] for p in periods]
    if last is not None:
        rows[-1] = last
    return PeriodCounts.of_token_counts(periods, rows)


def fit_forecasters(counts: Mapping[str, np.ndarray], train_periods: Sequence[str], window: int,
                    forecasters: Sequence[Forecaster] | None = None) -> dict[str, Fit]:
    """Every forecaster of the report (default: the registry's, module doc) fitted on
    ``train_periods``, by report name in registry order; ``counts`` per period label (only
    training periods are read)."""
    chosen = all_forecasters(BACKTEST) if forecasters is None else list(forecasters)
    usable = [f for f in chosen if f.min_periods <= window]
    targets = fit_targets(train_periods, window)
    if not targets:
        unfitted = [(f, f.unfitted()) for f in usable]
        return {f.report_name: Fit(f, dict(s)) for f, s in unfitted if s is not None}
    cases = [(np.asarray(counts[t], dtype=np.float64), window_counts(counts, t, window))
             for t in targets]
    n_tokens = sum(c.sum() for c, _ in cases)
    fits = {}
    for f in usable:
        scored = [(perplexity(sum(-(c @ f.forecast(past, 1, s)) for c, past in cases) / n_tokens),
                   i, s) for i, s in enumerate(f.fit_grid())]
        ppl, _, best = min(scored, key=lambda x: (x[0], x[1]))
        fits[f.report_name] = Fit(f, dict(best), float(ppl), tuple(targets))
    return fits


def references(fits: Mapping[str, Fit]) -> list[str]:
    """The stationary forecasters' names, in registry order: what every claim is made against."""
    return [name for name, f in fits.items() if f.stationary]


def best_fit(fits: Mapping[str, Fit]) -> str:
    """The reference the report names (module doc)."""
    names = references(fits)
    if not names:
        raise ValueError("the forecast report needs at least one stationary forecaster")
    fitted = [n for n in names if not math.isnan(fits[n].train_ppl)]
    if not fitted:
        return names[-1]
    return min(fitted, key=lambda n: (fits[n].train_ppl, names.index(n)))
