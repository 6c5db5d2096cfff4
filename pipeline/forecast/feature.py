"""A forecaster's prediction of one period as a history feature of the future LM (``forecasts``).

The ``forecast`` variant's bias reads ``\\hat{log f}_{i,w}``, a forecaster's predicted log
frequency of word w in the target period i (``docs/equations.md``). :func:`forecast_feature`
makes it from the frequency files of the periods before i only, so nothing of period i's text
reaches it: an *expanding window*, every period from ``first`` to i−1
(:func:`fit_frequencies`). The stage graph picks ``first`` among the periods it already counts
frequencies for (:meth:`pipeline.graph.plan.Plan.forecast_fit_periods`: the contiguous run of
them ending at i−1, the latest ``variants.forecast.fit_periods`` of them if that is set), so the
feature adds no frequency stage.

The frequency files hold token counts, not document counts: a forecaster that reads document
shares (``learned``) sees the token counts in their place (``doc_counts`` = counts, ``n_docs`` =
the period's token count). The setting of the forecaster's grid is chosen as the backtest engine
chooses it (:mod:`pipeline.forecast.rolling`), on earlier origins only, with the fitted span's
own periods as the origins: the setting with the lowest pooled NLL per token of each period of
the span forecast from the ones before it (from its first onwards); the grid's first (the
engine's fallback) where the span has no such period (no more than the forecaster's
``min_periods``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.corpus.periods import ordinal, shift, span
from pipeline.features.frequencies import PeriodFrequencies, read_period
from pipeline.forecast.forecasters.base import Forecaster, PeriodCounts
from pipeline.infra.errors import UserError


def period_counts(freqs: Sequence[PeriodFrequencies]) -> PeriodCounts:
    """The forecasters' input from consecutive periods' frequency files, oldest first."""
    return PeriodCounts.of_token_counts([f.period for f in freqs], [f.counts for f in freqs])


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


def fit_frequencies(frequencies_dir: str | os.PathLike[str], period: str,
                    first: str) -> list[PeriodFrequencies]:
    """The frequency files of every period from ``first`` to the one before ``period``, oldest
    first: what its forecast is fitted on (the expanding window, module doc). ``first`` not
    before ``period``, a missing file or a mix of tokenizers is a :class:`UserError` naming the
    stage that recomputes it."""
    try:
        before = ordinal(first) < ordinal(period)
        periods = span(first, shift(period, -1)) if before else []
    except ValueError as err:
        raise UserError(f"the forecast of {period} cannot be fitted from {first}: {err}",
                        fix="pass periods of one kind") from None
    if not periods:
        raise UserError(f"the forecast of {period} is fitted on earlier periods only, but its "
                        f"fitted span starts at {first}", fix=f"pass a period before {period}")
    freqs = []
    for p in periods:
        path = Path(frequencies_dir) / f"{p}.parquet"
        if not path.exists():
            raise UserError(f"the frequencies of {p} are missing: the forecast of {period} is "
                            "fitted on them", path=path, fix=f"run `dvc repro frequencies@{p}`")
        freqs.append(read_period(path))
    if len({(f.tokenizer_id, f.vocab_size) for f in freqs}) != 1:
        raise UserError(f"the frequency files the forecast of {period} is fitted on were counted "
                        "with different tokenizers", path=frequencies_dir,
                        fix="recompute them: `dvc repro " + " ".join(
                            f"frequencies@{f.period}" for f in freqs) + "`")
    return freqs
