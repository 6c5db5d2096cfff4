"""Stage `tokenizer`: the LM tokenizer every temporal feature is indexed by."""

from __future__ import annotations

from pipeline.infra.interface import Input, Output, Params, StageInterface, Value
from pipeline.infra.schema.params import TokenizerConfig

INTERFACE = StageInterface("tokenizer", (
    Value("--base", "'scratch' (train a byte-level BPE) or a causal LM's hub id / local path "
          "(params lm.base)", param="lm.base"),
    Params(TokenizerConfig, "tokenizer", "scratch BPE (params tokenizer.*)"),
    Input("--train", "training split Parquet (column 'abstract'); only read with --base scratch"),
    Output("--out", "output tokenizer folder (written atomically)"),
))
