"""The backtest tables of ``reports/forecast.md``: every forecaster of a period, ranked, with intervals.

For a backtest period Y (text known) the forecasters are (definitions in
:mod:`pipeline.forecast.vocabulary` and :mod:`pipeline.forecast.baselines`):

- **Persistence**: Y−1's smoothed unigram distribution (predicts no change);
- **Linear extrapolation** of each token's log frequency over Y−m .. Y−1;
- **Mean reversion**: Y−1's log frequencies shrunk toward the window's mean by the strength λ
  fitted on the training periods only (:func:`pipeline.forecast.baselines.fit_mean_reversion`);
- every **model** (its own p̂_Y, mean over seeds), and for every temporal model its
  **history-adjusted persistence**: Y−1's distribution times the model's exp(Δ̂), renormalised
  (Baseline's Δ̂ is 0: its adjusted persistence *is* persistence, so it gets no row).

Every forecaster is scored on the same bootstrap replicates (:mod:`pipeline.forecast.backtest`,
the one source of the intervals), so each difference to persistence has a paired interval. The
tables rank all forecasters by vocabulary PPL (lower first) and by trend ρ (higher first;
forecasters that predict no change have no ρ and come last, unranked), and
:func:`beats_persistence` names the forecasters whose 95 % interval excludes persistence's value:
for PPL the paired difference lies below 0, for ρ the interval lies above 0 (persistence ranks
nothing: its ρ is the chance value 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from pipeline.corpus.periods import in_time_order, shift
from pipeline.features.frequencies import PeriodFrequencies
from pipeline.features.windows import history_periods
from pipeline.forecast import backtest as bt
from pipeline.forecast.baselines import (MeanReversionFit, fit_mean_reversion, fit_targets,
                                         history_adjusted_persistence, mean_reversion_change,
                                         mean_reverting)
from pipeline.forecast.vocabulary import linear_extrapolation, persistence
from pipeline.models.perplexity import cross_entropy
from pipeline.models.registry import display_name, lookup

if TYPE_CHECKING:                      # the report module imports this one
    from pipeline.reports.forecast import ModelForecast

PERSISTENCE, LINEAR, MEAN_REVERTING = "Persistence", "Linear extrapolation", "Mean reversion"


def adjusted_name(variant: str) -> str:
    """The table name of ``variant``'s history-adjusted persistence."""
    return f"History-adjusted persistence ({display_name(variant)})"


def forecasters(forecasts: dict[tuple[str, int], ModelForecast], variants: Sequence[str],
                seeds: Sequence[int], period: str, freqs: dict[str, PeriodFrequencies],
                window: int, reversion: MeanReversionFit | None = None
                ) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """Forecaster name -> one (log p̂, Δ̂) per seed (one for the naive forecasters), in table
    order: persistence, linear extrapolation, mean reversion (if fitted), each model, then each
    temporal model's history-adjusted persistence."""
    last = freqs[shift(period, -1)]
    history = list(history_periods(period, window))
    window_lf = np.stack([freqs[p].log_freq for p in history], 1)
    log_pers = np.log(persistence(last.counts))
    log_lin = np.log(linear_extrapolation(window_lf, history, period))
    out = {PERSISTENCE: [(log_pers, np.zeros_like(log_pers))],
           LINEAR: [(log_lin, log_lin - last.log_freq)]}
    if reversion is not None:
        out[MEAN_REVERTING] = [(mean_reverting(window_lf, reversion.lam),
                                mean_reversion_change(window_lf, reversion.lam))]
    for v in variants:
        out[display_name(v)] = [(forecasts[(v, s)].vocab[period]["log_prob"].to_numpy(),
                                 forecasts[(v, s)].delta(period)[:last.vocab_size]) for s in seeds]
    for v in variants:
        if lookup(v).temporal:
            deltas = [forecasts[(v, s)].delta(period)[:last.vocab_size] for s in seeds]
            out[adjusted_name(v)] = [(history_adjusted_persistence(last.counts, d), d)
                                     for d in deltas]
    return out


def backtest(forecasts: dict[tuple[str, int], ModelForecast], variants: Sequence[str],
             seeds: Sequence[int], period: str, freqs: dict[str, PeriodFrequencies],
             content: np.ndarray, window: int, reversion: MeanReversionFit | None = None
             ) -> pd.DataFrame:
    """One row per forecaster: ``unigram_ppl`` (+ ``_lo``/``_hi``), ``vs_persistence`` (PPL
    difference, + CI), ``rho``, ``precision`` (+ CIs), ``n_trend`` tokens, and the ranks
    ``rank_ppl`` (1 = lowest PPL) and ``rank_rho`` (1 = highest ρ; NaN without a ranking)."""
    obs, prev = freqs[period], freqs[shift(period, -1)]
    trend = bt.trend_tokens(prev.counts, obs.counts, content)
    observed = (obs.log_freq - prev.log_freq)[trend]
    rows = []
    per = forecasters(forecasts, variants, seeds, period, freqs, window, reversion)
    flat = [(name, lp, d) for name, items in per.items() for lp, d in items]
    ce = bt.bootstrap_cross_entropy(obs.counts, np.stack([lp[:obs.vocab_size] for _, lp, _ in flat]))
    rho, prec = bt.bootstrap_trends(np.stack([d[trend] for _, _, d in flat]), observed)
    names = [name for name, _, _ in flat]
    pers_boot = np.exp(ce[:, names.index(PERSISTENCE)])
    pers_ppl = bt.unigram_perplexity(obs.counts, per[PERSISTENCE][0][0])
    for name in per:
        cols = [i for i, n in enumerate(names) if n == name]
        point_ce = np.mean([cross_entropy(obs.counts, flat[i][1]) for i in cols])
        boot_ppl = np.exp(ce[:, cols].mean(axis=1))
        diff = boot_ppl - pers_boot
        ppl = float(np.exp(point_ce))
        rho_point = np.mean([bt.spearman(flat[i][2][trend], observed) for i in cols])
        prec_point = np.mean([bt.precision_at_k(flat[i][2][trend], observed) for i in cols])
        rows.append({"forecaster": name, "unigram_ppl": ppl,
                     **_ci("unigram_ppl", boot_ppl),
                     "vs_persistence": ppl - pers_ppl,
                     **_ci("vs_persistence", diff),
                     "rho": float(rho_point), **_ci("rho", rho[:, cols].mean(axis=1)),
                     "precision": float(prec_point), **_ci("precision", prec[:, cols].mean(axis=1)),
                     "n_trend": int(trend.sum())})
    return add_ranks(pd.DataFrame(rows))


def add_ranks(table: pd.DataFrame) -> pd.DataFrame:
    """``rank_ppl`` (1 = lowest unigram PPL) and ``rank_rho`` (1 = highest ρ; NaN where ρ is
    undefined); ties share the better rank (``min``), so a tie never orders two forecasters."""
    out = table.copy()
    out["rank_ppl"] = out["unigram_ppl"].rank(method="min").astype(int)
    out["rank_rho"] = (-out["rho"]).rank(method="min", na_option="keep")
    return out


def _ci(name: str, samples: np.ndarray) -> dict[str, float]:
    lo, hi = bt.interval(samples)
    return {f"{name}_lo": lo, f"{name}_hi": hi}


def beats_persistence(table: pd.DataFrame) -> dict[str, list[str]]:
    """``{"unigram_ppl": [...], "rho": [...]}``: the forecasters (best first) whose 95 % interval
    excludes persistence's value: the paired PPL difference's upper bound is below 0, or ρ's lower
    bound is above 0 (persistence predicts no change; chance). An undefined interval beats nothing."""
    others = table[table["forecaster"] != PERSISTENCE]
    ppl = others[others["vs_persistence_hi"] < 0].sort_values(["rank_ppl", "forecaster"])
    rho = others[others["rho_lo"] > 0].sort_values(["rank_rho", "forecaster"])
    return {"unigram_ppl": ppl["forecaster"].tolist(), "rho": rho["forecaster"].tolist()}


def winners_markdown(table: pd.DataFrame, period: str) -> list[str]:
    """Plain sentences: which forecasters, if any, beat persistence in ``period``."""
    rows = table.set_index("forecaster")
    won = beats_persistence(table)
    pers = rows.loc[PERSISTENCE, "unigram_ppl"]
    if won["unigram_ppl"]:
        names = "; ".join(f"{n} (PPL {rows.loc[n, 'unigram_ppl']:.1f}, difference "
                          f"{rows.loc[n, 'vs_persistence']:+.1f} "
                          f"[{rows.loc[n, 'vs_persistence_lo']:+.1f}, "
                          f"{rows.loc[n, 'vs_persistence_hi']:+.1f}])" for n in won["unigram_ppl"])
        ppl = (f"- **{period}, vocabulary PPL: {len(won['unigram_ppl'])} forecaster(s) beat "
               f"persistence** (PPL {pers:.1f}; the paired 95 % CI of the difference lies below "
               f"0): {names}.")
    else:
        ppl = (f"- **{period}, vocabulary PPL: no forecaster beats persistence** (PPL {pers:.1f}): "
               "no paired 95 % CI of the PPL difference lies below 0.")
    if won["rho"]:
        names = "; ".join(f"{n} (ρ {rows.loc[n, 'rho']:+.3f} [{rows.loc[n, 'rho_lo']:+.3f}, "
                          f"{rows.loc[n, 'rho_hi']:+.3f}])" for n in won["rho"])
        rho = (f"- **{period}, trend ranking: {len(won['rho'])} forecaster(s) beat persistence** "
               f"(which predicts no change, ρ = 0; the 95 % CI of ρ lies above 0): {names}.")
    else:
        rho = (f"- **{period}, trend ranking: no forecaster beats persistence** (which predicts "
               "no change, ρ = 0): no 95 % CI of ρ lies above 0.")
    return [ppl, rho]


def fit_reversion(freqs: dict[str, PeriodFrequencies], train_periods: Sequence[str], window: int,
                  noun: str = "year") -> tuple[MeanReversionFit | None, str]:
    """The mean-reverting forecaster's strength, fitted on the counts of ``train_periods`` only
    (:func:`pipeline.forecast.baselines.fit_mean_reversion`; no other period is read), and a
    sentence saying so; None and why when there is nothing to fit on."""
    train = in_time_order(train_periods)
    if not train:
        return None, (f"{MEAN_REVERTING}: left out, no training {noun}s were given to fit its "
                      "strength on.")
    if not fit_targets(train, window):
        return None, (f"{MEAN_REVERTING}: left out, the {len(train)} training {noun}(s) "
                      f"{train[0]}..{train[-1]} hold no one-step forecast with a {window}-{noun} "
                      "history inside them to fit its strength on.")
    fit = fit_mean_reversion({p: freqs[p].counts for p in train}, train, window)
    return fit, (f"{MEAN_REVERTING}: log p̂ = ℓ_{{Y−1}} + λ·(mean of ℓ over Y−{window}..Y−1 "
                 f"− ℓ_{{Y−1}}), renormalised (ℓ: smoothed log frequency), with λ = {fit.lam:.2f} "
                 f"fitted on the training {noun}s only: one-step forecasts of "
                 f"{', '.join(fit.targets)}, training unigram PPL {fit.ppl:.2f} (λ = 0, "
                 f"persistence: {fit.ppl_by_lambda.get(0.0, float('nan')):.2f}). History-adjusted "
                 "persistence (model): Y−1's smoothed distribution times the model's exp(predicted "
                 "change), renormalised; none for models without a history (their predicted change "
                 "is 0: it is persistence). Definitions: `pipeline/forecast/baselines.py`.")


def reversion_metrics(fit: MeanReversionFit | None) -> dict | None:
    """The fitted strength for ``reports/forecast.json`` (None when left out)."""
    if fit is None:
        return None
    return {"lambda": fit.lam, "fitted_on": list(fit.targets), "train_ppl": fit.ppl,
            "train_ppl_by_lambda": {f"{lam:.2f}": ppl for lam, ppl in fit.ppl_by_lambda.items()}}


def _fmt(value: float, digits: int, signed: bool = False) -> str:
    if value is None or np.isnan(value):
        return "—"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _with_ci(r: pd.Series, name: str, digits: int, signed: bool = False) -> str:
    return (f"{_fmt(r[name], digits, signed)} [{_fmt(r[name + '_lo'], digits, signed)}, "
            f"{_fmt(r[name + '_hi'], digits, signed)}]")


def backtest_markdown(table: pd.DataFrame) -> str:
    """Two tables of every forecaster: ranked by unigram PPL (with the paired difference to
    persistence), and ranked by Spearman ρ (with precision@k; no-change forecasters last)."""
    won = beats_persistence(table)
    lines = ["Ranked by vocabulary forecast error:", "",
             "| # | Forecaster | Unigram PPL [95 % CI] | vs persistence [95 % CI] "
             "| beats persistence |", "|---:|---|---:|---:|---|"]
    for _, r in table.sort_values(["rank_ppl"], kind="stable").iterrows():
        vs = "—" if r["forecaster"] == PERSISTENCE else _with_ci(r, "vs_persistence", 1, True)
        verdict = ("—" if r["forecaster"] == PERSISTENCE else
                   "**yes**" if r["forecaster"] in won["unigram_ppl"] else "no")
        lines.append(f"| {r['rank_ppl']} | {r['forecaster']} | {_with_ci(r, 'unigram_ppl', 1)} "
                     f"| {vs} | {verdict} |")
    lines += ["", "Ranked by trend detection:", "",
              f"| # | Forecaster | Spearman ρ [95 % CI] | Precision@{bt.TOP_K} [95 % CI] "
              "| beats persistence |", "|---:|---|---:|---:|---|"]
    for _, r in table.sort_values(["rank_rho"], kind="stable", na_position="last").iterrows():
        if np.isnan(r["rho"]):
            lines.append(f"| — | {r['forecaster']} | — (no change predicted) "
                         "| — (no change predicted) | — |")
            continue
        verdict = "**yes**" if r["forecaster"] in won["rho"] else "no"
        lines.append(f"| {int(r['rank_rho'])} | {r['forecaster']} | {_with_ci(r, 'rho', 3, True)} "
                     f"| {_with_ci(r, 'precision', 3)} | {verdict} |")
    return "\n".join(lines)


def backtest_metrics(table: pd.DataFrame) -> dict[str, dict]:
    """One backtest period's numbers: forecaster -> its row, NaN as None (valid JSON)."""
    return {r["forecaster"]: {k: (None if isinstance(v, float) and np.isnan(v)
                                  else int(v) if k.startswith("rank_") else v)
                              for k, v in r.items() if k != "forecaster"}
            for r in table.to_dict("records")}
