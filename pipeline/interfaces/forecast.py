"""Stage `forecast-<variant>@s<seed>`: one trained future LM's forecast of the next period."""

from __future__ import annotations

from pipeline.infra.schema.config import GenerationSettings, ScoreConfig
from pipeline.infra.interface import Input, Output, Params, StageInterface
from pipeline.infra.schema.params import ForecastConfig
from pipeline.infra.shared_options import RUNTIME, TOKENIZER

INTERFACE = StageInterface("forecast", (
    Input("--model", "trained model folder (data/models/<variant>-s<seed>)"),
    Input("--abstracts", "corpus (data/corpus/abstracts.parquet): the reference contexts, "
          "period Y-1"),
    TOKENIZER,
    Input("--frequencies", "per-period frequency folder (history; models with a bias)",
          required=False),
    Input("--embeddings", "per-period embedding folder (history of the contextual variants)",
          required=False),
    # Not params: the graph resolves them into the command (forecast.period may be null: the
    # period after the last known), so a new value reruns the stage after `make graph` only.
    Params(ForecastConfig, "forecast", "forecast periods (params forecast.*, resolved by the "
           "graph)", keys=("period", "backtest_periods"), filled=True),
    Params(ForecastConfig, "forecast", "forecast (params forecast.*)", keys=("batch_size",)),
    # the count is the forecast's (forecast.n_generate), the rest of its GenerationSettings
    # scoring's decoding
    Params(ForecastConfig, "forecast", "future abstracts of --period (params "
           "forecast.n_generate)", keys=("n_generate",)),
    Params(GenerationSettings, "score", "decoding (params score.*: the paper's decoding "
           "settings, as scoring's)", keys=("max_new_tokens", "min_new_tokens", "num_beams",
                                             "top_k", "top_p", "no_repeat_ngram_size")),
    Params(ScoreConfig, "score", "precision of the forward passes and generation, as scoring's "
           "(params score.precision)", keys=("precision",)),
    Input("--cache", "train.base: frozen: the frozen LM's cached hidden states "
          "(data/cache/base): the reference passes read them instead of running the LM's body "
          "(generation runs the LM)", required=False),
    Output("--out", "output folder (data/forecast/<variant>-s<seed>)"),
    *RUNTIME,
), torch=True)
