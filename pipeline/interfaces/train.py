"""Stage `train-<variant>@s<seed>`: train one future-LM variant with one seed."""

from __future__ import annotations

from dataclasses import fields

from pipeline.infra.schema.config import LMConfig, ModelConfig, TrainConfig
from pipeline.infra.interface import Input, Output, Params, Settings, StageInterface, Value
from pipeline.infra.shared_options import PROCESSES, RUNTIME

# train.* that every variant's train stage passes (train.lr_new: only a variant with a module)
TRAINING = ("epochs", "batch_size", "grad_accum", "max_length", "lr_lm", "weight_decay",
            "warmup_steps", "grad_clip", "patience", "precision")

INTERFACE = StageInterface("train", (
    Params(ModelConfig, "features", "the run's variant", keys=("variant",), filled=True),
    Params(TrainConfig, "train", "the run's seed", keys=("seed",), filled=True),
    Input("--train", "training split Parquet (key, period, title, abstract)"),
    Input("--dev", "dev split Parquet, for early stopping on perplexity"),
    Input("--tokenizer", "tokenizer folder of the tokenizer stage"),
    Input("--frequencies", "folder of <label>.parquet log frequencies per period (variants with "
          "a bias)", required=False),
    Input("--embeddings", "folder of <label>.safetensors contextual embeddings per period "
          "(context, context2)", required=False),
    Params(ModelConfig, "features", "history (params features.window; variants with a bias)",
           keys=("window",), optional=True),
    Params(LMConfig, "lm", "base LM (params lm.*)",
           keys=("base", "n_layer", "n_head", "n_embd", "n_positions")),
    Params(TrainConfig, "train", "training (params train.*)", keys=TRAINING),
    Params(ModelConfig, "train", "model (params train.dropout)", keys=("dropout",)),
    Params(TrainConfig, "train", "the module's learning rate (params train.lr_new; variants "
           "with a module)", keys=("lr_new",), optional=True),
    Params(TrainConfig, "train", "baseline-N's optimizer steps (params train.latest_steps; "
           "baseline-N with N >= 1)", keys=("latest_steps",), optional=True),
    # the variant's own settings (params variants.<name>.*): `--variant NAME --help` lists them
    Settings("settings"),
    # the training regime's start (pipeline/graph/regimes.py, TrainFrom)
    Input("--init-from", {f.name: f for f in fields(LMConfig)}["init_from"].metadata["help"],
          required=False),
    Params(TrainConfig, "train", "keep the LM frozen (train.base: shared, frozen)",
           keys=("freeze_lm",), filled=True),
    Input("--targets-from", "continuous-* variants: the trained Baseline model folder whose "
          "input embeddings are the fixed target vectors (data/models/baseline-s<seed>)",
          required=False),
    Input("--trunk", "train.base: adapted, Baseline: the trunk cache (data/cache/trunk) the top "
          "--adapt-layers are tuned from", required=False),
    Value("--adapt-layers", "K, the top blocks (train.adapt_layers)", type=int, default=None,
          param="train.adapt_layers", optional=True),
    Input("--cache", "with --freeze-lm: the folder of the frozen LM's cached hidden states "
          "(python -m stages.base_cache; data/cache/baseline-s<seed> of the --init-from "
          "Baseline, or data/cache/base of the pretrained --base) to train from; refused when it "
          "was built from another LM, tokenizer, context length or split", required=False),
    Output("--out", "model folder to write (atomically)"),
    Output("--curves", "folder for the DVCLive training curves (train/loss.tsv, train/lr.tsv, "
           "dev/ppl.tsv; a DVC plots output, written atomically)", kind="plots",
           dvc={"x": "step"}),
    Value("--checkpoint-dir", "root of the resume checkpoints, outside DVC outputs (default: "
          "%(default)s)", default=".futurelm/checkpoints", graph=False),
    Params(TrainConfig, "train", "evaluation and checkpoints (not params)",
           keys=("eval_batch_size", "checkpoint_every"), graph=False),
    *RUNTIME,
    PROCESSES,
), torch=True)
