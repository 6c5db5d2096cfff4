"""Stationary baselines, smoothed by a rule fitted on training periods only.

On a corpus without trends a forecaster that blends several past periods beats last-period
persistence (less variance), so "beats persistence" is no temporal skill. Every
backtest compares each forecaster with **each** stationary baseline instead
(:mod:`pipeline.forecast.claims`):

* **Persistence**: period Y−1's counts;
* **Pooled past**: the summed counts of the history window Y−m .. Y−1 — the periods every
  count-based forecaster reads (the forecast report's declared inputs), not every earlier period
  the run happens to hold, so it is the same forecaster whatever else the run counts;
* **Mean reversion**: Y−1's log frequencies shrunk toward the window's mean by λ
  (:func:`pipeline.forecast.baselines.mean_reverting`).

Each is smoothed additively, ``log p̂(w) = log((c_w + α) / (N + α|V|))`` (α = 1 is the frequency
features' add-one rule), mean reversion per period before averaging. **Fit**: every one-step
forecast whose target t and whole window t−m .. t−1 are training periods
(:func:`pipeline.forecast.baselines.fit_targets`) is made for each α of :data:`ALPHA_GRID` (and
each λ of :data:`pipeline.forecast.baselines.LAMBDA_GRID` for mean reversion); the setting with
the lowest pooled training perplexity wins (ties: the earlier grid value); the baseline with
the lowest fitted training perplexity is reported as the best fit (ties: the order above). No
backtest, dev or test period enters the fit. Without a training forecast to fit on,
every baseline keeps α = 1, mean reversion is left out and the pooled past is the reference,
which the report says.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.features.windows import history_periods
from pipeline.forecast.baselines import LAMBDA_GRID, fit_targets, mean_reverting
from pipeline.models.perplexity import perplexity

ALPHA_GRID: tuple[float, ...] = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0)
PERSISTENCE, POOLED, MEAN_REVERSION = "Persistence", "Pooled past", "Mean reversion"
STATIONARY = (PERSISTENCE, POOLED, MEAN_REVERSION)


def smoothed(counts: np.ndarray, alpha: float) -> np.ndarray:
    """``log((c + α) / (N + α|V|))`` float64 ``[|V|]``."""
    counts = np.asarray(counts, dtype=np.float64)
    return np.log(counts + alpha) - np.log(counts.sum() + alpha * counts.shape[0])


@dataclass(frozen=True)
class StationaryFit:
    """One baseline's fitted smoothing (``lam``: mean reversion only), its pooled training
    perplexity (NaN: not fitted) and the training targets it was fitted on."""

    name: str
    alpha: float
    lam: float | None = None
    train_ppl: float = float("nan")
    targets: tuple[str, ...] = ()

    def log_p(self, window: Sequence[np.ndarray]) -> np.ndarray:
        """The forecast from the window's counts (time order, Y−1 last)."""
        if self.name == PERSISTENCE:
            return smoothed(window[-1], self.alpha)
        if self.name == POOLED:
            return smoothed(np.sum(window, axis=0), self.alpha)
        lf = np.stack([smoothed(c, self.alpha) for c in window], axis=1)
        return mean_reverting(lf, float(self.lam))

    def change(self, window: Sequence[np.ndarray]) -> np.ndarray | None:
        """Predicted change against Y−1 as the forecaster sees it (None: persistence, no change)."""
        if self.name == PERSISTENCE:
            return None
        return self.log_p(window) - smoothed(window[-1], self.alpha)

    def describe(self) -> str:
        lam = "" if self.lam is None else f", λ = {self.lam:.2f}"
        fit = ("not fitted (no training forecast)" if np.isnan(self.train_ppl)
               else f"training PPL {self.train_ppl:.2f}")
        return f"{self.name} (α = {self.alpha:g}{lam}; {fit})"


def _candidates(name: str) -> list[StationaryFit]:
    if name == MEAN_REVERSION:
        return [StationaryFit(name, a, lam) for a in ALPHA_GRID for lam in LAMBDA_GRID]
    return [StationaryFit(name, a) for a in ALPHA_GRID]


def fit_stationary(counts: Mapping[str, np.ndarray], train_periods: Sequence[str],
                   window: int) -> dict[str, StationaryFit]:
    """Every stationary baseline fitted on ``train_periods`` (module doc); ``counts`` per period
    label (only training periods are read)."""
    targets = fit_targets(train_periods, window)
    if not targets:
        return {PERSISTENCE: StationaryFit(PERSISTENCE, 1.0), POOLED: StationaryFit(POOLED, 1.0)}
    cases = [(np.asarray(counts[t], dtype=np.float64),
              [counts[h] for h in history_periods(t, window)]) for t in targets]
    n_tokens = sum(c.sum() for c, _ in cases)
    fits = {}
    for name in STATIONARY:
        scored = [(perplexity(sum(-(c @ f.log_p(w)) for c, w in cases) / n_tokens), i, f)
                  for i, f in enumerate(_candidates(name))]
        ppl, _, best = min(scored, key=lambda x: (x[0], x[1]))
        fits[name] = StationaryFit(name, best.alpha, best.lam, float(ppl), tuple(targets))
    return fits


def best_stationary(fits: Mapping[str, StationaryFit]) -> str:
    """The baseline with the lowest training perplexity (the pooled past when none was fitted)."""
    fitted = [n for n in STATIONARY if n in fits and not np.isnan(fits[n].train_ppl)]
    if not fitted:
        return POOLED
    return min(fitted, key=lambda n: (fits[n].train_ppl, STATIONARY.index(n)))
