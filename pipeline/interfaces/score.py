"""Stage `score-<variant>@s<seed>`: evaluate one trained future LM on the dev, test and later
periods."""

from __future__ import annotations

from pipeline.infra.schema.config import GenerationSettings, ScoreConfig
from pipeline.infra.interface import Input, Output, Params, StageInterface
from pipeline.infra.shared_options import RUNTIME, TOKENIZER

INTERFACE = StageInterface("score", (
    Input("--model", "trained model folder (data/models/<variant>-s<seed>)"),
    Input("--dev", "dev split Parquet (data/splits/dev.parquet)"),
    Input("--test", "test split Parquet (data/splits/test.parquet)"),
    # resolved by the graph into the command, not a param (pipeline/graph/model_stages.py)
    Params(ScoreConfig, "score", "periods beyond dev and test (params score.periods, resolved "
           "by the graph)", keys=("periods",), filled=True),
    Input("--abstracts", "corpus table the --periods beyond dev and test are read from "
          "(data/corpus/abstracts.parquet)", required=False),
    TOKENIZER,
    Input("--frequencies", "per-period frequency folder, <label>.parquet (history; models with "
          "a bias)", required=False),
    Input("--embeddings", "per-period embedding folder, <label>.safetensors (history; context, "
          "context2)", required=False),
    Input("--stopwords", "the paper's stopword list (CPL and CM)"),
    Input("--gold-words", "the dev and test abstracts' content words for CM, computed once "
          "(stage gold_words: data/gold_words); without it each generated period's are computed "
          "here", required=False),
    Params(ScoreConfig, "score", "scoring (params score.*)", keys=("batch_size", "precision")),
    Params(GenerationSettings, "score", "generation (params score.*; the paper's decoding "
           "settings)"),
    # resolved by the graph from score.generate_dev: the test period alone, or left out (the dev
    # and test periods)
    Params(ScoreConfig, "score", "generation periods (params score.generate_dev, resolved by "
           "the graph)", keys=("generate_periods",), filled=True),
    Input("--cache", "train.base: frozen: the frozen LM's cached hidden states (data/cache/base): "
          "PPL and CPL passes read them instead of running the LM's body (same numbers up to "
          "float rounding; generation runs the LM); refused when built from another LM, "
          "tokenizer or context length", required=False),
    Output("--out", "output folder (data/scores/<variant>-s<seed>)"),
    *RUNTIME,
), torch=True)
