"""One training run — a variant and a seed — from split files and features to a trained future LM.

:func:`prepare_run` builds everything :func:`pipeline.training.loop.train` needs: the tokenised train
and dev abstracts (cut at ``train.max_length`` by the scoring rule, :func:`pipeline.models.encoding.encode_for_model`, so the dev perplexity
of early stopping is the reported one), the history of every train and dev period, the base LM and
the bias module, and the run's identity (the key its resume checkpoints carry). :func:`execute`
trains it and assembles the metrics. The stage only parses options and writes the outputs.

Base LM (:func:`build_base_lm`), in order of precedence:

* ``init_from``: the LM of a trained model folder — shared-base training, where Baseline is
  trained once and every temporal variant starts from its LM (with ``freeze_lm``: trains only
  its bias module on top of it); continued-N, the seed's Baseline trained further, whole, on the
  N latest training periods for the Baseline's number of steps (:func:`matched_steps`);
* ``base: scratch``: a random-init GPT-2 of the configured shape (drawn from the run's seed, so
  every variant of a seed starts from the same LM);
* any other ``base``: a pretrained causal LM resolved by :mod:`pipeline.models.hub`; with
  ``train.base: frozen`` the same LM kept frozen (``freeze_lm``) in every variant, the Baseline
  being that LM as it is (nothing to train: one dev evaluation).

Frozen-base cache (``train.cache``): :func:`write_base_cache` stores the final hidden
states of the frozen LM (:func:`frozen_lm`: a shared base's trained Baseline or a frozen
pretrained base) over the split files' abstracts, and :func:`execute_cached` trains a run from
them (:func:`pipeline.training.cached.train_cached`) instead of running the LM every step;
:func:`attach_cache` lets a loaded model's scoring and forecast passes read them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from pipeline.models import hub as models_hub
from pipeline.infra.schema.config import LMConfig, ModelConfig, TrainConfig, identity
from pipeline.infra.distributed import SINGLE, Dist
from pipeline.infra.errors import UserError
from pipeline.models.future_lm import (
    CONFIG_NAME,
    WEIGHTS_NAME,
    FutureLM,
    lm_positions,
    load_future_lm,
    load_histories,
    make_future_lm,
    scratch_gpt2,
    use_sdpa,
)
from pipeline.corpus.periods import in_time_order
from pipeline.features.history import PeriodHistory, forecasts_dir
from pipeline.features.kinds import FORECASTS
from pipeline.infra.io import read_parquet
from pipeline.models.continuous import frozen_input_embeddings
from pipeline.models.encoding import encode_for_model
from pipeline.models.portable import make_portable
from pipeline.infra.runs import run_name
from pipeline.models.registry import lookup
from pipeline.features.tokenizer import load_tokenizer
from pipeline.training.batches import group_by_period, latest_periods, steps_per_pass
from pipeline.features.base_cache import (HiddenMemo, PeriodHidden, Storage, build_cache,
                                          lm_identity, load_cache)
from pipeline.training.cached import train_cached
from pipeline.training.checkpoints import Checkpoints, TrainState, run_key
from pipeline.training.loop import train, write_curves
from pipeline.training.optim import set_dropout

Sequences = dict[str, list[list[int]]]   # period label -> token-id lists


@dataclass(frozen=True)
class TrainInputs:
    """Input files of a run; the feature folders are needed only by variants that read them."""

    train: Path
    dev: Path
    tokenizer: Path
    frequencies: Path | None = None
    embeddings: Path | None = None
    targets_from: Path | None = None   # the Baseline whose input embeddings are the targets


@dataclass
class TrainRun:
    """A run ready to train: ``name`` = ``<variant>-s<seed>``, ``key`` = its identity."""

    name: str
    model: FutureLM
    train_data: Sequences
    dev_data: Sequences
    histories: dict[str, PeriodHistory]
    pad_id: int
    key: str
    lm_config: LMConfig
    config: TrainConfig
    steps_per_epoch: int | None = None   # a matched-steps run's (:func:`matched_steps`)


def read_sequences(path: Path, tok: PreTrainedTokenizerBase, max_length: int) -> Sequences:
    """``{period: [eos + abstract + eos cut to max_length, ...]}`` of a split file (columns
    ``period``, a label, and ``abstract``), in file order."""
    df = read_parquet(path, columns=["period", "abstract"])
    encoded, _ = encode_for_model(tok, df["abstract"].tolist(), max_length)
    return group_by_period(df["period"], encoded)


def build_base_lm(lm: LMConfig, tok: PreTrainedTokenizerBase, context_length: int,
                  dropout: float) -> PreTrainedModel:
    """The base LM of a run (module doc), checked against the tokenizer and context length;
    attention through SDPA (:func:`pipeline.models.future_lm.use_sdpa`)."""
    if lm.init_from is not None:
        base = load_future_lm(lm.init_from).lm
        source = f"the LM of {lm.init_from}"
    elif lm.base == "scratch":
        if context_length > lm.n_positions:
            raise UserError(f"train.max_length {context_length} exceeds the scratch GPT-2's "
                            f"lm.n_positions {lm.n_positions}", path="train.max_length",
                            fix=f"set train.max_length <= {lm.n_positions} or raise lm.n_positions")
        return scratch_gpt2(len(tok), tok.eos_token_id, n_layer=lm.n_layer, n_head=lm.n_head,
                            n_embd=lm.n_embd, n_positions=lm.n_positions, dropout=dropout)
    else:
        base = models_hub.load_causal_lm(lm.base)
        source = lm.base
        if base.get_output_embeddings().weight.shape[0] < len(tok):
            base.resize_token_embeddings(len(tok))
    if base.get_output_embeddings().weight.shape[0] < len(tok):
        raise UserError(f"{source} has {base.get_output_embeddings().weight.shape[0]} output "
                        f"tokens but the tokenizer {len(tok)}: it was trained with another "
                        "tokenizer", path=lm.init_from, fix="retrain the Baseline with this tokenizer")
    if context_length > lm_positions(base):
        raise UserError(f"train.max_length {context_length} exceeds the {lm_positions(base)} "
                        f"positions of {source}", path="train.max_length",
                        fix=f"set train.max_length <= {lm_positions(base)}")
    return use_sdpa(base)


def prepare_run(inputs: TrainInputs, lm: LMConfig, spec: ModelConfig, config: TrainConfig,
                settings: Any = None) -> TrainRun:
    """Data, histories, model and identity of one run (module doc); ``settings``: the variant's
    own (its variant module's settings class; its defaults if ``None``)."""
    variant = lookup(spec.variant)
    check_continued(spec.variant, lm, config)
    tok = load_tokenizer(inputs.tokenizer)
    every_period = read_sequences(inputs.train, tok, config.max_length)
    train_data = latest_periods(every_period, variant.latest_periods)
    steps_per_epoch = matched_steps(spec.variant, every_period, config)
    dev_data = read_sequences(inputs.dev, tok, config.max_length)
    untrained = variant.latest_periods == 0   # baseline-0: the pretrained LM as it is
    if untrained and not config.freeze_lm:
        raise UserError(f"{spec.variant} is the base LM as it is, trained on no period",
                        fix="pass --freeze-lm (train.base: adapted does)")
    for path, data in ((inputs.train, train_data), (inputs.dev, dev_data)):
        if not data and not (untrained and path == inputs.train):
            raise UserError("the split has no abstracts", path=path,
                            fix="check the split params (split.*) and rerun `dvc repro split`")
    kinds = variant.reads
    # a time-free control pools its history over the training periods (and records them)
    static = in_time_order(train_data) if variant.static else None
    # a relative variant reads its window against the training periods' pooled level
    reference = in_time_order(train_data) if variant.relative else None
    histories = load_histories({*train_data, *dev_data}, spec.window, kinds, inputs.frequencies,
                               inputs.embeddings, tokenizer=inputs.tokenizer,
                               static_periods=static, reference_periods=reference)
    feature_dim = next((int(h.emb.shape[-1]) for h in histories.values() if h.emb is not None), None)

    torch.manual_seed(config.seed)   # the same seed gives every variant the same initial base LM
    base = build_base_lm(lm, tok, config.max_length, spec.dropout)
    set_dropout(base, spec.dropout)
    model = make_future_lm(base, spec.variant, spec.window, settings=settings,
                           dropout=spec.dropout, feature_dim=feature_dim,
                           context_length=config.max_length, seed=config.seed,
                           target_vectors=target_vectors(variant.name, inputs.targets_from),
                           static_periods=static, reference_periods=reference)

    # Resume only from a checkpoint of this very configuration and these very inputs.
    history_periods = in_time_order({p for h in histories.values()
                                     for p in (h.pooled or h.periods)})
    files = [inputs.train, inputs.dev, inputs.tokenizer]
    if kinds:   # the reference level is read from the frequency files alone
        files += [Path(inputs.frequencies or "") / f"{p}.parquet"
                  for p in in_time_order({*history_periods, *(reference or ())})]
    if "embeddings" in kinds:
        files += [Path(inputs.embeddings or "") / f"{p}.safetensors" for p in history_periods]
    if FORECASTS.name in kinds:   # the forecast of each target period (a control: its pooled ones)
        files += [forecasts_dir(inputs.frequencies or "") / f"{p}.parquet"
                  for p in (static or in_time_order(histories))]
    for folder in (lm.init_from, inputs.targets_from):
        if folder is not None:
            files += [Path(folder) / CONFIG_NAME, Path(folder) / WEIGHTS_NAME]
    own = model.bias_config.settings
    matched = {} if steps_per_epoch is None else {"steps_per_epoch": steps_per_epoch}
    key = run_key({"lm": identity(lm), "model": identity(spec), "train": identity(config),
                   "settings": None if own is None else asdict(own), **matched},
                  [Path(f) for f in files])
    return TrainRun(run_name(spec.variant, config.seed), model, train_data, dev_data, histories,
                    tok.eos_token_id, key, lm, config, steps_per_epoch)


def check_continued(name: str, lm: LMConfig, config: TrainConfig) -> None:
    """continued-N trains the whole LM of a trained Baseline: it needs ``--init-from`` and no
    ``--freeze-lm`` (a :class:`UserError` naming the option otherwise)."""
    if not lookup(name).continued:
        return
    if lm.init_from is None:
        raise UserError(f"{name} continues the seed's trained Baseline, but no model was given",
                        fix="pass --init-from data/models/baseline-s<seed>")
    if config.freeze_lm:
        raise UserError(f"{name} trains the whole LM further; --freeze-lm would leave it the "
                        "Baseline", fix="drop --freeze-lm")


def matched_steps(name: str, every_period: Sequences, config: TrainConfig) -> int | None:
    """The optimizer steps per epoch of a matched-steps run: the Baseline's, one pass over
    every training period's abstracts (``every_period``), so that over ``train.epochs`` epochs
    it takes the Baseline's steps, ``epochs * sum_p ceil(n_p / (batch_size * grad_accum))``,
    from its N latest periods; ``None`` (one pass over its own data per epoch) for every other
    run. Matched: continued-N always (its budget is a temporal variant's extra training) and
    baseline-N (N >= 1) with ``train.latest_steps: matched``."""
    variant = lookup(name)
    matched = variant.continued or (bool(variant.latest_periods)
                                    and config.latest_steps == "matched")
    if not matched:
        return None
    return steps_per_pass({p: len(s) for p, s in every_period.items()}, config.batch_size,
                          config.grad_accum)


def target_vectors(variant: str, baseline: Path | None) -> torch.Tensor | None:
    """A continuous variant's fixed targets: the input embeddings of the trained Baseline
    ``baseline`` (:mod:`pipeline.models.heads` says why); ``None`` for the other variants."""
    if not lookup(variant).targets_from_baseline:
        return None
    if baseline is None:
        raise UserError(f"the {variant} model's target vectors are a trained Baseline's input "
                        "embeddings", fix="pass --targets-from data/models/baseline-s<seed>")
    return frozen_input_embeddings(load_future_lm(baseline).lm)


@dataclass(frozen=True)
class TrainResult:
    state: TrainState
    metrics: dict
    curves: Path              # DVCLive's plots/metrics folder
    checkpoints: Checkpoints  # clear it once the outputs are written


def execute(run: TrainRun, *, device: torch.device | str, checkpoint_root: str | Path,
            dist: Dist = SINGLE) -> TrainResult:
    """Train ``run.model`` in place (resuming from ``checkpoint_root/<name>`` when its key
    matches); it ends with the weights of its best dev epoch (on rank 0 when ``dist`` has
    several processes: rank 0 alone writes checkpoints, curves and the model)."""
    checkpoints = Checkpoints(Path(checkpoint_root) / run.name, run.key)
    live_dir = checkpoints.dir / "live"
    state = train(run.model, run.train_data, run.dev_data, run.histories, run.config,
                  pad_id=run.pad_id, device=device, checkpoints=checkpoints, live_dir=live_dir,
                  dist=dist, steps_per_epoch=run.steps_per_epoch)
    return TrainResult(state, train_metrics(run, state), live_dir / "plots" / "metrics",
                       checkpoints)


def train_metrics(run: TrainRun, state: TrainState) -> dict:
    """``train_metrics.json`` of the model folder."""
    model = run.model
    return {
        "variant": model.variant, "seed": run.config.seed, "base": run.lm_config.base,
        "init_from": run.lm_config.init_from, "freeze_lm": run.config.freeze_lm,
        "context_length": model.context_length,
        "train_periods": in_time_order(run.train_data), "dev_periods": in_time_order(run.dev_data),
        "train_abstracts": sum(len(s) for s in run.train_data.values()),
        "epochs_run": len(state.dev_ppl), "best_epoch": state.best_epoch + 1,
        "best_dev_ppl": state.best_ppl, "dev_ppl": state.dev_ppl,
        "stopped_early": state.stopped_early, "steps": state.step, "train_tokens": state.tokens,
        "parameters_lm": sum(p.numel() for p in model.lm.parameters()),
        "parameters_new": sum(p.numel() for p in model.bias.parameters()) if model.bias else 0,
        # a matched-steps run's epoch: the Baseline's steps per epoch (other runs: one pass)
        **({} if run.steps_per_epoch is None else {"steps_per_epoch": run.steps_per_epoch}),
    }


# ----------------------------------------------------------------------- frozen-base cache

CACHE_FIX = ("rerun its stage: `dvc repro base_cache-s<seed>` (train.base: shared) or "
             "`dvc repro base_cache` (train.base: frozen); python -m stages.base_cache")


def cache_sequences(tokenizer: Path, splits: Sequence[Path], context_length: int) -> Sequences:
    """Every abstract of the split files ``splits``, encoded as training and scoring encode them,
    per period: what a cache of an LM's states holds (a clear error when there is none)."""
    tok = load_tokenizer(tokenizer)
    sequences: Sequences = {}
    for split in splits:
        sequences.update(read_sequences(split, tok, context_length))
    if not sequences:
        raise UserError("the splits have no abstracts to cache", path=splits[0],
                        fix="check the split params (split.*) and rerun `dvc repro split`")
    return sequences


def write_base_cache(lm: PreTrainedModel, tokenizer: Path, splits: Sequence[Path], out: Path,
                     context_length: int, *, batch_size: int, device: torch.device | str,
                     precision: str, storage: Storage) -> dict[str, int]:
    """Cache the final hidden states of the frozen LM ``lm`` (:func:`frozen_lm`) over every
    abstract of the split files ``splits`` (encoded as training and scoring encode them) in
    ``out``; returns the abstracts cached per period."""
    sequences = cache_sequences(tokenizer, splits, context_length)
    lm = lm.to(device)
    build_cache(lm, sequences, out, lm_identity(lm, tokenizer, context_length),
                batch_size=batch_size, device=device, precision=precision, storage=storage)
    return {p: len(s) for p, s in sequences.items()}


def frozen_lm(lm: LMConfig, tokenizer: Path, context_length: int) -> PreTrainedModel:
    """The LM a frozen-base run keeps fixed, built as :func:`prepare_run` builds it: the LM of
    ``lm.init_from`` (shared base: a trained Baseline) or the pretrained ``lm.base`` (frozen),
    with the portable attention every :class:`FutureLM` runs (so its states are the wrapped LM's)."""
    base = build_base_lm(lm, load_tokenizer(tokenizer), context_length, dropout=0.0)
    return make_portable(base).eval()


def open_cache(cache: Path, lm: PreTrainedModel, tokenizer: Path,
               context_length: int) -> dict[str, PeriodHidden]:
    """The cached states of ``cache`` after checking they are ``lm``'s over this tokenizer and
    context length (a :class:`UserError` naming the stage to rerun otherwise)."""
    try:
        return load_cache(cache, lm_identity(lm, tokenizer, context_length))
    except UserError as err:
        raise UserError(err.what, path=err.path, fix=CACHE_FIX) from None


def attach_cache(model: FutureLM, cache: Path, tokenizer: Path) -> HiddenMemo:
    """Let ``model`` read its frozen LM's states from ``cache`` (:meth:`FutureLM.use_hidden_memo`)
    after checking the cache is this very LM's (weights digest), tokenizer and context length;
    returns the memo, whose ``hits``/``misses`` say how many batches it served."""
    memo = HiddenMemo(open_cache(cache, model.lm, tokenizer, model.context_length))
    model.use_hidden_memo(memo)
    return memo


def execute_cached(run: TrainRun, cache: Path, tokenizer: Path, *, device: torch.device | str,
                   checkpoint_root: str | Path) -> TrainResult:
    """Train a frozen-LM run (``freeze_lm``: shared or frozen base) from the cached hidden states
    in ``cache`` (single process, no resume: a cached epoch is short); the same result as
    :func:`execute` up to float rounding. A cache of another LM, tokenizer, context length or
    other abstracts is a :class:`UserError` naming the stage to rerun."""
    if not run.config.freeze_lm:
        raise UserError("--cache holds a frozen LM's hidden states: it needs a frozen LM",
                        fix="pass --freeze-lm (train.base: shared or frozen)")
    states = open_cache(cache, run.model.lm, tokenizer, run.config.max_length)
    data: dict[str, dict[str, PeriodHidden]] = {}
    for split, wanted in (("train", run.train_data), ("dev", run.dev_data)):
        data[split] = {p: states[p] for p in wanted if p in states}
        if any(p not in states or states[p].sequences() != s for p, s in wanted.items()):
            raise UserError(f"the base cache does not hold this run's {split} abstracts (another "
                            "split or encoding)", path=cache, fix=CACHE_FIX)
    checkpoints = Checkpoints(Path(checkpoint_root) / run.name, run.key)
    state = train_cached(run.model, data["train"], data["dev"], run.histories, run.config,
                         device=device)
    live_dir = checkpoints.dir / "live"
    write_curves(live_dir, state.curve)
    return TrainResult(state, {**train_metrics(run, state), "cache": str(cache)},
                       live_dir / "plots" / "metrics", checkpoints)
