"""``reports/forecast.md``: every model's forecast of the next period, and how such forecasts did.

Reads the forecast stage's folders (``<forecasts>/<variant>-s<seed>/``, :mod:`pipeline.forecast.vocabulary`)
and the observed per-period counts (frequency files), and builds:

- **backtests** for each period with known text: every forecaster's unigram perplexity of the
  period's documents against each stationary baseline (family ``forecast-vocabulary``), and
  every predicted change (from half A of Y−1) against the change observed against half B (family
  ``forecast-trend``), resampled by document and judged by :mod:`pipeline.stats.verdict`; the
  records go to the JSON output under ``"verdicts"`` (:mod:`pipeline.forecast.claims`,
  :mod:`pipeline.reports.forecast_backtests`);
- the **forecast**: each model's top rising and falling whole words (:func:`pipeline.forecast.vocabulary.rank_terms`)
  with their observed counts in the history periods, and a few generated abstracts.

With several seeds a variant's metric is the mean over its seeds (per bootstrap replicate too)
and its ranking uses the mean predicted change. Periods are labels (``2024``, ``2024H1``,
``2024Q3``, ``2024-07``; :mod:`pipeline.corpus.periods`): the period before ``Y`` is
``shift(Y, -1)`` (across year boundaries), tables and plots list periods in time order, and the
text names the kind's noun ("year", "half-year", ...), which for years reads as it always did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from pipeline.corpus.periods import NOUN, in_time_order, kind_of, ordinal, shift
from pipeline.forecast import backtest as bt
from pipeline.forecast.vocabulary import rank_terms
from pipeline.features.frequencies import PeriodFrequencies
from pipeline.forecast.documents import PeriodDocuments
from pipeline.reports.forecast_inputs import ModelForecast
from pipeline.features.windows import history_periods
from pipeline.models.registry import display_name, lookup
from pipeline.forecast.fits import Fit, window_counts
from pipeline.reports.forecast_backtests import (backtest, backtest_markdown, fit, fit_metrics,
                                                 fit_text)
from pipeline.stats.verdict import judge, to_records

TOP_TERMS = 30
N_EXAMPLES = 3


def term_tables(delta: np.ndarray, eligible: np.ndarray, words: Sequence[str],
                history: dict[str, PeriodFrequencies], k: int = TOP_TERMS) -> dict[str, pd.DataFrame]:
    """``{"rising": ..., "falling": ...}``: rank, word, token_id, ``delta`` (Δ̂) and the observed
    count in each history period (``count_<label>``, time order)."""
    out = {}
    for name, ids in zip(("rising", "falling"), rank_terms(delta, eligible, k)):
        frame = pd.DataFrame({"rank": np.arange(1, len(ids) + 1), "word": [words[i] for i in ids],
                              "token_id": ids, "delta": delta[ids]})
        for p in in_time_order(history):
            frame[f"count_{p}"] = history[p].counts[ids]
        out[name] = frame
    return out


def terms_markdown(tables: dict[str, pd.DataFrame]) -> str:
    rising, falling = tables["rising"], tables["falling"]
    counts = [c for c in rising.columns if c.startswith("count_")]
    periods = ", ".join(c[len("count_"):] for c in counts)
    lines = [f"| # | rising | Δ̂ | counts {periods} | falling | Δ̂ | counts {periods} |",
             "|---:|---|---:|---:|---|---:|---:|"]

    def side(frame: pd.DataFrame, i: int) -> list[str]:
        if i >= len(frame):
            return ["", "", ""]
        r = frame.iloc[i]
        return [f"`{r['word']}`", f"{r['delta']:+.3f}", ", ".join(str(int(r[c])) for c in counts)]

    for i in range(max(len(rising), len(falling))):
        lines.append(f"| {i + 1} | " + " | ".join(side(rising, i) + side(falling, i)) + " |")
    return "\n".join(lines)


def examples_markdown(forecasts: dict[tuple[str, int], ModelForecast], variants: Sequence[str],
                      seed: int, n: int = N_EXAMPLES) -> str:
    parts = []
    for v in variants:
        gen = forecasts[(v, seed)].generations.sort_values("index").head(n)
        parts.append(f"**{display_name(v)}**\n")
        parts += [f"{row.index + 1}. {row.text.replace(chr(10), ' ')}" for row in gen.itertuples()]
        parts.append("")
    return "\n".join(parts)


def _riser_panel(tables: dict[str, pd.DataFrame], delta: np.ndarray,
                 freqs: dict[str, PeriodFrequencies], period: str, n: int) -> pd.DataFrame:
    """Observed log frequency of the top ``n`` risers in every period of ``freqs`` before
    ``period`` (time order), and the forecast ``log f_{Y-1} + Δ̂`` at ``period``."""
    rows = []
    for r in tables["rising"].head(n).itertuples():
        for p in in_time_order(freqs):
            if ordinal(p) < ordinal(period):
                rows.append({"word": r.word, "period": p, "value": freqs[p].log_freq[r.token_id],
                             "forecast": False})
        rows.append({"word": r.word, "period": period, "forecast": True,
                     "value": freqs[shift(period, -1)].log_freq[r.token_id] + delta[r.token_id]})
    return pd.DataFrame(rows, columns=["word", "period", "value", "forecast"])


def render(forecasts: dict[tuple[str, int], ModelForecast], variants: Sequence[str],
           seeds: Sequence[int], period: str, backtest_periods: Sequence[str],
           freqs: dict[str, PeriodFrequencies], content: np.ndarray, whole_word: np.ndarray,
           words: Sequence[str], window: int, figure: str | None = None, plot_words: int = 5,
           train_periods: Sequence[str] = (),
           documents: Mapping[str, PeriodDocuments] | None = None, dev_period: str | None = None
           ) -> tuple[str, dict, dict[str, pd.DataFrame]]:
    """The Markdown report, its JSON numbers (with the verdict records under ``"verdicts"``) and
    the risers plot's panels (forecaster -> frame); ``figure``: the plot's path relative to the
    report, linked when given. ``documents``: the tokenized documents of every backtest period
    and of the period before it (:class:`pipeline.forecast.documents.PeriodDocuments`).
    ``train_periods``: the only periods the stationary baselines' smoothing is fitted on; with
    ``dev_period`` they are what the models' training read (no tested trend claim after them)."""
    noun = NOUN[kind_of(period)]
    backtest_periods = in_time_order(backtest_periods)
    fits = fit(freqs, train_periods, window)
    metrics: dict = {"forecast_period": period, "stationary": fit_metrics(fits),
                     "backtests": {}, "verdicts": []}
    parts = _intro(period, window, noun)
    if backtest_periods:
        if documents is None:
            raise ValueError("backtests need the documents of each backtest period")
        parts += _backtests_intro(seeds, noun) + ["", fit_text(fits, noun)]
    for by in backtest_periods:
        read = [*train_periods, *([dev_period] if dev_period else [])]
        result = backtest(forecasts, variants, seeds, by, freqs, documents, content, window, fits,
                          read)
        judged = judge(result.claims)
        metrics["verdicts"] += to_records(judged)
        metrics["backtests"][by] = {"reference": result.reference, "n_trend": result.n_trend,
                                    "n_documents": documents[by].n_documents,
                                    "n_half_documents": list(result.n_documents),
                                    "vocabulary": result.vocabulary, "trend": result.trend}
        history = history_periods(by, window)
        parts += ["", f"### {by}", "", f"Forecasts from {history[0]}..{history[-1]}; "
                  f"{documents[by].n_documents} documents of {by}, halves A/B of "
                  f"{shift(by, -1)}: {result.n_documents[0]}/{result.n_documents[1]} documents.",
                  "", *backtest_markdown(result, judged)]
    forecast_parts, panels = _forecast_section(forecasts, variants, seeds, period, freqs, fits,
                                               whole_word, words, window, figure, plot_words)
    parts += forecast_parts
    parts += ["", f"## Generated abstracts for {period} (seed {seeds[0]})", "",
              examples_markdown(forecasts, variants, seeds[0])]
    return "\n".join(parts).rstrip() + "\n", _json_safe(metrics), panels


def _json_safe(value: object) -> object:
    """NaN as None, numpy scalars as Python numbers (valid, plain JSON)."""
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return None if np.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def _intro(period: str, window: int, noun: str = "year") -> list[str]:
    return [f"# Forecasting {period}: vocabulary, rising terms and abstracts", "",
            "Generated by the `forecast_report` stage from `data/forecast/`; do not edit by hand.",
            "", f"Each model's predicted vocabulary of {noun} Y is the mean of its next-token "
            f"distribution, with {noun} Y's temporal bias (history "
            f"Y−{window}..Y−1), over every position of the abstracts of Y−1 read as context. "
            "The predicted change of a token is log p̂_Y − log p̂'_{Y−1}, the same model on the "
            "same contexts with the bias of Y−1: what the history says will change (0 for "
            "Baseline, which has none). Persistence forecasts Y−1's distribution, the pooled "
            f"past the summed counts of the last {window} {noun}s, mean reversion shrinks Y−1's "
            f"log frequencies toward their mean over the last {window} {noun}s (all three "
            "smoothed by a rule fitted on training periods); linear extrapolation fits each "
            f"token's log frequency over the last {window} {noun}s; each temporal model's "
            "history-adjusted persistence multiplies Y−1's distribution by the model's "
            "exp(predicted change). Definitions: `pipeline/forecast/vocabulary.py`, "
            "`pipeline/forecast/forecasters/`, `pipeline/forecast/fits.py`."]


def _backtests_intro(seeds: Sequence[int], noun: str = "year") -> list[str]:
    return ["", "## Backtests: how good were such forecasts?", "",
            f"Unigram PPL = exp(cross-entropy of the {noun}'s tokens under the forecast); lower "
            "is better. Every forecaster is compared with **each stationary baseline** "
            "(persistence, the pooled past, mean reversion, each smoothed by a rule fitted on the "
            "training periods): a forecaster has *temporal skill* only where it is better than "
            "all of them; the test is a paired t over **documents** (a model's seeds add their "
            "run-to-run spread: Welch's t). Trend detection: each forecaster's predicted change "
            "(scaled to its sampling noise: times the square root of the token's half-A count), "
            f"computed with the {noun} before Y reduced to its half A of documents, against the "
            "standardised change of each word's document frequency from its half B to Y, over "
            f"the content tokens seen ≥ {bt.MIN_COUNT} times in half A: predictor and "
            "observation share no document and the words are not chosen on the observed counts, "
            "so chance is ρ = 0. Two tests with the **word** as the unit: Spearman ρ over every "
            "trend token, and the precision of the top-k predicted risers among the top-k "
            "observed ones (k = 1 % of the trend tokens, at least 10) against chance k/n "
            "(exact hypergeometric test). A model whose training read Y−1 has seen half B: its "
            "trend claims are untested. Holm within each family and period; MDE: the smallest "
            "effect each test would find with 80 % power. Models: one forecast per seed (seeds "
            + ", ".join(map(str, seeds)) + "); a model with fewer than 3 seeds is untested "
            "(its run-to-run spread is unknown). False-positive rates and coverage of these "
            "tests: `reports/calibration.json`. Records: `reports/forecast.json`, `verdicts`."]


def _forecast_section(forecasts: dict[tuple[str, int], ModelForecast], variants: Sequence[str],
                      seeds: Sequence[int], period: str, freqs: dict[str, PeriodFrequencies],
                      fits: Mapping[str, Fit], whole_word: np.ndarray, words: Sequence[str],
                      window: int, figure: str | None, plot_words: int
                      ) -> tuple[list[str], dict[str, pd.DataFrame]]:
    """The rising and falling terms of each forecaster with a history (the count forecasters
    that are not stationary, then the temporal models), and the plot's panels."""
    hist_periods = list(history_periods(period, window))
    history = {p: freqs[p] for p in hist_periods}
    before = shift(period, -1)
    last = freqs[before]
    past = window_counts({p: freqs[p].counts for p in hist_periods}, period, window)
    deltas: dict[str, np.ndarray] = {}
    for name, f in fits.items():
        change = None if f.stationary else f.change(past)
        if change is not None:
            deltas[name] = change
    for v in variants:
        if lookup(v).temporal:
            deltas[display_name(v)] = np.mean([forecasts[(v, s)].delta(period)[:last.vocab_size]
                                               for s in seeds], axis=0)
    static = [display_name(v) for v in variants if not lookup(v).temporal]
    parts = ["", f"## The forecast for {period}", "",
             f"Top {TOP_TERMS} rising and falling whole words by predicted change (mean over "
             f"seeds), with their observed counts in {hist_periods[0]}-{hist_periods[-1]}. A whole "
             "word is a content token (the CPL filter) that starts a word and, in the abstracts "
             f"of {before}, usually ends it."
             + (f" {', '.join(static)}: no list, no history means no predicted change." if static
                else "")]
    if figure:
        parts += ["", f"![Top risers: observed log frequency and forecast (dashed)]({figure})"]
    panels = {}
    for name, delta in deltas.items():
        tables = term_tables(delta, whole_word, words, history)
        panels[name] = _riser_panel(tables, delta, freqs, period, plot_words)
        parts += ["", f"### {name}", "", terms_markdown(tables)]
    return parts, panels
