"""The domain-adapted Baseline: a pretrained LM's top blocks fine-tuned from the trunk cache
(``train.base: adapted``).

In the paper every variant and the Baseline are the pretrained LM fine-tuned on the training
periods. On a 2-core CPU full fine-tuning of a 30-block LM costs ~10 minutes per epoch and seed,
so the Baseline here fine-tunes only the top ``k`` blocks and the final norm
(``train.adapt_layers``; :func:`pipeline.models.blocks.top_modules`), with the input embeddings,
the bottom ``L − k`` blocks and the (tied) output layer as pretrained. The states entering block
``L − k`` are then fixed: the *trunk cache* (:mod:`pipeline.features.base_cache`, stage
``trunk_cache``) holds them once for every seed, and a step here runs only the top blocks, the
output layer, the next-token NLL (eq. 1 of the paper: the LM's loss, no bias) and the backward
through the top blocks (:func:`pipeline.models.blocks.top_states`).

Everything else is :func:`pipeline.training.cached.train_cached`'s, from the same helpers: the
steps of :func:`pipeline.training.batches.period_steps` (one period per step, ``grad_accum``
micro-batches), the step's loss as the mean of its micro-batches' token-mean NLLs, AdamW at
``train.lr_lm`` (:func:`pipeline.training.optim.build_optimizer` over the trainable blocks), the
linear schedule, clipping, seeding, dev perplexity per epoch in scoring's batches, early stopping
and the best epoch's weights. So it equals fine-tuning the same blocks with the whole LM run every
step, up to float rounding of differently padded batches (``tests/test_adapted.py``). Each seed's
adapted Baseline is then frozen, and every other variant of that seed trains its module on it
(``train.base: adapted`` = ``shared`` from here on), from the final states its
``base_cache-s<seed>`` stage computes from the same trunk cache.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from pipeline.features.base_cache import PeriodHidden
from pipeline.infra.schema.config import TrainConfig
from pipeline.infra.distributed import SINGLE
from pipeline.infra.precision import autocast, matmul_precision
from pipeline.models.blocks import split_layer, top_modules, top_states
from pipeline.models.future_lm import FutureLM
from pipeline.models.nll import next_token_targets, token_nll
from pipeline.models.perplexity import Perplexity
from pipeline.training.batches import period_steps
from pipeline.training.cached import StepCallback, perplexity_in_time_order, score_states
from pipeline.training.checkpoints import TrainState, seed_process
from pipeline.training.loop import record_dev
from pipeline.training.optim import build_optimizer, linear_schedule


def trunk_logits(model: FutureLM, trunk: Tensor, attention_mask: Tensor, layer: int) -> Tensor:
    """The LM's logits ``[B, T, |V|]`` of states ``trunk`` entering block ``layer``."""
    return model.lm.get_output_embeddings()(top_states(model.lm, trunk, attention_mask, layer))


def score_trunk(model: FutureLM, part: PeriodHidden, layer: int, batch_size: int) -> np.ndarray:
    """Per-abstract ``[nll_sum, n_tokens]`` of one period of the trunk cache
    (:func:`pipeline.training.cached.score_states` through the top blocks)."""
    return score_states(model, part, lambda trunk, mask: trunk_logits(model, trunk, mask, layer),
                        batch_size)


def evaluate_trunk(model: FutureLM, cache: Mapping[str, PeriodHidden], layer: int,
                   batch_size: int, *, precision: str = "fp32") -> Perplexity:
    """Token-level perplexity of the trunk cache's periods."""
    return perplexity_in_time_order(
        model, cache, lambda p: score_trunk(model, cache[p], layer, batch_size), precision)


def train_adapted(model: FutureLM, train_data: Mapping[str, PeriodHidden],
                  dev_data: Mapping[str, PeriodHidden], top: int, config: TrainConfig, *,
                  device: torch.device | str = "cpu",
                  on_step: StepCallback | None = None) -> TrainState:
    """Fine-tune the top ``top`` blocks and the final norm of the Baseline ``model`` (no bias
    module) from the trunk cache's states entering them; the model ends with the weights of
    its best dev epoch."""
    if model.bias is not None:
        raise ValueError(f"only the Baseline is adapted from the trunk cache, not {model.variant}")
    if config.freeze_lm:
        raise ValueError("adapting the Baseline trains its top blocks: freeze_lm must be off")
    layer = split_layer(model.lm, top)
    device = torch.device(device)
    model.to(device)
    trained = top_modules(model.lm, top)
    model.lm.requires_grad_(False)
    for module in trained:
        module.requires_grad_(True)
    sizes = {p: len(part) for p, part in train_data.items()}
    optimizer = build_optimizer(model, config)   # the trainable (top) blocks at lr_lm
    total_steps = config.epochs * len(period_steps(sizes, config.batch_size, config.grad_accum,
                                                   config.seed, 0))
    scheduler = linear_schedule(optimizer, config.warmup_steps, total_steps)
    seed_process(config.seed, SINGLE)
    state, best = TrainState(), _weights(trained)
    with matmul_precision(device, config.precision):
        while state.epoch < config.epochs and not state.stopped_early:
            model.eval()                  # the frozen trunk and output layer run as when scored
            for module in trained:
                module.train()            # dropout in the blocks being trained
            plan = period_steps(sizes, config.batch_size, config.grad_accum, config.seed,
                                state.epoch)
            for period, micro in plan:
                optimizer.zero_grad(set_to_none=True)
                loss = _forward_backward(model, train_data[period], micro, layer, config, device)
                if not math.isfinite(loss):
                    raise FloatingPointError(f"non-finite training loss at step {state.step} "
                                             f"(period {period}): lower train.lr_lm")
                if config.grad_clip > 0:
                    nn.utils.clip_grad_norm_([p for m in trained for p in m.parameters()],
                                             config.grad_clip)
                lr = optimizer.param_groups[0]["lr"]
                optimizer.step()
                scheduler.step()
                lengths = train_data[period].lengths()
                state.tokens += sum(lengths[i] for index in micro for i in index)
                state.epoch_step += 1
                state.step += 1
                state.curve.append({"step": state.step, "train/loss": loss, "train/lr": lr})
                if on_step is not None:
                    on_step(state, loss)
            ppl = evaluate_trunk(model, dev_data, layer, config.eval_batch_size,
                                 precision=config.precision).ppl
            state.curve.append({"step": state.step, "dev/ppl": ppl, "epoch": state.epoch + 1})
            if record_dev(state, ppl, config):
                best = _weights(trained)
    for module, weights in zip(trained, best):
        module.load_state_dict(weights)
    model.lm.requires_grad_(False)
    model.eval()
    return state


def _weights(modules: Sequence[nn.Module]) -> list[dict[str, Tensor]]:
    return [copy.deepcopy(m.state_dict()) for m in modules]


def _forward_backward(model: FutureLM, part: PeriodHidden, micro: Sequence[Sequence[int]],
                      layer: int, config: TrainConfig, device: torch.device) -> float:
    """Gradients of one step: the mean over micro-batches of each one's token-mean NLL."""
    step_loss = torch.zeros((), dtype=torch.float64, device=device)
    for index in micro:
        trunk, ids, mask = part.batch(index, device)
        weight = 1.0 / ((int(mask.sum()) - len(index)) * len(micro))
        with autocast(device, config.precision):
            logits = trunk_logits(model, trunk, mask, layer)
        nll = token_nll(logits, next_token_targets(ids, mask)).sum()
        (nll * weight).backward()
        step_loss += nll.detach().double() * weight
    return float(step_loss)
