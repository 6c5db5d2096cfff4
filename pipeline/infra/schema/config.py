"""The typed settings of training and scoring: the one schema of every option and its default.

Each field carries its help text (``field(metadata={"help": ...})``); the stages derive their
command-line options from these classes (``stages/_lib/options.py``), so an option, its type, its
default and its help are written once, here. Each default is the default run's value (the
offline run `make repro` makes: the embedded sample, a small GPT-2 trained from scratch, a 2-core
CPU), the one ``params.yaml`` is rendered from; the paper's settings (§4.2 and the reference
implementation) are ``profiles/paper.yaml``'s overlay, and the help says where they differ.
Field metadata used by the option builder:

* ``help``: the option's help text;
* ``flag``: the option's name when it is not ``--<field-name>``;
* ``none``: the word that stands for ``None`` on the command line (``--alpha learned``);
* ``nargs``: a tuple field's ``nargs`` when it is not ``*`` (``+``: at least one value);
* ``shown_default``: how ``--help`` describes the default, when the value itself would not say;
* ``identity: False``: the field cannot change the result (how often to checkpoint), so it is
  left out of the run's identity (:func:`identity`) and changing it never restarts a run.

Runtime settings (device, threads) are not here: they never change results and come from
``runtime.yaml`` (``stages/_lib/runtime.py``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

# The compute precisions (pipeline/infra/precision.py says what each does). Named here, in the
# torch-free schema, so that whatever reads the schema (the stage graph) imports no torch.
Precision = Literal["fp32", "tf32", "bf16"]


def _help(text: str, **meta: Any) -> dict[str, Any]:
    return {"help": text, **meta}


@dataclass(frozen=True)
class LMConfig:
    """The base causal LM a future LM is built on (params ``lm.*``)."""

    base: str = field(default="scratch", metadata=_help(
        "'scratch' (a random-init GPT-2 of the shape below) or a causal LM's hub id / local path "
        "(paper: gpt2)"))
    # a 2-layer, 128-wide GPT-2: the default run trains it from scratch on two cores in minutes
    n_layer: int = field(default=2, metadata=_help("scratch GPT-2: layers (GPT-2 small: 12)"))
    n_head: int = field(default=4, metadata=_help("scratch GPT-2: attention heads (GPT-2: 12)"))
    n_embd: int = field(default=128, metadata=_help("scratch GPT-2: hidden size d (GPT-2: 768)"))
    n_positions: int = field(default=256, metadata=_help(
        "scratch GPT-2: position embeddings (>= --max-length; GPT-2: 1024)"))
    init_from: str | None = field(default=None, metadata=_help(
        "shared-base training: a trained model folder (data/models/baseline-s<seed>) whose base "
        "LM initialises this run instead of --base; its bias module, if any, is not used",
        none="none"))

    def __post_init__(self) -> None:
        for name in ("n_layer", "n_head", "n_embd", "n_positions"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


@dataclass(frozen=True)
class ModelConfig:
    """Which future LM is trained and what every variant shares: the history window and the
    dropout. A variant's own settings are its variant module's settings class
    (:mod:`pipeline.variants`, params ``variants.<name>.*``)."""

    variant: str = field(metadata=_help(
        "a variant of the registry (pipeline/models/registry.py): baseline, baseline-N (the N "
        "latest training periods only), or a variant with a module"))
    window: int = field(default=2, metadata=_help(
        "history length m in periods: period i is predicted from periods i-m .. i-1 "
        "(features.window)"))
    dropout: float = field(default=0.1, metadata=_help(
        "dropout of the LM and of the history LSTM's output"))

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError(f"window must be >= 1, got {self.window}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings (params ``train.*``). ``patience <= 0`` disables early stopping."""

    # ~1 minute a variant on the sample; a model from scratch needs a larger learning rate
    epochs: int = field(default=2, metadata=_help("maximum epochs (paper: 10)"))
    batch_size: int = field(default=4, metadata=_help(
        "abstracts per batch (one period per batch; paper: 2)"))
    grad_accum: int = field(default=1, metadata=_help("batches per optimizer step (paper: 2)"))
    max_length: int = field(default=128, metadata=_help(
        "LM tokens per abstract (eos + text + eos, cut): the model's context length, saved with "
        "it and used by scoring too (paper: 1024, GPT-2's context)"))
    lr_lm: float = field(default=2e-3, metadata=_help(
        "AdamW learning rate of the base LM (paper: 5e-5, a pretrained GPT-2)"))
    lr_new: float = field(default=2e-3, metadata=_help(
        "AdamW learning rate of the temporal modules (paper: 1e-3)"))
    weight_decay: float = field(default=0.0, metadata=_help("AdamW weight decay (matrices only)"))
    warmup_steps: int = field(default=10, metadata=_help(
        "linear warm-up steps before the linear decay to 0 (paper: 0)"))
    grad_clip: float = field(default=1.0, metadata=_help(
        "maximum gradient norm (<= 0: no clipping)"))
    patience: int = field(default=1, metadata=_help(
        "early stopping: epochs without dev-perplexity improvement (<= 0: off; paper: 2)"))
    # A run's identity holds the steps per epoch this implies, not the setting itself, so that a
    # run it does not apply to keeps its resume key (pipeline.training.run.prepare_run).
    latest_steps: Literal["epochs", "matched"] = field(default="epochs", metadata=_help(
        "baseline-N's optimizer steps: epochs, train.epochs passes over its N latest periods; "
        "matched, as many steps as the Baseline's train.epochs passes over every training "
        "period, cycling over the N latest (continued-N always matches)", identity=False))
    seed: int = field(default=0, metadata=_help(
        "seed of initialisation, dropout and batch order"))
    freeze_lm: bool = field(default=False, metadata=_help(
        "train only the temporal modules; the frozen LM runs without dropout, as when scored"))
    eval_batch_size: int = field(default=16, metadata=_help("abstracts per dev-perplexity batch"))
    precision: Precision = field(default="fp32", metadata=_help(
        "fp32; tf32 (CUDA matrix products in TF32, = fp32 on a CPU); bf16 (autocast, fp32 "
        "master weights, softmax/NLL in fp32): pipeline/infra/precision.py"))
    checkpoint_every: int = field(default=25, metadata=_help(
        "optimizer steps between resume checkpoints (does not change results)", identity=False))

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "grad_accum", "eval_batch_size", "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_length < 2:
            raise ValueError(f"max_length={self.max_length} leaves no room for an abstract "
                             "between two EOS tokens")


@dataclass(frozen=True)
class ScoreConfig:
    """What the score stage evaluates (params ``score.*``); decoding is GenerationSettings."""

    batch_size: int = field(default=8, metadata=_help("abstracts per PPL/CPL batch"))
    # the sample's dev and test years: a label is a str, and YAML reads a year as an int
    periods: tuple[str, ...] = field(default=(2020, 2021), metadata=_help(
        "period labels to evaluate besides the dev and test periods (staleness curves), read "
        "from --abstracts; each is scored with its own history"))
    generate_periods: tuple[str, ...] | None = field(default=None, metadata=_help(
        "period labels for which abstracts are generated and CM computed; the option with no "
        "period generates none", shown_default="the dev and test periods"))
    precision: Precision = field(default="fp32", metadata=_help(
        "scoring and generation: fp32, tf32 (CUDA only; = fp32 on a CPU) or bf16 autocast "
        "(pipeline/infra/precision.py)"))

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")


@dataclass(frozen=True)
class GenerationSettings:
    """Decoding settings (params ``score.*``); the decoding is the paper's (§4.6), the count and
    length the default run's."""

    n: int = field(default=10, metadata=_help(
        "abstracts generated per model and period (paper: 100); abstract i uses seed i",
        flag="--n-generate"))
    max_new_tokens: int = field(default=96, metadata=_help(
        "generation length limit in LM tokens (at most the model's context length - 1; "
        "paper: 256)"))
    min_new_tokens: int = field(default=1, metadata=_help(
        "EOS is forbidden before this many tokens (1: no empty abstract)"))
    num_beams: int = field(default=5, metadata=_help("beams of beam search with sampling"))
    top_k: int = field(default=50, metadata=_help("top-k sampling filter"))
    top_p: float = field(default=0.92, metadata=_help("nucleus (top-p) sampling filter"))
    no_repeat_ngram_size: int = field(default=2, metadata=_help(
        "forbid repeating n-grams of this size"))

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"n (abstracts to generate) must be >= 1, got {self.n}")
        if not 1 <= self.min_new_tokens <= self.max_new_tokens:
            raise ValueError(f"need 1 <= min_new_tokens ({self.min_new_tokens}) <= "
                             f"max_new_tokens ({self.max_new_tokens})")
        if self.num_beams < 1 or self.top_k < 1 or not 0 < self.top_p <= 1:
            raise ValueError(f"invalid decoding settings {self}")

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def identity(config: Any) -> dict[str, Any]:
    """The fields of a settings object that can change a result (``identity`` not False)."""
    values = asdict(config)
    return {f.name: values[f.name] for f in fields(config) if f.metadata.get("identity", True)}
