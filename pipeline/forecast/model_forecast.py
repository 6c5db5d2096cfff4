"""One trained future LM's forecast: the predicted vocabulary of the forecast period and of every
backtest period, the trend test's half-A change where the model allows it, and the forecast
period's generated abstracts; written as one folder (stage ``forecast``)."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from pipeline.corpus.periods import in_time_order, shift
from pipeline.forecast.half import half_a_forecast, why_no_half
from pipeline.forecast.vocabulary import period_history, reference_texts, vocabulary_forecast
from pipeline.infra.io import atomic_path, write_json, write_parquet
from pipeline.infra.precision import compute_precision
from pipeline.models.encoding import encode_for_model
from pipeline.models.future_lm import FutureLM
from pipeline.models.generation import GenerationSettings, generate_abstracts


@dataclass
class ModelForecast:
    """What :func:`forecast_model` computed: each period's vocabulary frame, what it was
    computed from (``info``), and the forecast period's generations."""

    target: str
    backtests: list[str]
    vocab: dict[str, pd.DataFrame]
    info: dict[str, dict[str, Any]]
    generations: pd.DataFrame


def forecast_model(model: FutureLM, tok: Any, target: str, backtest_periods: list[str],
                   abstracts: str, frequencies: str | None, embeddings: str | None,
                   tokenizer_dir: str, batch_size: int, precision: str,
                   settings: GenerationSettings) -> ModelForecast:
    """Every period of ``target`` and ``backtest_periods`` in time order, then the generations
    of ``target``; forward passes and generation in ``precision`` (as the score stage's)."""
    backtests = in_time_order(backtest_periods)
    history = period_history(model, target, frequencies, embeddings, f"forecast {target}",
                             tokenizer_dir)   # fail early: before any pass
    vocab, info = {}, {}
    with compute_precision(model.device, precision):   # as the score stage's passes
        for period in in_time_order({*backtests, target}):
            start, before = time.perf_counter(), shift(period, -1)
            encoded, _ = encode_for_model(tok, reference_texts(abstracts, period),
                                          model.context_length)
            vocab[period] = vocabulary_forecast(model, encoded, period, frequencies, embeddings,
                                                batch_size, tok.eos_token_id, tokenizer_dir)
            n_positions = sum(len(ids) - 1 for ids in encoded)
            half = half_a_forecast(model, tok, abstracts, period, frequencies, batch_size,
                                   tokenizer_dir)
            if half is not None:
                vocab[period] = vocab[period].join(half[0])
            info[period] = {"reference_period": before, "n_contexts": len(encoded),
                            "n_positions": n_positions,
                            "half_a": {"n_contexts": half[1]} if half else
                            {"n_contexts": None, "why_not": why_no_half(model)}}
            print(f"{model.variant}: vocabulary of {period} from {len(encoded)} abstracts of "
                  f"{before} ({n_positions} positions) in {time.perf_counter() - start:.1f} s",
                  file=sys.stderr)
        start = time.perf_counter()
        gens = generate_abstracts(model, tok, history, settings, desc=f"{target} generation")
    gens["period"] = target
    print(f"{model.variant}: {len(gens)} abstracts for {target} in "
          f"{time.perf_counter() - start:.1f} s", file=sys.stderr)
    return ModelForecast(target, backtests, vocab, info, gens)


def write_forecast(out: str | Path, result: ModelForecast, model: FutureLM,
                   settings: GenerationSettings) -> None:
    """One atomic folder: vocab_<label>.parquet per period, generations_<target>.parquet and
    forecast.json."""
    with atomic_path(out) as tmp:
        tmp.mkdir()
        for period, frame in result.vocab.items():
            write_parquet(frame, Path(tmp) / f"vocab_{period}.parquet",
                          metadata={"period": period, "variant": model.variant})
        write_parquet(result.generations, Path(tmp) / f"generations_{result.target}.parquet",
                      metadata={"generation_settings": settings.to_json(),
                                "variant": model.variant})
        write_json({"variant": model.variant, "seed": model.seed,
                    "forecast_period": result.target, "backtest_periods": result.backtests,
                    "periods": result.info, "context_length": model.context_length},
                   Path(tmp) / "forecast.json")
