"""Resume state of a training run: progress, RNG states and the run's key, written atomically.

Every ``checkpoint_every`` optimizer steps and after each epoch, model, optimizer, schedule, RNG
states and progress (:class:`TrainState`) are written to the checkpoint folder, tagged with a key
of the run's configuration and inputs (:func:`run_key`). A rerun with the same key resumes and
continues exactly as an uninterrupted run would; a different key starts afresh.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as torch_dist
from safetensors.torch import load_model, save_model
from tqdm.auto import tqdm

from pipeline.infra.distributed import SINGLE, Dist, barrier
from pipeline.models.future_lm import FutureLM
from pipeline.infra.io import atomic_path


CHECKPOINT = "checkpoint.pt"
BEST = "best.safetensors"

@dataclass
class TrainState:
    """Progress, saved with every checkpoint. ``epoch_step`` counts optimizer steps done in
    ``epoch``."""

    epoch: int = 0
    epoch_step: int = 0
    step: int = 0
    tokens: int = 0
    dev_ppl: list[float] = field(default_factory=list)
    best_ppl: float = math.inf
    best_epoch: int = -1
    bad_epochs: int = 0
    stopped_early: bool = False
    curve: list[dict[str, float]] = field(default_factory=list)   # DVCLive rows, for replay
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


def _rng_state() -> dict[str, Any]:
    """This process's RNG states (CPU, and the current CUDA device's)."""
    return {"cpu": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state() if torch.cuda.is_available() else None}


def _set_rng_state(state: Mapping[str, Any]) -> None:
    torch.set_rng_state(state["cpu"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


def seed_process(seed: int, dist: Dist) -> None:
    """Seed dropout: rank 0 with ``seed`` (so one process is the single-process run), every
    other rank with its own stream."""
    torch.manual_seed(seed if dist.rank == 0
                      else int(np.random.SeedSequence([seed, dist.rank]).generate_state(1)[0]))


class Checkpoints:
    """The resume state of one run in ``directory`` (outside DVC outputs), tagged with ``key``.

    With several processes, rank 0 reads and writes the files and the others receive what it
    read (so the folder need not be shared between machines); every method is then called on
    every rank at the same point.
    """

    def __init__(self, directory: str | Path, key: str) -> None:
        self.dir = Path(directory)
        self.key = key

    def save(self, model: FutureLM, optimizer: torch.optim.Optimizer,
             scheduler: torch.optim.lr_scheduler.LRScheduler, state: TrainState,
             dist: Dist = SINGLE) -> None:
        rngs = [_rng_state()]
        if dist.enabled:
            rngs = [None] * dist.world_size
            torch_dist.all_gather_object(rngs, _rng_state())
        if dist.is_main:
            self.dir.mkdir(parents=True, exist_ok=True)
            payload = {
                "key": self.key, "state": asdict(state), "model": model.state_dict(),
                "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                "rng": rngs,
            }
            with atomic_path(self.dir / CHECKPOINT) as tmp:
                torch.save(payload, tmp)
        barrier(dist)

    def load(self, model: FutureLM, optimizer: torch.optim.Optimizer,
             scheduler: torch.optim.lr_scheduler.LRScheduler,
             dist: Dist = SINGLE) -> TrainState | None:
        """Restore the last checkpoint into the given objects; ``None`` if there is none to use."""
        payload = self._read() if dist.is_main else None
        if dist.enabled:
            box = [payload]
            torch_dist.broadcast_object_list(box, src=0)
            payload = box[0]
        if payload is None:
            return None
        model.load_state_dict(payload["model"])
        optimizer.load_state_dict(payload["optimizer"])
        scheduler.load_state_dict(payload["scheduler"])
        rngs = payload["rng"]
        if len(rngs) == dist.world_size:
            _set_rng_state(rngs[dist.rank])
        else:
            state = TrainState(**payload["state"])
            seed_process(hash((state.step, dist.rank)) & 0x7FFFFFFF, dist)
            if dist.is_main:
                tqdm.write(f"the checkpoint was written by {len(rngs)} processes, this run has "
                           f"{dist.world_size}: resuming, but dropout draws differ from an "
                           "uninterrupted run", file=sys.stderr)
        return TrainState(**payload["state"])

    def _read(self) -> dict[str, Any] | None:
        path = self.dir / CHECKPOINT
        if not path.exists():
            return None
        payload = torch.load(path, map_location="cpu", weights_only=True)
        if payload.get("key") != self.key:
            tqdm.write(f"checkpoint in {self.dir} is from another configuration or input: "
                       "starting afresh")
            self.clear()
            return None
        return payload

    def save_best(self, model: FutureLM, dist: Dist = SINGLE) -> None:
        if dist.is_main:
            self.dir.mkdir(parents=True, exist_ok=True)
            with atomic_path(self.dir / BEST) as tmp:
                save_model(model, str(tmp))
        barrier(dist)

    def load_best(self, model: FutureLM) -> None:
        load_model(model, str(self.dir / BEST), strict=True, device=str(model.device))

    def clear(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


# -------------------------------------------------------------------------- training
