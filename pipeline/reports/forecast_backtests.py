"""The backtest sections of ``reports/forecast.md``: every forecaster of a period, judged.

For a backtest period Y the forecasters are the registry's count forecasters of the report
(:mod:`pipeline.forecast.fits`: persistence, the pooled past, mean reversion and linear
extrapolation, each with its setting fitted on training periods only, and any other forecaster
module of :mod:`pipeline.forecast.forecasters`), every **model** (its own
p̂_Y, one forecast per seed) and each temporal model's **history-adjusted persistence** (Y−1's
add-one smoothed distribution times the model's exp(Δ̂), renormalised). The claims — every
forecaster against each stationary baseline, every predicted change against chance — are
built and resampled by document in :mod:`pipeline.forecast.claims`; here they are judged
(:func:`pipeline.stats.verdict.judge`: Holm within each family and period) and rendered with
:func:`pipeline.stats.verdict.table` and :func:`~pipeline.stats.verdict.sentence`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from pipeline.corpus.periods import in_time_order, ordinal, shift
from pipeline.features.frequencies import PeriodFrequencies
from pipeline.forecast import backtest as bt
from pipeline.forecast.baselines import history_adjusted_persistence
from pipeline.forecast.claims import TREND, VOCABULARY, Predictions
from pipeline.forecast.counted import PeriodBacktest, backtest_period
from pipeline.forecast.documents import PeriodDocuments
from pipeline.forecast.fits import Fit, best_fit, fit_forecasters
from pipeline.forecast.half import HALF_COLUMNS
from pipeline.models.registry import display_name, lookup
from pipeline.stats.verdict import Verdict, sentence, table

if TYPE_CHECKING:                      # the report module imports this one
    from pipeline.reports.forecast_inputs import ModelForecast


def adjusted_name(variant: str) -> str:
    """The table name of ``variant``'s history-adjusted persistence."""
    return f"History-adjusted persistence ({display_name(variant)})"


def _half_changes(forecasts: Sequence[ModelForecast], period: str, vocab: int
                  ) -> tuple[tuple[np.ndarray, ...], str]:
    """Each run's predicted change from half A of Y−1 (none, and why, without one)."""
    frames = [f.vocab[period] for f in forecasts]
    if all(set(HALF_COLUMNS) <= set(fr.columns) for fr in frames):
        return tuple((fr[HALF_COLUMNS[0]] - fr[HALF_COLUMNS[1]]).to_numpy()[:vocab]
                     for fr in frames), ""
    why = forecasts[0].info.get("periods", {}).get(period, {}).get("half_a", {}).get("why_not")
    return (), f"no predicted change from half A of Y−1: {why or 'not in the forecast'}"


def model_forecasters(forecasts: Mapping[tuple[str, int], ModelForecast], variants: Sequence[str],
                      seeds: Sequence[int], period: str, last_counts: np.ndarray
                      ) -> list[Predictions]:
    """Every model (its trend claim from its half-A change; untested without one), then every
    temporal model's history-adjusted persistence (no trend claim: its change is the model's)."""
    vocab, out, adjusted = len(last_counts), [], []
    for v in variants:
        runs = [forecasts[(v, s)] for s in seeds]
        log_ps = tuple(f.vocab[period]["log_prob"].to_numpy() for f in runs)
        if not lookup(v).temporal:
            out.append(Predictions(display_name(v), log_ps, runs=len(seeds)))
            continue
        changes, note = _half_changes(runs, period, vocab)
        change = np.mean(changes, axis=0) if changes else None
        out.append(Predictions(display_name(v), log_ps, change, len(seeds), note, changes))
        adjusted.append(Predictions(adjusted_name(v), tuple(
            history_adjusted_persistence(last_counts, f.delta(period)[:vocab]) for f in runs),
            runs=len(seeds)))
    return out + adjusted


def backtest(forecasts: Mapping[tuple[str, int], ModelForecast], variants: Sequence[str],
             seeds: Sequence[int], period: str, freqs: Mapping[str, PeriodFrequencies],
             documents: Mapping[str, PeriodDocuments], content: np.ndarray, window: int,
             fits: Mapping[str, Fit], read_by_training: Sequence[str] = ()
             ) -> PeriodBacktest:
    """Every claim of backtest ``period`` (module doc). ``read_by_training``: the periods the
    models' training read (training periods and the dev period of early stopping): where Y−1 is
    one of them or earlier, a model has seen half B and makes no tested trend claim."""
    prev = shift(period, -1)
    models = model_forecasters(forecasts, variants, seeds, period, freqs[prev].counts)
    last = max((ordinal(p) for p in read_by_training), default=None)
    seen = ("its training read all of Y−1 (half B included), so its predicted change is not "
            "independent of the observed one" if last is not None and ordinal(prev) <= last
            else "")
    return backtest_period(period, documents[period], documents[prev],
                           {p: f.counts for p, f in freqs.items()}, fits, content, window, models,
                           seen=seen)


def fit_text(fits: Mapping[str, Fit], noun: str) -> str:
    """What the stationary baselines are, how they were fitted, and which one is the reference;
    the settings fitted for the other count forecasters that have a choice."""
    best = best_fit(fits)
    targets = next((f.targets for f in fits.values() if f.targets), ())
    stationary = [f for f in fits.values() if f.stationary]
    others = [f for f in fits.values()
              if not f.stationary and len(f.forecaster.fit_grid()) > 1]
    fitted = (f"fitted on one-step forecasts of the training {noun}s {', '.join(targets)} only"
              if targets else f"not fitted: no training {noun} has its whole window among the "
              "training periods, so add-one smoothing and no mean reversion")
    return (f"Stationary baselines, additive smoothing (and mean reversion's λ) {fitted}: "
            + "; ".join(f.describe() for f in stationary)
            + f". Best fit on the training {noun}s: {best}; every vocabulary claim is made against "
            "each of them. "
            + ("Other forecasters' settings: " + "; ".join(f.describe() for f in others) + ". "
               if others else "")
            + "Definitions: `pipeline/forecast/fits.py`, `pipeline/forecast/forecasters/`, "
            "`pipeline/forecast/claims.py`.")


def fit_metrics(fits: Mapping[str, Fit]) -> dict:
    """The fitted stationary baselines for ``reports/forecast.json`` (α and λ: ``alpha`` and
    ``lambda``, None where the setting has none; any other setting under ``setting``)."""
    def row(f: Fit) -> dict:
        out = {"alpha": f.setting.get("alpha"), "lambda": f.setting.get("lam"),
               "train_ppl": None if np.isnan(f.train_ppl) else f.train_ppl,
               "fitted_on": list(f.targets)}
        rest = {k: v for k, v in f.setting.items() if k not in ("alpha", "lam")}
        return {**out, "setting": rest} if rest else out

    return {"reference": best_fit(fits),
            "baselines": {n: row(f) for n, f in fits.items() if f.stationary}}


def fit(freqs: Mapping[str, PeriodFrequencies], train: Sequence[str],
        window: int) -> dict[str, Fit]:
    """Every count forecaster of the report fitted on the training periods ``train``."""
    return fit_forecasters({p: freqs[p].counts for p in in_time_order(train)},
                           in_time_order(train), window)


def _fmt(x: float, digits: int) -> str:
    return "—" if x is None or np.isnan(x) else f"{x:.{digits}f}"


def backtest_markdown(result: PeriodBacktest, judged: Sequence[Verdict]) -> list[str]:
    """The period's descriptive tables, its two verdict tables and sentences."""
    vocab = [v for v in judged if v.family == VOCABULARY]
    trend = [v for v in judged if v.family == TREND]
    rows = ["| Forecaster | Unigram PPL [95 % CI] |", "|---|---:|"]
    for name, r in sorted(result.vocabulary.items(), key=lambda kv: kv[1]["ppl"]):
        rows.append(f"| {name} | {_fmt(r['ppl'], 1)} [{_fmt(r['ppl_lo'], 1)}, "
                    f"{_fmt(r['ppl_hi'], 1)}] |")
    skilled = [a for a in dict.fromkeys(v.a for v in vocab)
               if all(v.verdict == "better" for v in vocab if v.a == a)]
    lines = ["Vocabulary forecast error (lower is better):", "", *rows, "",
             f"Against each stationary baseline (family `{VOCABULARY}`, Holm over the period; "
             "a forecaster has temporal skill only where it is better than all of them):", "",
             table(vocab), ""]
    lines += [f"- {sentence(v)}" for v in vocab if v.verdict in ("better", "worse")]
    if skilled:
        lines.append(f"- **Temporal skill in {result.period}**: {', '.join(skilled)} (better than "
                     "every stationary baseline).")
    else:
        lines.append(f"- **No forecaster has temporal skill in {result.period}**: none is better "
                     "than every stationary baseline.")
    k = next((int(r["k"]) for r in result.trend.values()), 0)
    rows = [f"| Forecaster | rank correlation [95 % CI] | top-{k} movers (mean z) |",
            "|---|---:|---:|"]
    for name, r in result.trend.items():
        rows.append(f"| {name} | {r['rho']:+.3f} [{r['rho_lo']:+.3f}, {r['rho_hi']:+.3f}] | "
                    f"{r['movers']:+.3f} |")
    lines += ["", f"Trend detection over {result.n_trend} trend tokens (content tokens seen ≥ "
              f"{bt.MIN_COUNT} times in half A of Y−1; predicted change from half A scaled to its "
              "sampling noise (times the square root of the token's half-A count), observed "
              "change: the standardised change of document frequency from half B to Y; family "
              f"`{TREND}`, the documents of Y and half B as the unit):", "", *rows, "",
              table(trend), ""]
    lines += [f"- {sentence(v)}" for v in trend if v.verdict != "not distinguishable"]
    return lines
