"""``reports/forecast.md``: every model's forecast of the next period, and how such forecasts did.

Reads the forecast stage's folders (``<forecasts>/<variant>-s<seed>/``, :mod:`pipeline.forecast.vocabulary`)
and the observed per-period counts (frequency files), and builds:

- **backtests** for each period with known text: the unigram perplexity of the period's tokens under
  each forecast, and trend detection (Spearman ρ, precision@50) against what happened
  (:mod:`pipeline.forecast.backtest`), for the LMs beside persistence, linear extrapolation, mean
  reversion (strength fitted on the training periods) and each temporal model's history-adjusted
  persistence, with bootstrap 95 % intervals, every forecaster ranked by PPL and by ρ, and plain
  verdicts: which forecasters beat persistence, and whether each temporal model does
  (tables: :mod:`pipeline.reports.forecast_backtests`);
- the **forecast**: each model's top rising and falling whole words (:func:`pipeline.forecast.vocabulary.rank_terms`)
  with their observed counts in the history periods, and a few generated abstracts.

With several seeds a variant's metric is the mean over its seeds (per bootstrap replicate too)
and its ranking uses the mean predicted change. Periods are labels (``2024``, ``2024H1``,
``2024Q3``, ``2024-07``; :mod:`pipeline.corpus.periods`): the period before ``Y`` is
``shift(Y, -1)`` (across year boundaries), tables and plots list periods in time order, and the
text names the kind's noun ("year", "half-year", ...), which for years reads as it always did.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.corpus.by_period import missing_feature_fix
from pipeline.corpus.periods import NOUN, in_time_order, kind_of, ordinal, shift
from pipeline.forecast import backtest as bt
from pipeline.infra.errors import UserError
from pipeline.forecast.vocabulary import linear_extrapolation, rank_terms
from pipeline.features.frequencies import PeriodFrequencies, read_period
from pipeline.features.windows import history_periods
from pipeline.infra.io import read_json, read_parquet
from pipeline.infra.runs import run_name
from pipeline.models.registry import display_name, lookup
from pipeline.reports.forecast_backtests import (LINEAR, PERSISTENCE, backtest,
                                                 backtest_markdown, backtest_metrics,
                                                 beats_persistence, fit_reversion,
                                                 reversion_metrics, winners_markdown)

TOP_TERMS = 30
N_EXAMPLES = 3


@dataclass(frozen=True)
class ModelForecast:
    variant: str
    seed: int
    info: dict
    vocab: dict[str, pd.DataFrame]
    generations: pd.DataFrame

    def delta(self, period: str) -> np.ndarray:
        frame = self.vocab[period]
        return (frame["log_prob"] - frame["log_prob_prev"]).to_numpy()


def load_forecasts(folder: str | os.PathLike[str], variants: Sequence[str],
                   seeds: Sequence[int]) -> dict[tuple[str, int], ModelForecast]:
    out = {}
    for v in variants:
        for s in seeds:
            run = run_name(v, s)
            path = Path(folder) / run
            if not (path / "forecast.json").exists():
                raise UserError(f"the forecast of {v} seed {s} is missing", path=path,
                                fix=f"run `dvc repro forecast-{run}`")
            info = read_json(path / "forecast.json")
            if "periods" not in info:
                raise UserError("forecast.json predates periods (no `periods`)", path=path,
                                fix=f"re-run `dvc repro forecast-{run}`")
            periods = in_time_order(info["periods"])
            out[(v, s)] = ModelForecast(
                v, s, info, {p: read_parquet(path / f"vocab_{p}.parquet") for p in periods},
                read_parquet(path / f"generations_{info['forecast_period']}.parquet"))
    return out


def read_frequencies(folder: str | os.PathLike[str], periods: Sequence[str],
                     purpose: str) -> dict[str, PeriodFrequencies]:
    """The frequency files of ``periods`` (labels), in time order; a missing one is a UserError
    naming it and ``purpose``."""
    out = {}
    for p in in_time_order(periods):
        path = Path(folder) / f"{p}.parquet"
        if not path.exists():
            raise UserError(f"{purpose} needs the observed counts of {p}", path=path,
                            fix=missing_feature_fix(f"frequencies@{p}"))
        out[p] = read_period(path)
    return out


def _interval(lo: float, hi: float, digits: int) -> str:
    """``95 % CI [lo, hi]``, or why there is none (the table prints "—" for the same NaN)."""
    if np.isfinite(lo) and np.isfinite(hi):
        return f"95 % CI [{lo:+.{digits}f}, {hi:+.{digits}f}]"
    return "no 95 % CI: too few documents to resample"


def verdicts(table: pd.DataFrame, variants: Sequence[str], period: str) -> list[str]:
    """Plain sentences: does each temporal model beat persistence (vocabulary error) and detect
    trends (ρ > 0) in ``period``, by its 95 % interval?"""
    lines = []
    rows = table.set_index("forecaster")
    pers = rows.loc[PERSISTENCE, "unigram_ppl"]
    for v in variants:
        if not lookup(v).temporal:
            continue
        r = rows.loc[display_name(v)]
        beats = r["vs_persistence_hi"] < 0
        word = "beats" if beats else "does **not** beat"
        lines.append(f"- {period}: {display_name(v)} {word} persistence on vocabulary forecast error "
                     f"(unigram PPL {r['unigram_ppl']:.1f} vs {pers:.1f}; difference "
                     f"{r['vs_persistence']:+.1f}, "
                     f"{_interval(r['vs_persistence_lo'], r['vs_persistence_hi'], 1)}).")
        if np.isnan(r["rho"]):
            lines.append(f"- {period}: {display_name(v)} predicts no change in any trend token.")
        else:
            found = ("detects trends" if r["rho_lo"] > 0 else
                     "ranks trends in the **wrong direction**" if r["rho_hi"] < 0 else
                     "does **not** reliably detect trends")
            lines.append(f"- {period}: {display_name(v)} {found} (Spearman ρ {r['rho']:+.3f}, "
                         f"{_interval(r['rho_lo'], r['rho_hi'], 3)}; persistence predicts "
                         "no change).")
    return lines


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
           train_periods: Sequence[str] = ()) -> tuple[str, dict, dict[str, pd.DataFrame]]:
    """The Markdown report, its DVC metrics and the risers plot's panels (forecaster -> frame);
    ``figure``: the plot's path relative to the report, linked when given. Backtests run in
    time order. ``train_periods``: the training periods, the only ones the mean-reverting
    forecaster's strength is fitted on (their frequencies must be in ``freqs``); without them
    (or with too few for one forecast inside them) that forecaster is left out, saying why."""
    noun = NOUN[kind_of(period)]
    reversion, reversion_text = fit_reversion(freqs, train_periods, window, noun)
    metrics: dict = {"forecast_period": period, "mean_reversion": reversion_metrics(reversion),
                     "backtests": {}, "beats_persistence": {}}
    parts = _intro(period, window, noun)
    backtest_periods = in_time_order(backtest_periods)
    if backtest_periods:
        parts += _backtests_intro(seeds, noun) + ["", reversion_text]
    for by in backtest_periods:
        table = backtest(forecasts, variants, seeds, by, freqs, content, window, reversion)
        metrics["backtests"][by] = backtest_metrics(table)
        metrics["beats_persistence"][by] = beats_persistence(table)
        parts += _backtest_section(table, variants, by, window)
    forecast_parts, panels = _forecast_section(forecasts, variants, seeds, period, freqs,
                                               whole_word, words, window, figure, plot_words)
    parts += forecast_parts
    parts += ["", f"## Generated abstracts for {period} (seed {seeds[0]})", "",
              examples_markdown(forecasts, variants, seeds[0])]
    return "\n".join(parts).rstrip() + "\n", metrics, panels


def _intro(period: str, window: int, noun: str = "year") -> list[str]:
    return [f"# Forecasting {period}: vocabulary, rising terms and abstracts", "",
            "Generated by the `forecast_report` stage from `data/forecast/`; do not edit by hand.",
            "", f"Each model's predicted vocabulary of {noun} Y is the mean of its next-token "
            f"distribution, with {noun} Y's temporal bias (history "
            f"Y−{window}..Y−1), over every position of the abstracts of Y−1 read as context. "
            "The predicted change of a token is log p̂_Y − log p̂'_{Y−1}, the same model on the "
            "same contexts with the bias of Y−1: what the history says will change (0 for "
            "Baseline, which has none). Persistence forecasts Y−1's smoothed unigram "
            f"distribution; linear extrapolation fits each token's log frequency over the last "
            f"{window} {noun}s; mean reversion shrinks Y−1's log frequencies toward their mean "
            f"over the last {window} {noun}s; each temporal model's history-adjusted persistence "
            "multiplies Y−1's distribution by the model's exp(predicted change). Definitions: "
            "`pipeline/forecast/vocabulary.py`, `pipeline/forecast/baselines.py`, "
            "`pipeline/forecast/backtest.py`."]


def _backtests_intro(seeds: Sequence[int], noun: str = "year") -> list[str]:
    return ["", "## Backtests: how good were such forecasts?", "",
            f"Unigram PPL = exp(cross-entropy of the {noun}'s observed tokens under the "
            "forecast); lower is better. Trend detection over the content tokens seen ≥ "
            f"{bt.MIN_COUNT} times in both the {noun} and the one before: Spearman ρ between "
            f"predicted and observed change in log frequency, and precision@{bt.TOP_K} of the "
            f"predicted top risers among the observed top {bt.TOP_FRACTION:.0%} risers "
            f"(chance ≈ {bt.TOP_FRACTION:.2f}). Brackets: 95 % percentile bootstrap intervals "
            f"over tokens ({bt.N_BOOTSTRAP} replicates; the difference to persistence is "
            "paired). Means over seeds " + ", ".join(map(str, seeds)) + ". Every forecaster is "
            "ranked by PPL and by ρ; it *beats persistence* when its 95 % interval excludes "
            "persistence's value: the paired PPL difference lies below 0, or ρ lies above 0 "
            "(persistence predicts no change)."
            + (f" The intervals cover tokens, not training runs: with {len(seeds)} seed"
               f"{'s' if len(seeds) > 1 else ''}, a model's rank here is indicative only (a claim "
               "that one variant beats another needs ≥ 3 seeds)." if len(seeds) < 3 else "")]


def _backtest_section(table: pd.DataFrame, variants: Sequence[str], by: str,
                      window: int) -> list[str]:
    n = int(table["n_trend"].iat[0])
    n_top, k = math.ceil(bt.TOP_FRACTION * n), min(bt.TOP_K, n)
    history = history_periods(by, window)
    return ["", f"### {by}", "",
            f"Forecasts from {history[0]}..{history[-1]}. {n} trend tokens; the observed top "
            f"risers are {n_top} tokens, so precision@{k} is at most "
            f"{min(1.0, n_top / max(k, 1)):.2f} and {n_top / max(n, 1):.2f} by chance.", "",
            backtest_markdown(table), "", *winners_markdown(table, by),
            *verdicts(table, variants, by)]


def _forecast_section(forecasts: dict[tuple[str, int], ModelForecast], variants: Sequence[str],
                      seeds: Sequence[int], period: str, freqs: dict[str, PeriodFrequencies],
                      whole_word: np.ndarray, words: Sequence[str], window: int,
                      figure: str | None, plot_words: int
                      ) -> tuple[list[str], dict[str, pd.DataFrame]]:
    """The rising and falling terms of each forecaster with a history, and the plot's panels."""
    hist_periods = list(history_periods(period, window))
    history = {p: freqs[p] for p in hist_periods}
    before = shift(period, -1)
    last = freqs[before]
    lin = np.log(linear_extrapolation(np.stack([freqs[p].log_freq for p in hist_periods], 1),
                                      hist_periods, period)) - last.log_freq
    deltas = {LINEAR: lin}
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
