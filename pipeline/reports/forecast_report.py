"""The forecast report of every model (stage ``forecast_report``): checks that each forecast
covers the periods asked for, reads exactly the frequency files and documents the backtests
need, renders reports/forecast.md (:func:`pipeline.reports.forecast.render`) and writes it with
its JSON numbers and the risers' figure."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from pipeline.corpus.periods import in_time_order, shift
from pipeline.evaluation.content import content_token_mask, load_stopwords
from pipeline.features.tokenizer import encode_abstracts, load_tokenizer
from pipeline.features.windows import history_periods
from pipeline.forecast.vocabulary import reference_texts, whole_word_mask
from pipeline.infra.errors import UserError
from pipeline.infra.io import atomic_path, write_json
from pipeline.infra.runs import run_name
from pipeline.reports.figures import history_forecast_panels
from pipeline.reports.forecast import render
from pipeline.reports.forecast_inputs import load_forecasts, read_documents, read_frequencies


def forecast_report(forecasts_dir: str, variants: Sequence[str], seeds: Sequence[int],
                    period: str, backtest_periods: Sequence[str], window: int,
                    train_periods: Sequence[str], dev_period: str | None, frequencies: str,
                    tokenizer: str, stopwords: str, abstracts: str, out: str, json_path: str,
                    plot: str) -> None:
    """Writes ``out`` (Markdown), ``json_path`` (the backtest numbers and verdict records) and
    the PNG ``plot``, for the forecasts of ``variants`` x ``seeds`` under ``forecasts_dir``."""
    if window < 1:
        raise UserError(f"--window must be >= 1, got {window}", path="features.window")
    forecasts = load_forecasts(forecasts_dir, variants, seeds)
    backtests = in_time_order(backtest_periods)
    for (v, s), f in forecasts.items():
        have = set(f.info["periods"])
        if f.info["forecast_period"] != period or not {*backtests, period} <= have:
            raise UserError(f"the forecast of {v} seed {s} covers {in_time_order(have)} for "
                            f"forecast period {f.info['forecast_period']}, not {period} with "
                            f"backtests {backtests}", path=Path(forecasts_dir) / run_name(v, s),
                            fix=f"re-run `dvc repro forecast-{run_name(v, s)}`")
    needed = {p for by in backtests for p in (by, *history_periods(by, window))}
    needed |= set(history_periods(period, window))
    train = in_time_order(train_periods)
    needed |= set(train)
    # Exactly these periods are read (the stage's declared deps); the risers plot shows them all.
    freqs = read_frequencies(frequencies, in_time_order(needed), "the forecast report")

    tok = load_tokenizer(tokenizer)
    content = content_token_mask(tok, load_stopwords(stopwords))
    reference = encode_abstracts(tok, reference_texts(abstracts, period), max_length=sys.maxsize)
    whole = whole_word_mask(tok, content, reference)
    documents = read_documents(abstracts, tok, {q for b in backtests for q in (b, shift(b, -1))},
                               freqs)
    words = [w.strip() for w in tok.batch_decode([[i] for i in range(len(content))])]
    figure = os.path.relpath(Path(plot).resolve(), Path(out).resolve().parent)
    text, metrics, panels = render(forecasts, variants, seeds, period, backtests, freqs, content,
                                   whole, words, window, figure=figure, train_periods=train,
                                   documents=documents, dev_period=dev_period)
    with atomic_path(out) as tmp:
        tmp.write_text(text, encoding="utf-8")
    write_json(metrics, json_path)
    history_forecast_panels(panels, plot)
