"""Stage `base_cache` (the training regime's caches: ``base_cache``, ``base_cache-s<seed>``,
``trunk_cache``): a frozen LM's hidden states of the split abstracts."""

from __future__ import annotations

from pipeline.infra.interface import Input, Output, StageInterface, Switch, Value
from pipeline.infra.schema.config import TrainConfig
from pipeline.infra.schema.params import TrainDesign, default
from pipeline.infra.shared_options import RUNTIME

INTERFACE = StageInterface("base_cache", (
    Input("--model", "train.base: shared: the trained Baseline model folder whose LM the "
          "variants freeze (data/models/baseline-s<seed>)", required=False),
    Value("--base", "train.base: frozen: the pretrained LM (param lm.base: a Hugging Face id, "
          "packaged name or local folder) every variant keeps frozen", default=None,
          param="lm.base", optional=True),
    Switch("--trunk-only", "with --base: cache the states entering the top --adapt-layers blocks"),
    Input("--trunk", "train.base: adapted: the trunk cache whose abstracts' final states are "
          "computed by the top --adapt-layers blocks", required=False),
    Value("--adapt-layers", "K, the top blocks an adapted Baseline tunes (param "
          "train.adapt_layers)", type=int, default=None, param="train.adapt_layers",
          optional=True),
    Input("--train", "training split Parquet (period, abstract): every period is cached "
          "(required unless --trunk)", required=False),
    Input("--dev", "dev split Parquet: its period is cached too (unless --trunk)", required=False),
    Input("--test", "test split Parquet, cached too when given (train.base: frozen: the score "
          "and forecast stages read the same states)", required=False),
    Input("--tokenizer", "tokenizer folder of the tokenizer stage"),
    # the train.* the states are computed at (those of training) and stored in
    Value("--max-length", "context length in LM tokens the abstracts are cut at: the variants' "
          "train.max_length (default: %(default)s)", type=int,
          default=default(TrainConfig, "max_length"), param="train.max_length"),
    Value("--precision", "compute precision of the LM's forward pass: the variants' "
          "train.precision (default: %(default)s)", default=default(TrainConfig, "precision"),
          choices=("fp32", "tf32", "bf16"), param="train.precision"),
    Value("--cache-storage", "dtype of the stored states: fp32 (exact) or bf16 (half the disk; "
          "perplexity within 0.1 %%) (param train.cache_storage; default: %(default)s)",
          default=default(TrainDesign, "cache_storage"), choices=("fp32", "bf16"),
          param="train.cache_storage"),
    Output("--out", "cache folder to write, atomically (data/cache/baseline-s<seed>)"),
    Value("--batch-size", "abstracts per forward pass, longest first: keep the train stage's dev "
          "batch size so cached dev perplexity equals uncached bit for bit (default: "
          "%(default)s)", type=int, default=default(TrainConfig, "eval_batch_size"),
          graph=False),
    *RUNTIME,
), one_of=("--model", "--base"), torch=True)
