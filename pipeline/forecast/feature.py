"""A forecaster's prediction of one period as a history feature of the future LM (``forecasts``).

The ``forecast`` variant's bias reads ``\\hat{log f}_{i,w}``, a forecaster's predicted log
frequency of word w in the target period i (``docs/equations.md``). :func:`forecast_feature`
makes it from the frequency files of the periods before i only — the target's history window,
the periods its frequency history is made of — so nothing of period i's text reaches it.

The frequency files hold token counts, not document counts: a forecaster that reads document
shares (``learned``) sees the token counts in their place (``doc_counts`` = counts, ``n_docs`` =
the period's token count). The setting of the forecaster's grid is chosen as the backtest engine
chooses it (:mod:`pipeline.forecast.rolling`), on earlier origins only, with the window's own
periods as the origins: the setting with the lowest pooled NLL per token of each period of the
window forecast from the ones before it; the grid's first (the engine's fallback) where the
window has no such period.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.features.frequencies import PeriodFrequencies, read_period
from pipeline.features.windows import history_periods
from pipeline.forecast.forecasters.base import Forecaster, PeriodCounts
from pipeline.infra.errors import UserError


def period_counts(freqs: Sequence[PeriodFrequencies]) -> PeriodCounts:
    """The forecasters' input from consecutive periods' frequency files, oldest first."""
    counts = np.stack([f.counts for f in freqs]).astype(np.int64)
    return PeriodCounts(tuple(f.period for f in freqs), counts, counts.copy(),
                        counts.sum(axis=1).astype(np.int64))


def chosen_setting(forecaster: Forecaster, past: PeriodCounts) -> Mapping[str, Any]:
    """The setting of ``forecaster``'s grid with the lowest pooled NLL per token over the origins
    inside ``past`` (module doc); ties and no origin: the earliest in the grid."""
    grid = forecaster.grid()
    origins = range(forecaster.min_periods, past.n_periods)
    if len(grid) == 1 or not origins:
        return grid[0]
    tokens = float(sum(past.counts[t].sum() for t in origins))
    nll = [-sum(float(past.counts[t] @ forecaster.forecast(past.until(t), 1, setting))
                for t in origins) / max(tokens, 1.0) for setting in grid]
    return grid[int(np.argmin(nll))]


def forecast_feature(forecaster: Forecaster, freqs: Sequence[PeriodFrequencies]
                     ) -> tuple[np.ndarray, Mapping[str, Any]]:
    """float64 ``[|V|]`` log-probabilities of the period after ``freqs`` (consecutive periods,
    oldest first) and the setting they were made with."""
    past = period_counts(freqs)
    forecaster.check(past, 1)
    setting = chosen_setting(forecaster, past)
    return np.asarray(forecaster.forecast(past, 1, setting), dtype=np.float64), setting


def window_frequencies(frequencies_dir: str | os.PathLike[str], period: str,
                       window: int) -> list[PeriodFrequencies]:
    """The frequency files of ``period``'s history window (``window`` periods before it, oldest
    first): what its forecast is fitted on. A missing file or a mix of tokenizers is a
    :class:`UserError` naming the stage that recomputes it."""
    freqs = []
    for p in history_periods(period, window):
        path = Path(frequencies_dir) / f"{p}.parquet"
        if not path.exists():
            raise UserError(f"the frequencies of {p} are missing: the forecast of {period} is "
                            "fitted on them", path=path, fix=f"run `dvc repro frequencies@{p}`")
        freqs.append(read_period(path))
    if len({(f.tokenizer_id, f.vocab_size) for f in freqs}) != 1:
        raise UserError(f"the frequency files of {period}'s window were counted with different "
                        "tokenizers", path=frequencies_dir,
                        fix="recompute them: `dvc repro " + " ".join(
                            f"frequencies@{f.period}" for f in freqs) + "`")
    return freqs
