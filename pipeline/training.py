"""Training a future LM (paper §4.2): year-bucketed batches, two learning rates, early stopping.

* **Year-bucketed batches.** A training abstract of year ``i`` is scored with the bias of year
  ``i`` (predicted from years ``i-m .. i-1``). Every batch holds abstracts of one year, so the
  bias is computed once per batch. Batches are shuffled within and across years, from an RNG
  seeded by ``(seed, epoch)`` — the order of any epoch can be rebuilt exactly on resume.
* **Optimisation.** AdamW with one learning rate for the base LM and one for the new temporal
  modules (reference: 5e-5 / 1e-3), linear warm-up then linear decay to 0, gradient clipping,
  gradient accumulation; dev perplexity after each epoch, early stopping with ``patience``; the
  weights of the best epoch are the result. The dev perplexity is the score stage's computation
  (:func:`pipeline.scoring.score_abstracts`) on the same tokens, so the number early stopping
  sees is the number reported for the dev year.
* **Frozen LM (shared-base training).** With ``freeze_lm`` only the bias module is optimised; the
  LM's parameters get no gradients, so autograd records nothing inside the LM (no LM backward),
  and the LM runs in eval mode (no dropout) — the distribution the bias corrects is the one that
  will be scored.
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

import hashlib
import json
import math
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from dvclive import Live
from safetensors.torch import load_model, save_model
from torch import nn
from tqdm.auto import tqdm

from pipeline.config import TrainConfig
from pipeline.future_lm import FutureLM
from pipeline.history import YearHistory
from pipeline.io import atomic_path
from pipeline.nll import Perplexity, collate
from pipeline.scoring import score_abstracts

__all__ = ["BEST", "CHECKPOINT", "Checkpoints", "Perplexity", "TrainConfig", "TrainState",
           "build_optimizer", "collate", "evaluate", "group_by_year", "latest_years",
           "linear_schedule", "run_key", "set_dropout", "train", "year_batches"]

Sequences = Mapping[int, Sequence[Sequence[int]]]   # year -> token-id lists (eos + text + eos)
CHECKPOINT = "checkpoint.pt"
BEST = "best.safetensors"


@dataclass
class TrainState:
    """Progress, saved with every checkpoint. ``batch`` counts micro-batches done in ``epoch``."""

    epoch: int = 0
    batch: int = 0
    step: int = 0
    tokens: int = 0
    dev_ppl: list[float] = field(default_factory=list)
    best_ppl: float = math.inf
    best_epoch: int = -1
    bad_epochs: int = 0
    stopped_early: bool = False
    curve: list[dict[str, float]] = field(default_factory=list)   # DVCLive rows, for replay


# ---------------------------------------------------------------------------------- data

def year_batches(sizes: Mapping[int, int], batch_size: int, seed: int,
                 epoch: int) -> list[tuple[int, list[int]]]:
    """Shuffled single-year batches ``(year, example indices)`` for one epoch.

    Examples are shuffled within each year, cut into batches, and the batches of all years
    shuffled together; deterministic in ``(seed, epoch)``.
    """
    rng = np.random.default_rng([seed, epoch])
    batches: list[tuple[int, list[int]]] = []
    for year in sorted(sizes):
        order = rng.permutation(sizes[year]).tolist()
        batches += [(year, order[i:i + batch_size]) for i in range(0, len(order), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


def latest_years(sequences: Sequences, n: int | None) -> dict[int, Sequence[Sequence[int]]]:
    """The ``n`` most recent years of ``sequences`` (all when ``n`` is None): Baseline-n's data."""
    years = sorted(sequences)
    if n is not None:
        if n < 1:
            raise ValueError(f"baseline-N needs N >= 1, got {n}")
        years = years[-n:]
    return {y: sequences[y] for y in years}


def group_by_year(years: Iterable[int], sequences: Iterable[Sequence[int]]) -> dict[int, list[Sequence[int]]]:
    """``{year: [sequence, ...]}`` in input order."""
    grouped: dict[int, list[Sequence[int]]] = {}
    for year, seq in zip(years, sequences, strict=True):
        grouped.setdefault(int(year), []).append(seq)
    return grouped


# ---------------------------------------------------------------------- optimisation

def set_dropout(model: nn.Module, p: float) -> None:
    """Set every dropout layer to ``p`` (pretrained LMs come with their own rate)."""
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = p
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "attention_dropout"):
        config.attention_dropout = p   # Llama-family models apply it functionally


def build_optimizer(model: FutureLM, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW with two learning rates: ``lr_lm`` for the base LM, ``lr_new`` for the bias module.

    No weight decay on 1-D parameters (norms, biases, scalars), the usual transformer practice.
    """
    groups: list[dict[str, Any]] = []
    parts = [("new", model.bias, config.lr_new)]
    if not config.freeze_lm:
        parts.insert(0, ("lm", model.lm, config.lr_lm))
    else:
        model.lm.requires_grad_(False)
    for name, module, lr in parts:
        if module is None:
            continue
        params = [p for p in module.parameters() if p.requires_grad]
        decay = [p for p in params if p.dim() >= 2]
        no_decay = [p for p in params if p.dim() < 2]
        groups += [{"name": f"{name}", "params": decay, "lr": lr, "weight_decay": config.weight_decay},
                   {"name": f"{name}-no-decay", "params": no_decay, "lr": lr, "weight_decay": 0.0}]
    groups = [g for g in groups if g["params"]]
    if not groups:
        raise ValueError("nothing to train: the LM is frozen and the variant has no bias module")
    return torch.optim.AdamW(groups)


def linear_schedule(optimizer: torch.optim.Optimizer, warmup: int,
                    total: int) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up over ``warmup`` steps, then linear decay to 0 at step ``total``."""
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (total - step) / max(1, total - warmup))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


# ------------------------------------------------------------------------ evaluation

def evaluate(model: FutureLM, sequences: Sequences, histories: Mapping[int, YearHistory | None],
             batch_size: int, pad_id: int) -> Perplexity:
    """Token-level perplexity of ``sequences``, each year scored with its own history: the
    score stage's :func:`pipeline.scoring.score_abstracts`, summed over the years."""
    total = Perplexity(0.0, 0)
    for year in sorted(sequences):
        tokens = score_abstracts(model, sequences[year], None, histories.get(year), batch_size,
                                 pad_id=pad_id, desc=f"dev {year}").tokens
        total = total + Perplexity(float(tokens["nll_sum"].sum()), int(tokens["n_tokens"].sum()))
    return total


def set_train_mode(model: FutureLM, config: TrainConfig) -> None:
    """Training mode, except a frozen LM, which runs as when scored (no dropout)."""
    model.train()
    if config.freeze_lm:
        model.lm.eval()


# ----------------------------------------------------------------------- checkpoints

def run_key(config: Mapping[str, Any], files: Iterable[Path] = ()) -> str:
    """A key of a run: its configuration and the contents of its input files (sha256).

    Checkpoints of another key are never resumed from, so a changed parameter or input restarts.
    """
    digest = hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode())
    for path in sorted(Path(p) for p in files):
        targets = sorted(path.rglob("*")) if path.is_dir() else [path]
        for target in targets:
            if target.is_file():
                digest.update(str(target.relative_to(path.parent)).encode())
                with open(target, "rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(chunk)
    return digest.hexdigest()[:16]


class Checkpoints:
    """The resume state of one run in ``directory`` (outside DVC outputs), tagged with ``key``."""

    def __init__(self, directory: str | Path, key: str) -> None:
        self.dir = Path(directory)
        self.key = key

    def save(self, model: FutureLM, optimizer: torch.optim.Optimizer,
             scheduler: torch.optim.lr_scheduler.LRScheduler, state: TrainState) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        payload = {
            "key": self.key, "state": asdict(state), "model": model.state_dict(),
            "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
            "rng_cpu": torch.get_rng_state(),
            "rng_cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        }
        with atomic_path(self.dir / CHECKPOINT) as tmp:
            torch.save(payload, tmp)

    def load(self, model: FutureLM, optimizer: torch.optim.Optimizer,
             scheduler: torch.optim.lr_scheduler.LRScheduler) -> TrainState | None:
        """Restore the last checkpoint into the given objects; ``None`` if there is none to use."""
        path = self.dir / CHECKPOINT
        if not path.exists():
            return None
        payload = torch.load(path, map_location="cpu", weights_only=True)
        if payload.get("key") != self.key:
            tqdm.write(f"checkpoint in {self.dir} is from another configuration or input: "
                       "starting afresh")
            self.clear()
            return None
        model.load_state_dict(payload["model"])
        optimizer.load_state_dict(payload["optimizer"])
        scheduler.load_state_dict(payload["scheduler"])
        torch.set_rng_state(payload["rng_cpu"])
        if payload["rng_cuda"]:
            torch.cuda.set_rng_state_all(payload["rng_cuda"])
        return TrainState(**payload["state"])

    def save_best(self, model: FutureLM) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        with atomic_path(self.dir / BEST) as tmp:
            save_model(model, str(tmp))

    def load_best(self, model: FutureLM) -> None:
        load_model(model, str(self.dir / BEST), strict=True, device=str(next(model.parameters()).device))

    def clear(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


# -------------------------------------------------------------------------- training

StepCallback = Callable[[TrainState, float], None]


def _open_live(live_dir: Path, curve: list[dict[str, float]]) -> Live:
    """A fresh DVCLive folder holding ``curve`` (the rows logged before a resume) once each."""
    shutil.rmtree(live_dir, ignore_errors=True)
    live = Live(str(live_dir), dvcyaml=False, save_dvc_exp=False, report=None)
    for row in curve:
        _log(live, row)
    return live


def _log(live: Live, row: Mapping[str, float]) -> None:
    live.step = int(row["step"])
    for name, value in row.items():
        if name != "step":
            live.log_metric(name, value)


def train(model: FutureLM, train_data: Sequences, dev_data: Sequences,
          histories: Mapping[int, YearHistory | None], config: TrainConfig, *, pad_id: int,
          device: torch.device | str, checkpoints: Checkpoints, live_dir: str | Path,
          on_step: StepCallback | None = None) -> TrainState:
    """Train ``model`` in place (it ends with the weights of its best dev epoch); returns the state.

    ``histories[year]`` is the history of each train and dev year (``None`` for the baseline).
    ``on_step(state, loss)`` is called after each optimizer step (after any checkpoint).
    """
    device = torch.device(device)
    missing = [y for y in (*train_data, *dev_data) if model.bias is not None and histories.get(y) is None]
    if missing:
        raise ValueError(f"no history for years {sorted(set(missing))}: the {model.variant} model "
                         "needs the features of the m years before each train/dev year")
    histories = {y: (h.to(device) if h is not None else None) for y, h in histories.items()}
    sizes = {y: len(s) for y, s in train_data.items()}
    n_batches = sum(math.ceil(n / config.batch_size) for n in sizes.values())
    steps_per_epoch = math.ceil(n_batches / config.grad_accum)
    model.to(device)
    optimizer = build_optimizer(model, config)
    total_steps = config.epochs * steps_per_epoch
    scheduler = linear_schedule(optimizer, config.warmup_steps, total_steps)

    state = checkpoints.load(model, optimizer, scheduler)
    if state is None:
        torch.manual_seed(config.seed)
        state = TrainState()
    else:
        tqdm.write(f"resuming from step {state.step} of {total_steps}, checkpoint "
                   f"{checkpoints.dir / CHECKPOINT}", file=sys.stderr)
    live = _open_live(Path(live_dir), state.curve)

    bar = tqdm(total=config.epochs * n_batches, initial=state.epoch * n_batches + state.batch,
               desc=f"train {model.variant}", unit="batch", dynamic_ncols=True)
    started, tokens_at_start = time.perf_counter(), state.tokens
    while state.epoch < config.epochs and not state.stopped_early:
        set_train_mode(model, config)
        batches = year_batches(sizes, config.batch_size, config.seed, state.epoch)
        while state.batch < n_batches:
            group = batches[state.batch:state.batch + config.grad_accum]
            optimizer.zero_grad(set_to_none=True)
            step_loss = 0.0
            for year, index in group:
                batch = {k: v.to(device) for k, v in
                         collate([train_data[year][i] for i in index], pad_id).items()}
                loss = model(batch["input_ids"], batch["attention_mask"], histories.get(year),
                             labels=batch["input_ids"]).loss
                if not torch.isfinite(loss):
                    raise FloatingPointError(f"non-finite training loss at step {state.step} "
                                             f"(year {year}): lower train.lr_lm / train.lr_new")
                (loss / len(group)).backward()
                step_loss += loss.item() / len(group)
                state.tokens += int(batch["attention_mask"].sum())
            if config.grad_clip > 0:
                nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
            lr = optimizer.param_groups[0]["lr"]
            optimizer.step()
            scheduler.step()
            state.batch += len(group)
            state.step += 1
            row = {"step": state.step, "train/loss": step_loss, "train/lr": lr}
            state.curve.append(row)
            _log(live, row)
            bar.update(len(group))
            elapsed = max(1e-9, time.perf_counter() - started)
            bar.set_postfix(loss=f"{step_loss:.3f}",
                            tok_s=f"{(state.tokens - tokens_at_start) / elapsed:,.0f}")
            if state.step % config.checkpoint_every == 0 and state.batch < n_batches:
                checkpoints.save(model, optimizer, scheduler, state)
            if on_step is not None:
                on_step(state, step_loss)
        _end_epoch(model, dev_data, histories, config, pad_id, device, state, checkpoints, live)
        checkpoints.save(model, optimizer, scheduler, state)
    bar.close()
    live.end()
    checkpoints.load_best(model)
    return state


def _end_epoch(model: FutureLM, dev_data: Sequences, histories: Mapping[int, YearHistory | None],
               config: TrainConfig, pad_id: int, device: torch.device, state: TrainState,
               checkpoints: Checkpoints, live: Live) -> None:
    """Dev perplexity, best-weights bookkeeping and early stopping at the end of an epoch."""
    ppl = evaluate(model, dev_data, histories, config.eval_batch_size, pad_id).ppl
    tqdm.write(f"{model.variant} epoch {state.epoch + 1}: dev ppl {ppl:.2f}")
    state.dev_ppl.append(ppl)
    row = {"step": state.step, "dev/ppl": ppl, "epoch": state.epoch + 1}
    state.curve.append(row)
    _log(live, row)
    if ppl < state.best_ppl:
        state.best_ppl, state.best_epoch, state.bad_epochs = ppl, state.epoch, 0
        checkpoints.save_best(model)
    else:
        state.bad_epochs += 1
        state.stopped_early = 0 < config.patience <= state.bad_epochs
    state.epoch += 1
    state.batch = 0
