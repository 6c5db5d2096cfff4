"""The one interface between forecasters and the engine that backtests them.

:class:`PeriodCounts` is all a forecaster reads: counts by period, time order. The engine hands a
forecaster ``data.until(end)``, so a forecast cannot see the period it predicts, nor any later one.
:class:`Forecaster` maps that past, a horizon and one setting of its grid to normalised, finite
log-probabilities over the whole vocabulary (smoothed: a word unseen so far still gets mass, as
the held-out documents it is scored on may hold it). The engine chooses the setting per origin on
earlier origins only, so a forecaster never tunes itself on what it is scored on.

Two backtests read the registry (:data:`BACKTESTS`): the forecast report's backtest periods
(``reports/forecast.md``; :mod:`pipeline.forecast.fits` fits one setting per forecaster on the
training periods, from :meth:`Forecaster.fit_grid`) and the rolling-origin skill report
(:mod:`pipeline.forecast.rolling`, from :meth:`Forecaster.grid`). A forecaster enters both unless
its ``backtests`` names fewer.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from pipeline.forecast.stationary import ALPHA_GRID, smoothed
from pipeline.infra.errors import UserError

KINDS: tuple[str, ...] = ("stationary", "trend", "learned")
# "forecast": the backtest periods of reports/forecast.md; "forecast-skill": the rolling origins.
BACKTESTS: tuple[str, ...] = ("forecast", "forecast-skill")
# The skill report only: the forecasters added with the rolling backtests stay out of
# reports/forecast.md, whose claims (Holm within each period, against every stationary reference)
# are recorded across runs (reports/anthology); entering it would change all of them at once.
SKILL_ONLY: frozenset[str] = frozenset({"forecast-skill"})
# The key of a setting that names which of a forecaster's fits it asks for (Forecaster.fits).
FIT = "fit"
# The frequency features' add-one rule: the smoothing where no earlier origin chose one, so it
# leads every grid over α (the engine falls back to a grid's first entry).
DEFAULT_ALPHA = 1.0


@dataclass(frozen=True)
class PeriodCounts:
    """Token counts of a corpus by period, the only input a forecaster reads."""

    periods: tuple[str, ...]      # labels, time order, consecutive periods of one kind
    counts: np.ndarray            # int64 [n_periods, V]: occurrences of each token id
    doc_counts: np.ndarray        # int64 [n_periods, V]: documents holding each token id
    n_docs: np.ndarray            # int64 [n_periods]

    def __post_init__(self) -> None:
        n = len(self.periods)
        if self.counts.ndim != 2 or self.counts.shape[0] != n:
            raise ValueError(f"counts must be [n_periods={n}, V], got {self.counts.shape}")
        if self.doc_counts.shape != self.counts.shape:
            raise ValueError(f"doc_counts {self.doc_counts.shape} must match counts "
                             f"{self.counts.shape}")
        if self.n_docs.shape != (n,):
            raise ValueError(f"n_docs must be [n_periods={n}], got {self.n_docs.shape}")

    @property
    def n_periods(self) -> int:
        return len(self.periods)

    @property
    def vocab_size(self) -> int:
        return int(self.counts.shape[1])

    def until(self, end: int) -> PeriodCounts:
        """Rows ``[0, end)``: what a forecast made after period ``end − 1`` may read."""
        if not 0 < end <= self.n_periods:
            raise ValueError(f"end must lie in 1..{self.n_periods}, got {end}")
        return PeriodCounts(self.periods[:end], self.counts[:end], self.doc_counts[:end],
                            self.n_docs[:end])

    @classmethod
    def of_token_counts(cls, periods: Sequence[str], counts: Sequence[np.ndarray]) -> PeriodCounts:
        """Consecutive periods' token counts (oldest first) where no document counts exist (the
        frequency files): ``doc_counts`` are the token counts and ``n_docs`` each period's
        token total, so a forecaster reading document shares sees token shares in their place."""
        matrix = np.stack([np.asarray(c) for c in counts]).astype(np.int64)
        return cls(tuple(periods), matrix, matrix.copy(), matrix.sum(axis=1).astype(np.int64))


class Forecaster(ABC):
    """A forecast of one future period's unigram distribution from the counts of past periods."""

    name: ClassVar[str]           # registry name, e.g. "persistence", "damped-trend"
    kind: ClassVar[str]           # "stationary" | "trend" | "learned"
    description: ClassVar[str]    # one line for the report
    min_periods: ClassVar[int]    # the fewest past periods it needs
    # The backtests it enters (a subset of BACKTESTS); a new forecaster enters every one.
    backtests: ClassVar[frozenset[str]] = frozenset(BACKTESTS)
    # Its name in reports/forecast.md where that differs from `name`: the forecasters that were
    # in that report before the registry keep the names its recorded claims use.
    title: ClassVar[str] = ""
    # How many independent fits its claims read: a forecast that depends on a seed (a learned
    # regressor's sample) is forecast once per fit, as a trained model has runs, and its tests
    # take in the fit-to-fit spread; 1: the forecast is one function of the past.
    fits: ClassVar[int] = 1

    @property
    def report_name(self) -> str:
        """The name its claims carry in ``reports/forecast.md``."""
        return self.title or self.name

    def grid(self) -> list[Mapping[str, Any]]:
        """Candidate settings (``[{}]``: none), in order; the engine picks one per origin on
        earlier origins only and falls back to the first where none is earlier."""
        return [{}]

    def fit_grid(self) -> list[Mapping[str, Any]]:
        """The settings the forecast report chooses from, once, on the training periods
        (:mod:`pipeline.forecast.fits`; ties: the earlier entry). One fit is cheap where the
        rolling engine forecasts every setting at every origin, so a forecaster may search a
        finer grid here; by default the engine's :meth:`grid`."""
        return self.grid()

    def fit_settings(self, setting: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """``setting`` once per fit (:attr:`fits`), each naming its fit's index under
        :data:`FIT`; ``[setting]`` itself for a forecaster of one fit."""
        return [setting] if self.fits == 1 else [{**setting, FIT: k} for k in range(self.fits)]

    def unfitted(self) -> Mapping[str, Any] | None:
        """The setting the forecast report uses where no training forecast can fit one; None
        leaves the forecaster out there (a setting it would only be guessing)."""
        return self.fit_grid()[0]

    @abstractmethod
    def forecast(self, past: PeriodCounts, horizon: int, setting: Mapping[str, Any]) -> np.ndarray:
        """float64 [V] log-probabilities (normalised, finite: smoothed) of the period `horizon`
        steps after past's last period, reading only `past`."""

    def check(self, past: PeriodCounts, horizon: int) -> None:
        """Raise a :class:`UserError` unless ``past`` is long enough and ``horizon`` ≥ 1."""
        if horizon < 1:
            raise UserError(f"forecaster {self.name!r}: horizon must be >= 1, got {horizon}")
        if past.n_periods < self.min_periods:
            raise UserError(
                f"forecaster {self.name!r} needs at least {self.min_periods} past periods, "
                f"got {past.n_periods} ({', '.join(past.periods) or 'none'})",
                fix="start the forecasts later or give the corpus more periods")

    def change(self, past: PeriodCounts, horizon: int,
               setting: Mapping[str, Any]) -> np.ndarray | None:
        """float64 ``[V]``: the forecast minus persistence of ``past``'s last period (add-α with
        the setting's α, else add-one), the change the trend claims rank; None where it is the
        same for every word (persistence predicts no change)."""
        log_p = np.asarray(self.forecast(past, horizon, setting), dtype=np.float64)
        change = log_p - smoothed(past.counts[-1], float(setting.get("alpha", DEFAULT_ALPHA)))
        return None if np.ptp(change) < 1e-12 else change


def log_normalise(values: np.ndarray) -> np.ndarray:
    """``values − log Σ exp(values)`` float64 ``[V]``: unnormalised log-weights to log-probs."""
    values = np.asarray(values, dtype=np.float64)
    shifted = values - values.max()
    return shifted - np.log(np.exp(shifted).sum())


def alpha_grid() -> list[dict[str, Any]]:
    """The stationary baselines' add-α grid, :data:`DEFAULT_ALPHA` first."""
    return [{"alpha": a} for a in (DEFAULT_ALPHA, *(a for a in ALPHA_GRID if a != DEFAULT_ALPHA))]


def log_frequency_series(counts: np.ndarray, alpha: float) -> np.ndarray:
    """float64 ``[n_periods, V]``: each period's add-α smoothed log frequencies, the series the
    trend and learned forecasters extrapolate (finite for words a period lacks)."""
    return np.stack([smoothed(row, alpha) for row in counts])
