"""Shared-base training and scoring from the frozen LM's cached hidden states.

With ``freeze_lm`` (``train.base: shared``) :func:`pipeline.training.optim.build_optimizer` freezes the
whole LM — ``lm_head`` too (GPT-2's is tied to the input embeddings) — and trains only the bias
module; the LM runs in eval mode. Its final hidden states ``H`` are then constants, so
:mod:`pipeline.features.base_cache` computes them once and a step here only runs what reads
``H``, then the module's backward:

* a bias on the logits (Frequency, Context, Context²): ``lm_head(H)`` with the bias hook
  (:meth:`pipeline.models.future_lm.FutureLM.biased`, which also hands ``H`` to Context²'s gate)
  and the NLL;
* an output-layer head with its own objective (contextual temperature, paper 002 eq. 7's
  ``Σ_t LS_t · H_t``; the continuous heads' losses, paper 004): that objective of ``H``
  (:meth:`pipeline.models.future_lm.FutureLM.own_loss`, what the uncached step's
  ``FutureLM.forward(..., targets=)`` computes after the LM's body).

Every variant but those whose module changes the hidden states (``in_body``: temporal
attention) trains here (the rule: :attr:`pipeline.variants._spec.VariantSpec.cacheable`).
Scoring from the cache (:func:`score_cached`) runs ``lm_head(H)`` through the same hook as the
uncached forward, so a head's scored distribution is the uncached one: ``softmax(z / τ)`` for
the temperature heads (eq. 5), the vMF densities renormalised over the vocabulary for the
continuous heads (``softmax(ê · e_k)``, :func:`pipeline.models.continuous.vmf_log_probs`).

Everything else is :func:`pipeline.training.loop.train`'s frozen case, from its own helpers: the
steps of :func:`pipeline.training.batches.period_steps` (one period per step, ``grad_accum``
micro-batches, word terms once per step with every micro-batch's gradient collected on a
detached copy), the step's loss as the mean of its micro-batches' token-mean NLLs, AdamW of
:func:`pipeline.training.optim.build_optimizer`, the linear schedule, gradient clipping, the
seeding of :func:`pipeline.training.checkpoints.seed_process`, dev perplexity per epoch in
scoring's batches, early stopping and the best epoch's weights as the result. So the same
variant and seed reach the same dev perplexity as uncached training, up to float rounding of
the states of differently padded training batches (the cache's states come from scoring's
batches; on padding it holds zeros where the LM's body computes states of the pad tokens, but
those positions have no target and add nothing to the NLL or a head's objective). Single
process, no resume checkpoints and no DVCLive curve (the rows are in ``state.curve``): a cached
epoch is seconds.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn

from pipeline.corpus.periods import in_time_order
from pipeline.features.base_cache import PeriodHidden, longest_first_by_length
from pipeline.features.history import PeriodHistory
from pipeline.infra.schema.config import TrainConfig
from pipeline.infra.distributed import SINGLE
from pipeline.infra.precision import autocast, compute_precision, matmul_precision
from pipeline.models.future_lm import FutureLM
from pipeline.models.nll import next_token_targets, token_nll
from pipeline.models.perplexity import Perplexity
from pipeline.infra.errors import UserError
from pipeline.models.registry import lookup
from pipeline.training.batches import period_steps
from pipeline.training.checkpoints import TrainState, seed_process
from pipeline.training.loop import (histories_on, record_dev, set_train_mode, step_terms,
                                     with_collected_terms)
from pipeline.training.optim import build_optimizer, linear_schedule

StepCallback = Callable[[TrainState, float], None]


def cached_logits(model: FutureLM, hidden: Tensor, history: PeriodHistory | None,
                  terms: Tensor | None = None) -> Tensor:
    """The biased logits ``[B, T, |V|]`` of final hidden states ``hidden`` ``[B, T, d]``: the
    LM's own output layer with the bias hook, exactly what the uncached forward computes."""
    with model.biased(history, terms):
        return model.lm.get_output_embeddings()(hidden)


BatchLogits = Callable[[Tensor, Tensor], Tensor]   # (cached states, attention mask) -> logits


@torch.no_grad()
def score_states(model: FutureLM, part: PeriodHidden, logits: BatchLogits,
                 batch_size: int) -> np.ndarray:
    """Per-abstract ``[nll_sum, n_tokens]`` (float64, corpus order) of one period of a cache of
    states (final ones, or a trunk's: ``logits`` turns a batch of them into logits), in
    :func:`pipeline.models.scoring.score_abstracts`' batches (longest first), the LM in eval mode."""
    was_training = model.training
    model.eval()
    sums = np.zeros((len(part), 2), dtype=np.float64)
    order = longest_first_by_length(part.lengths())
    try:
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            states, ids, mask = part.batch(idx, model.device)
            targets = next_token_targets(ids, mask)
            nll = token_nll(logits(states, mask), targets).double()
            sums[idx] = torch.stack([nll.sum(1), (targets >= 0).sum(1).double()], 1).cpu().numpy()
    finally:
        model.train(was_training)
    return sums


def perplexity_in_time_order(model: FutureLM, periods: Iterable[str],
                             score: Callable[[str], np.ndarray], precision: str) -> Perplexity:
    """Token-level perplexity of the periods' per-abstract sums (``score(period)``), summed in
    time order as :func:`pipeline.training.loop.evaluate` sums them."""
    total = Perplexity(0.0, 0)
    for period in in_time_order(periods):
        with compute_precision(model.device, precision):
            sums = score(period)
        total = total + Perplexity(float(pd.Series(sums[:, 0]).sum()), int(sums[:, 1].sum()))
    return total


def score_cached(model: FutureLM, part: PeriodHidden, history: PeriodHistory | None,
                 batch_size: int) -> np.ndarray:
    """:func:`score_states` of one period of final states, each batch through the bias hook."""
    _check(model, part)
    return score_states(model, part, lambda hidden, _mask: cached_logits(model, hidden, history),
                        batch_size)


def evaluate_cached(model: FutureLM, cache: Mapping[str, PeriodHidden],
                    histories: Mapping[str, PeriodHistory | None], batch_size: int, *,
                    precision: str = "fp32") -> Perplexity:
    """Token-level perplexity of the cached periods, each with its own history."""
    return perplexity_in_time_order(
        model, cache, lambda p: score_cached(model, cache[p], histories.get(p), batch_size),
        precision)


def train_cached(model: FutureLM, train_data: Mapping[str, PeriodHidden],
                 dev_data: Mapping[str, PeriodHidden],
                 histories: Mapping[str, PeriodHistory | None], config: TrainConfig, *,
                 device: torch.device | str = "cpu",
                 on_step: StepCallback | None = None) -> TrainState:
    """Train ``model``'s bias module on cached states (``config.freeze_lm`` must be set); the
    model ends with the weights of its best dev epoch. ``on_step(state, loss)`` after each step."""
    if not config.freeze_lm:
        raise ValueError("cached training needs freeze_lm: the cache holds a frozen LM's states")
    if model.bias is not None and not lookup(model.variant).cacheable:   # the variant's spec
        raise UserError(f"the {model.variant} variant cannot train from the frozen-base cache: "
                        "its module changes the LM's hidden states (which the cache holds fixed)",
                        fix="train it without --cache")
    device = torch.device(device)
    model.to(device)
    for part in (*train_data.values(), *dev_data.values()):
        _check(model, part)
    histories = histories_on(model, train_data, dev_data, histories, device)
    if model.bias is None:
        # A frozen LM with no module (train.base: frozen's Baseline): nothing to train, one dev
        # perplexity of the LM as it is, reported as epoch 1 of 1.
        state = TrainState()
        model.eval()
        _end_epoch(model, dev_data, histories, config, state)
        return state
    sizes = {p: len(part) for p, part in train_data.items()}
    optimizer = build_optimizer(model, config)
    total_steps = config.epochs * len(period_steps(sizes, config.batch_size, config.grad_accum,
                                                   config.seed, 0))
    scheduler = linear_schedule(optimizer, config.warmup_steps, total_steps)
    seed_process(config.seed, SINGLE)
    state, best = TrainState(), copy.deepcopy(model.bias.state_dict() if model.bias else {})
    with matmul_precision(device, config.precision):
        while state.epoch < config.epochs and not state.stopped_early:
            set_train_mode(model, config)
            plan = period_steps(sizes, config.batch_size, config.grad_accum, config.seed, state.epoch)
            for period, micro in plan:
                optimizer.zero_grad(set_to_none=True)
                loss = _forward_backward(model, train_data[period], micro, histories.get(period),
                                         config, device)
                if not math.isfinite(loss):
                    raise FloatingPointError(f"non-finite training loss at step {state.step} "
                                             f"(period {period}): lower train.lr_new")
                if config.grad_clip > 0:
                    nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
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
            if _end_epoch(model, dev_data, histories, config, state) and model.bias is not None:
                best = copy.deepcopy(model.bias.state_dict())
    if model.bias is not None:
        model.bias.load_state_dict(best)
    return state


def _forward_backward(model: FutureLM, part: PeriodHidden, micro: Sequence[Sequence[int]],
                      history: PeriodHistory | None, config: TrainConfig,
                      device: torch.device) -> float:
    """Gradients of one step (loop._forward_backward's single-process arithmetic): word terms
    once; earlier micro-batches collect their gradient on a detached copy, the last adds it.
    The summed loss of a micro-batch is the NLL of the biased logits, or for a module with its
    own objective that objective (``FutureLM.own_loss``; under autocast as in the uncached
    forward), weighted by one over the step's predicted tokens."""
    terms, shared = step_terms(model, history, config, device, len(micro))
    step_loss = torch.zeros((), dtype=torch.float64, device=device)
    for j, index in enumerate(micro):
        last = j == len(micro) - 1
        hidden, ids, mask = part.batch(index, device)
        targets = next_token_targets(ids, mask)   # IGNORE on padding: its zero states add nothing
        weight = 1.0 / ((int(mask.sum()) - len(index)) * len(micro))
        if model.own_objective:
            with autocast(device, config.precision):
                nll = model.own_loss(hidden, targets, history, terms if last else shared)
        else:
            with autocast(device, config.precision):
                logits = cached_logits(model, hidden, history, terms if last else shared)
            nll = token_nll(logits, targets).sum()
        loss = with_collected_terms(nll * weight, terms, shared) if last else nll * weight
        loss.backward()
        step_loss += nll.detach().double() * weight
    return float(step_loss)


def _end_epoch(model: FutureLM, dev_data: Mapping[str, PeriodHidden],
               histories: Mapping[str, PeriodHistory | None], config: TrainConfig,
               state: TrainState) -> bool:
    """Dev perplexity and early-stopping bookkeeping (loop._end_epoch); True on a new best."""
    ppl = evaluate_cached(model, dev_data, histories, config.eval_batch_size,
                          precision=config.precision).ppl
    state.curve.append({"step": state.step, "dev/ppl": ppl, "epoch": state.epoch + 1})
    return record_dev(state, ppl, config)


def _check(model: FutureLM, part: PeriodHidden) -> None:
    """The cache must fit the model: hidden size of its output layer, its context length."""
    width = model.lm.get_output_embeddings().weight.shape[1]
    if part.hidden.shape[1] != width:
        raise ValueError(f"cached states of period {part.period} have {part.hidden.shape[1]} "
                         f"features, the LM's output layer reads {width}: another base LM")
    if len(part) and max(part.lengths()) > model.context_length:
        raise ValueError(f"cached period {part.period} holds abstracts longer than the model's "
                         f"context length {model.context_length}")
