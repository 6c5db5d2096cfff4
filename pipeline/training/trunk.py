"""The trunk cache and the runs that read it (``train.base: adapted``).

Three stages read a pretrained LM's *trunk* (its embeddings and bottom ``L − k`` blocks, never
trained; ``k`` = ``train.adapt_layers``, :mod:`pipeline.models.blocks`):

* ``trunk_cache`` — :func:`write_trunk_cache`: the states entering block ``L − k`` of every
  train, dev and test abstract, once for all seeds;
* ``train-baseline[-N]-s<seed>`` — :func:`execute_adapted`: the Baseline adapted to the training
  periods by fine-tuning its top ``k`` blocks from them (:mod:`pipeline.training.adapted`);
* ``base_cache-s<seed>`` / ``base_cache`` — :func:`write_cache_from_trunk`: the final states of
  the seed's adapted Baseline (or of the pretrained LM as it is, the unadapted reference
  ``baseline-0``) computed from the trunk cache by the top blocks alone, in the batches the trunk
  was cached in, so they are the states the whole LM computes. Every other variant of the seed
  then trains its module on them and is scored from them, as with ``train.base: frozen``.

A trunk cache's identity digests only the weights its states depend on
(:func:`pipeline.models.blocks.trunk_weights`), so the pretrained LM and each adapted Baseline
(whose trunk is the pretrained one) open the same cache, and a cache of another LM, tokenizer,
context length or split point is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
from transformers import PreTrainedModel

from pipeline.features.base_cache import (PeriodHidden, Storage, build_cache, hidden_from,
                                          lm_identity, load_cache, write_cache)
from pipeline.infra.errors import UserError
from pipeline.models.blocks import (split_layer, top_modules, top_states, trunk_states,
                                    trunk_weights)
from pipeline.training.adapted import train_adapted
from pipeline.training.checkpoints import Checkpoints
from pipeline.training.loop import write_curves
from pipeline.training.run import TrainResult, TrainRun, cache_sequences, train_metrics

TRUNK_FIX = ("rerun its stage: `dvc repro trunk_cache` (train.base: adapted); "
             "python -m stages.base_cache --trunk-of K")


def open_trunk(trunk: Path, lm: PreTrainedModel, tokenizer: Path, context_length: int,
               top: int) -> dict[str, PeriodHidden]:
    """The trunk cache's states entering ``lm``'s top ``top`` blocks, after checking they are
    this LM's trunk over this tokenizer and context length."""
    layer = split_layer(lm, top)
    expected = lm_identity(lm, tokenizer, context_length, layer=layer,
                           weights=trunk_weights(lm, layer))
    try:
        return load_cache(trunk, expected)
    except UserError as err:
        raise UserError(err.what, path=err.path, fix=TRUNK_FIX) from None


def write_trunk_cache(lm: PreTrainedModel, tokenizer: Path, splits: Sequence[Path], out: Path,
                      context_length: int, top: int, *, batch_size: int,
                      device: torch.device | str, precision: str,
                      storage: Storage) -> dict[str, int]:
    """Cache the states entering the top ``top`` blocks of the pretrained ``lm`` over every
    abstract of ``splits`` (encoded as training and scoring encode them); returns the abstracts
    cached per period."""
    sequences = cache_sequences(tokenizer, splits, context_length)
    layer = split_layer(lm, top)
    lm = lm.to(device)
    identity = lm_identity(lm, tokenizer, context_length, layer=layer,
                           weights=trunk_weights(lm, layer))
    build_cache(lm, sequences, out, identity, batch_size=batch_size, device=device,
                precision=precision, storage=storage,
                states=lambda ids, mask: trunk_states(lm, ids, mask, layer))
    return {p: len(s) for p, s in sequences.items()}


@torch.no_grad()
def write_cache_from_trunk(lm: PreTrainedModel, tokenizer: Path, trunk: Path, out: Path,
                           context_length: int, top: int, *, batch_size: int,
                           device: torch.device | str, precision: str,
                           storage: Storage) -> dict[str, int]:
    """Cache the final states of ``lm`` (an adapted Baseline's LM, or the pretrained one) for
    every abstract of the trunk cache, from its states by ``lm``'s top ``top`` blocks; the
    cache's identity is ``lm``'s, as :func:`pipeline.training.run.attach_cache` expects.
    ``batch_size`` must be the trunk cache's (the stage graph passes the same param)."""
    layer = split_layer(lm, top)
    lm = lm.to(device).eval()
    parts = open_trunk(trunk, lm, tokenizer, context_length, top)
    periods = write_cache((hidden_from(part, lambda h, mask: top_states(lm, h, mask, layer),
                                       batch_size, device, precision)
                           for part in parts.values()),
                          out, lm_identity(lm, tokenizer, context_length), storage)
    return {p: len(parts[p]) for p in periods}


def execute_adapted(run: TrainRun, trunk: Path, tokenizer: Path, top: int, *,
                    device: torch.device | str, checkpoint_root: str | Path) -> TrainResult:
    """Adapt the Baseline ``run.model`` (a pretrained LM, no module) to its training periods by
    fine-tuning its top ``top`` blocks from the trunk cache (one process, no resume: an epoch
    runs only the top blocks)."""
    if run.model.bias is not None:
        raise UserError(f"--trunk adapts a Baseline; {run.model.variant} has a module",
                        fix="train the other variants with --init-from the adapted Baseline "
                            "--freeze-lm --cache data/cache/baseline-s<seed>")
    states = open_trunk(trunk, run.model.lm, tokenizer, run.config.max_length, top)
    data: dict[str, dict[str, PeriodHidden]] = {}
    for split, wanted in (("train", run.train_data), ("dev", run.dev_data)):
        if any(p not in states or states[p].sequences() != s for p, s in wanted.items()):
            raise UserError(f"the trunk cache does not hold this run's {split} abstracts "
                            "(another split or encoding)", path=trunk, fix=TRUNK_FIX)
        data[split] = {p: states[p] for p in wanted}
    checkpoints = Checkpoints(Path(checkpoint_root) / run.name, run.key)
    state = train_adapted(run.model, data["train"], data["dev"], top, run.config, device=device)
    live_dir = checkpoints.dir / "live"
    write_curves(live_dir, state.curve)
    metrics = {**train_metrics(run, state), "trunk": str(trunk), "adapt_layers": top,
               "parameters_adapted": sum(p.numel() for m in top_modules(run.model.lm, top)
                                         for p in m.parameters())}
    return TrainResult(state, metrics, live_dir / "plots" / "metrics", checkpoints)
