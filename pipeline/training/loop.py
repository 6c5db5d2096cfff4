"""Training a future LM (paper §4.2): period-bucketed steps, two learning rates, early stopping.

* **Period-bucketed steps.** A training abstract of period ``i`` (a label: a year, half-year,
  quarter or month, :mod:`pipeline.corpus.periods`) is scored with the bias of period ``i``
  (predicted from periods ``i-m .. i-1``). Every optimizer step holds abstracts of one period:
  ``batch_size x grad_accum`` of them, in ``grad_accum`` micro-batches of ``batch_size``
  (:func:`pipeline.training.batches.period_steps`). The bias's history-only part (the LSTM over the vocabulary's periods) is
  therefore computed once per step, its backward run once with the gradients of all
  micro-batches summed — the same gradient as computing it per micro-batch. Steps are shuffled
  within and across periods, from an RNG seeded by ``(seed, epoch)``; the order of any epoch can be
  rebuilt exactly on resume. A matched-steps run (continued-N, Baseline-N with
  ``train.latest_steps: matched``) takes the Baseline's steps per epoch from its fewer abstracts,
  cycling over them (:func:`pipeline.training.batches.epoch_steps`).
* **Optimisation.** AdamW with one learning rate for the base LM and one for the new temporal
  modules (reference: 5e-5 / 1e-3), linear warm-up then linear decay to 0, gradient clipping,
  gradient accumulation (the step's loss is the mean of its micro-batches' token-mean NLLs);
  a module with its own objective (the temperature and continuous heads, ``own_objective``)
  replaces the NLL by its loss, summed the same way (``train/loss`` is then that loss);
  dev perplexity after each epoch, early stopping with ``patience``; the weights of the best
  epoch are the result. The dev perplexity is the score stage's computation
  (:func:`pipeline.models.scoring.score_abstracts`) on the same tokens, so the number early stopping
  sees is the number reported for the dev period (in the same ``precision``).
* **Precision** (``config.precision``, :mod:`pipeline.infra.precision`): forward passes under bf16
  autocast for ``bf16``; TF32 CUDA matrix products for ``tf32`` and ``bf16``; the NLL in fp32.
* **Frozen LM (shared-base training).** With ``freeze_lm`` only the bias module is optimised; the
  LM's parameters get no gradients, so autograd records nothing inside the LM (no LM backward),
  and the LM runs in eval mode (no dropout) — the distribution the bias corrects is the one that
  will be scored.
* **Several processes** (``dist``, :mod:`pipeline.infra.distributed`; ``torchrun``): the model is
  wrapped in DistributedDataParallel. Each micro-batch is one *global* batch of ``batch_size``
  abstracts, split across the ranks (:func:`pipeline.infra.distributed.split_evenly`), so every rank
  has the same period — one history — at every step. Each rank's loss is its tokens' NLL sum over
  the global batch's token count (times the world size, which DDP's gradient average divides
  out), so the all-reduced gradient is the single-process one; a rank whose share of a small
  batch is empty runs its forward with weight 0. Dev perplexity is computed on a share of the
  dev batches per rank and summed exactly (per-abstract sums in corpus order). Rank 0 alone
  writes checkpoints, best weights and DVCLive; every rank's RNG state is saved, so a resume
  with the same number of processes continues bit-identically.
* **Interruption-safe.** Every ``checkpoint_every`` optimizer steps and after each epoch, model,
  optimizer, schedule, RNG states and progress are written atomically to the checkpoint folder,
  tagged with a key of the run's configuration and inputs. A rerun with the same key resumes from
  there (and says so) and continues exactly as an uninterrupted run would; a different key starts
  afresh.
* **Curves.** DVCLive (``Live(dir, dvcyaml=False)``) logs ``train/loss``, ``train/lr`` per
  optimizer step and ``dev/ppl`` per epoch; on resume the curve is replayed from the checkpoint so
  it holds each step exactly once.
"""

from __future__ import annotations

import contextlib
import math
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from dvclive import Live
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel
from tqdm.auto import tqdm

from pipeline.infra.schema.config import TrainConfig
from pipeline.infra.distributed import SINGLE, Dist, all_reduce_sum, shard, split_evenly
from pipeline.models.future_lm import FutureLM
from pipeline.corpus.periods import in_time_order
from pipeline.features.history import PeriodHistory
from pipeline.models.encoding import longest_first
from pipeline.models.nll import collate, next_token_targets, token_nll
from pipeline.models.perplexity import Perplexity
from pipeline.models.scoring import score_abstracts
from pipeline.infra.precision import autocast, compute_precision, matmul_precision
from pipeline.training.batches import Sequences, epoch_steps
from pipeline.training.checkpoints import CHECKPOINT, Checkpoints, TrainState, seed_process
from pipeline.training.optim import build_optimizer, linear_schedule

StepCallback = Callable[[TrainState, float], None]   # called after each optimizer step (state, loss)



def evaluate(model: FutureLM, sequences: Sequences, histories: Mapping[str, PeriodHistory | None],
             batch_size: int, pad_id: int, *, precision: str = "fp32",
             dist: Dist = SINGLE) -> Perplexity:
    """Token-level perplexity of ``sequences``, each period scored with its own history: the
    score stage's :func:`pipeline.models.scoring.score_abstracts`, summed over the periods in
    time order.

    With several processes each rank scores every ``world``-th of the batches score_abstracts
    forms (longest abstracts first, ``batch_size`` each), so every abstract is scored in the very
    batch it has in one process; the per-abstract sums are all-reduced (each has one nonzero
    term, so the sum is exact) and added up in corpus order: the same number as one process.
    """
    device = model.device
    total = Perplexity(0.0, 0)
    for period in in_time_order(sequences):
        seqs = sequences[period]
        order = longest_first(seqs)                          # score_abstracts' order
        batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
        mine = [i for batch in shard(batches, dist) for i in batch]
        sums = torch.zeros(len(seqs), 2, dtype=torch.float64)
        if mine:
            with compute_precision(device, precision):
                tokens = score_abstracts(model, [seqs[i] for i in mine], None, histories.get(period),
                                         batch_size, pad_id=pad_id, desc=f"dev {period}").tokens
            sums[mine] = torch.as_tensor(tokens[["nll_sum", "n_tokens"]].to_numpy(np.float64))
        sums = all_reduce_sum(sums.to(device), dist).cpu()   # NCCL reduces on the GPU
        total = total + Perplexity(float(pd.Series(sums[:, 0].numpy()).sum()),
                                   int(sums[:, 1].sum()))
    return total


def set_train_mode(model: FutureLM, config: TrainConfig) -> None:
    """Training mode, except a frozen LM, which runs as when scored (no dropout)."""
    model.train()
    if config.freeze_lm:
        model.lm.eval()


def _open_live(live_dir: Path, curve: list[dict[str, float]]) -> Live:
    """A fresh DVCLive folder holding ``curve`` (the rows logged before a resume) once each."""
    shutil.rmtree(live_dir, ignore_errors=True)
    live = Live(str(live_dir), dvcyaml=False, save_dvc_exp=False, report=None)
    for row in curve:
        _log(live, row)
    return live


def write_curves(live_dir: str | Path, curve: list[dict[str, float]]) -> None:
    """A DVCLive folder holding ``curve`` (``TrainState.curve`` rows), as :func:`train` leaves
    it: for training that logs no curve as it goes (:mod:`pipeline.training.cached`)."""
    _open_live(Path(live_dir), curve).end()


def _log(live: Live | None, row: Mapping[str, float]) -> None:
    if live is None:   # not rank 0
        return
    live.step = int(row["step"])
    for name, value in row.items():
        if name != "step":
            live.log_metric(name, value)


def _wrap(model: FutureLM, dist: Dist) -> nn.Module:
    """The module a training forward runs through: DDP across ranks, the model itself alone.

    Buffers are constants here (not broadcast each step). An LSTM over a one-period window never
    multiplies by its recurrent weights, so DDP must then look for unused parameters.
    """
    if not dist.enabled:
        return model
    unused = model.bias is not None and model.window == 1
    return DistributedDataParallel(model, device_ids=None, broadcast_buffers=False,
                                   find_unused_parameters=unused)


def train(model: FutureLM, train_data: Sequences, dev_data: Sequences,
          histories: Mapping[str, PeriodHistory | None], config: TrainConfig, *, pad_id: int,
          device: torch.device | str, checkpoints: Checkpoints, live_dir: str | Path,
          on_step: StepCallback | None = None, dist: Dist = SINGLE,
          steps_per_epoch: int | None = None) -> TrainState:
    """Train ``model`` in place (rank 0's copy ends with the weights of its best dev epoch);
    returns the state.

    ``histories[period]`` is the history of each train and dev period (``None`` for the baseline).
    ``on_step(state, loss)`` is called after each optimizer step (after any checkpoint).
    ``dist``: this process's place when several train together (module doc).
    ``steps_per_epoch``: an epoch's optimizer steps, cycling over ``train_data`` as often as it
    takes (:func:`pipeline.training.batches.epoch_steps`; a matched-steps run); None: one pass.
    """
    device = torch.device(device)
    histories = histories_on(model, train_data, dev_data, histories, device)
    sizes = {p: len(s) for p, s in train_data.items()}
    epoch_plan = epoch_steps(sizes, config.batch_size, config.grad_accum, config.seed, 0,
                             steps_per_epoch)
    n_batches = sum(len(micro) for _, micro in epoch_plan)  # micro-batches per epoch
    model.to(device)
    optimizer = build_optimizer(model, config)
    total_steps = config.epochs * len(epoch_plan)           # the same steps in every epoch
    scheduler = linear_schedule(optimizer, config.warmup_steps, total_steps)
    state = _start_or_resume(model, optimizer, scheduler, checkpoints, total_steps, config, dist)
    live = _open_live(Path(live_dir), state.curve) if dist.is_main else None
    run = _Session(model, _wrap(model, dist), optimizer, scheduler, histories, config, pad_id,
                   device, checkpoints, live, dist, steps_per_epoch, tokens_at_start=state.tokens)
    bar = _progress_bar(model, sizes, config, state, n_batches, dist, steps_per_epoch)
    with matmul_precision(device, config.precision):
        while state.epoch < config.epochs and not state.stopped_early:
            _train_epoch(run, train_data, sizes, state, bar, on_step)
            _end_epoch(model, dev_data, histories, config, pad_id, state, checkpoints, live, dist)
            checkpoints.save(model, optimizer, scheduler, state, dist)
    bar.close()
    if live is not None:
        live.end()
    if dist.is_main:
        checkpoints.load_best(model)
    return state


@dataclass
class _Session:
    """What every optimizer step of one :func:`train` call uses."""

    model: FutureLM
    runner: nn.Module                  # the model, or its DDP wrapper (:func:`_wrap`)
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    histories: Mapping[str, PeriodHistory | None]
    config: TrainConfig
    pad_id: int
    device: torch.device
    checkpoints: Checkpoints
    live: Live | None
    dist: Dist
    steps_per_epoch: int | None        # None: one pass over the data (:func:`epoch_steps`)
    tokens_at_start: int = 0           # with ``started``: the tokens/s shown
    started: float = field(default_factory=time.perf_counter)


def histories_on(model: FutureLM, train_data: Sequences, dev_data: Sequences,
                  histories: Mapping[str, PeriodHistory | None],
                  device: torch.device) -> dict[str, PeriodHistory | None]:
    """Every history on ``device``; a bias model missing a train or dev period's is an error."""
    missing = [p for p in (*train_data, *dev_data) if model.history_kinds and histories.get(p) is None]
    if missing:
        raise ValueError(f"no history for periods {in_time_order(missing)}: the {model.variant} "
                         "model needs the features of the m periods before each train/dev period")
    return {p: (h.to(device) if h is not None else None) for p, h in histories.items()}


def _start_or_resume(model: FutureLM, optimizer: torch.optim.Optimizer,
                     scheduler: torch.optim.lr_scheduler.LRScheduler, checkpoints: Checkpoints,
                     total_steps: int, config: TrainConfig, dist: Dist) -> TrainState:
    """The checkpoint's state (model, optimizer and schedule restored), or a fresh seeded start."""
    state = checkpoints.load(model, optimizer, scheduler, dist)
    if state is None:
        seed_process(config.seed, dist)
        return TrainState()
    if dist.is_main:
        tqdm.write(f"resuming from step {state.step} of {total_steps}, checkpoint "
                   f"{checkpoints.dir / CHECKPOINT}", file=sys.stderr)
    return state


def _progress_bar(model: FutureLM, sizes: Mapping[str, int], config: TrainConfig,
                  state: TrainState, n_batches: int, dist: Dist,
                  steps_per_epoch: int | None) -> tqdm:
    """Micro-batches over the whole run, starting where ``state`` is (rank 0 only)."""
    done = sum(len(m) for _, m in epoch_steps(sizes, config.batch_size, config.grad_accum,
                                              config.seed, state.epoch,
                                              steps_per_epoch)[:state.epoch_step])
    return tqdm(total=config.epochs * n_batches, initial=state.epoch * n_batches + done,
                desc=f"train {model.variant}", unit="batch", dynamic_ncols=True,
                disable=not dist.is_main)


def _train_epoch(run: _Session, train_data: Sequences, sizes: Mapping[str, int],
                 state: TrainState, bar: tqdm, on_step: StepCallback | None) -> None:
    """The optimizer steps of ``state.epoch`` from ``state.epoch_step`` on (all of them unless
    resumed mid-epoch), with checkpoints every ``checkpoint_every`` steps."""
    config = run.config
    set_train_mode(run.model, config)
    plan = epoch_steps(sizes, config.batch_size, config.grad_accum, config.seed, state.epoch,
                       run.steps_per_epoch)
    while state.epoch_step < len(plan):
        period, micro = plan[state.epoch_step]
        step_loss = _optimizer_step(run, period, [[train_data[period][i] for i in index]
                                                  for index in micro], state)
        bar.update(len(micro))
        elapsed = max(1e-9, time.perf_counter() - run.started)
        bar.set_postfix(loss=f"{step_loss:.3f}",
                        tok_s=f"{(state.tokens - run.tokens_at_start) / elapsed:,.0f}")
        if state.step % config.checkpoint_every == 0 and state.epoch_step < len(plan):
            run.checkpoints.save(run.model, run.optimizer, run.scheduler, state, run.dist)
        if on_step is not None:
            on_step(state, step_loss)


def _optimizer_step(run: _Session, period: str, batches: list[list[Sequence[int]]],
                    state: TrainState) -> float:
    """One optimizer step on one period's micro-batches: gradients, clipping, the update, the
    schedule, and the step's row of the curve; returns the step's loss."""
    config = run.config
    run.optimizer.zero_grad(set_to_none=True)
    step_loss = _forward_backward(run.model, run.runner, batches, run.histories.get(period), config,
                                  run.pad_id, run.device, run.dist)
    if not math.isfinite(step_loss):
        raise FloatingPointError(f"non-finite training loss at step {state.step} "
                                 f"(period {period}): lower train.lr_lm / train.lr_new")
    if config.grad_clip > 0:
        nn.utils.clip_grad_norm_(run.model.parameters(), config.grad_clip)
    lr = run.optimizer.param_groups[0]["lr"]
    run.optimizer.step()
    run.scheduler.step()
    state.tokens += sum(len(s) for batch in batches for s in batch)
    state.epoch_step += 1
    state.step += 1
    row = {"step": state.step, "train/loss": step_loss, "train/lr": lr}
    state.curve.append(row)
    _log(run.live, row)
    return step_loss


def _forward_backward(model: FutureLM, runner: nn.Module, batches: list[list[Sequence[int]]],
                      history: PeriodHistory | None, config: TrainConfig, pad_id: int,
                      device: torch.device, dist: Dist) -> float:
    """Forward and backward of one optimizer step (gradients accumulate in the parameters);
    returns the step's loss, the same on every rank.

    ``batches``: the step's global micro-batches. The bias's word terms are computed once; the
    micro-batches before the last read a detached copy that collects their gradient, and the last
    adds ``<terms, collected>`` to its loss, so the bias's backward runs once, with every
    micro-batch's gradient, inside the backward pass in which DDP all-reduces.
    """
    terms, shared = step_terms(model, history, config, device, len(batches))
    step_loss = torch.zeros((), dtype=torch.float64, device=device)
    for j, seqs in enumerate(batches):
        last = j == len(batches) - 1
        n_global = sum(len(s) - 1 for s in seqs)            # predicted tokens of the global batch
        part = split_evenly(seqs, dist)
        weight = dist.world_size / (n_global * len(batches)) if part else 0.0
        batch = {k: v.to(device) for k, v in collate(part or seqs[:1], pad_id).items()}
        sync = last or not dist.enabled
        targets = next_token_targets(batch["input_ids"], batch["attention_mask"])
        with runner.no_sync() if not sync else contextlib.nullcontext():   # type: ignore[operator]
            with autocast(device, config.precision):
                out = runner(batch["input_ids"], batch["attention_mask"], history,
                             terms=terms if last else shared,
                             targets=targets if model.own_objective else None)
            # A module with its own objective returns its summed loss; the others their logits.
            nll = out.loss if model.own_objective else token_nll(out.logits, targets).sum()
            loss = with_collected_terms(nll * weight, terms, shared) if last else nll * weight
            loss.backward()
        if part:
            step_loss += nll.detach().double() * (weight / dist.world_size)
    return float(all_reduce_sum(step_loss, dist))


def step_terms(model: FutureLM, history: PeriodHistory | None, config: TrainConfig,
               device: torch.device, micro_batches: int) -> tuple[Tensor | None, Tensor | None]:
    """The step's word terms, computed once, and what the micro-batches before the last read:
    a detached copy that collects their gradient (the terms themselves with one micro-batch)."""
    terms = None
    if model.bias is not None:
        with autocast(device, config.precision):
            terms = model.word_terms(history)   # type: ignore[arg-type]
    shared = terms.detach().requires_grad_() if terms is not None and micro_batches > 1 else terms
    return terms, shared


def with_collected_terms(loss: Tensor, terms: Tensor | None, shared: Tensor | None) -> Tensor:
    """The last micro-batch's loss plus ``<terms, collected gradient>``: the bias's backward then
    runs once, with the gradient of every micro-batch (:func:`step_terms`)."""
    if shared is not terms and shared is not None and shared.grad is not None:
        return loss + (terms * shared.grad).sum()   # type: ignore[operator]
    return loss


def record_dev(state: TrainState, ppl: float, config: TrainConfig) -> bool:
    """End-of-epoch bookkeeping of a dev perplexity: best epoch, patience, early stop, epoch
    count. True when ``ppl`` is a new best (the caller keeps those weights)."""
    state.dev_ppl.append(ppl)
    better = ppl < state.best_ppl
    if better:
        state.best_ppl, state.best_epoch, state.bad_epochs = ppl, state.epoch, 0
    else:
        state.bad_epochs += 1
        state.stopped_early = 0 < config.patience <= state.bad_epochs
    state.epoch += 1
    state.epoch_step = 0
    return better


def _end_epoch(model: FutureLM, dev_data: Sequences, histories: Mapping[str, PeriodHistory | None],
               config: TrainConfig, pad_id: int, state: TrainState, checkpoints: Checkpoints,
               live: Live | None, dist: Dist) -> None:
    """Dev perplexity, best-weights bookkeeping and early stopping at the end of an epoch."""
    ppl = evaluate(model, dev_data, histories, config.eval_batch_size, pad_id,
                   precision=config.precision, dist=dist).ppl
    if dist.is_main:
        tqdm.write(f"{model.variant} epoch {state.epoch + 1}: dev ppl {ppl:.2f}")
    row = {"step": state.step, "dev/ppl": ppl, "epoch": state.epoch + 1}
    state.curve.append(row)
    _log(live, row)
    if record_dev(state, ppl, config):
        checkpoints.save_best(model, dist)
