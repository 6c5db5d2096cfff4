"""How one run trains, picked once from the train stage's options: through its LM every step
(:func:`pipeline.training.run.execute`, in one process or several), from a frozen LM's cached
final states (``--cache``: :func:`pipeline.training.run.execute_cached`), or by adapting the
Baseline's top blocks from the trunk cache (``--trunk``:
:func:`pipeline.training.trunk.execute_adapted`).

The training regime (``train.base``, :mod:`pipeline.graph.regimes`) decides which options a
run's stage gets; this module only maps them to the function that trains.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from pipeline.infra.distributed import SINGLE, Dist
from pipeline.infra.errors import UserError
from pipeline.training.run import TrainResult, TrainRun, execute, execute_cached
from pipeline.training.trunk import execute_adapted


@dataclass(frozen=True)
class Execution:
    """The cached states a run trains from: none (its LM every step), a frozen LM's final
    states (``cache``), or the trunk cache whose top ``adapt_layers`` blocks it adapts."""

    cache: Path | None = None
    trunk: Path | None = None
    adapt_layers: int = 0

    @classmethod
    def from_options(cls, cache: str | None, trunk: str | None,
                     adapt_layers: int | None) -> Execution:
        """From ``--cache``, ``--trunk`` and ``--adapt-layers`` (at most one of the caches)."""
        if cache and trunk:
            raise UserError("--cache and --trunk name two sources of cached states; a run "
                            "trains from one", fix="--trunk (with --adapt-layers) adapts the "
                            "Baseline; --cache trains a frozen LM's variant")
        return cls(Path(cache) if cache else None, Path(trunk) if trunk else None,
                   adapt_layers or 0)

    @property
    def cached(self) -> bool:
        """It reads cached states (so runs in one process)."""
        return self.cache is not None or self.trunk is not None

    @property
    def source(self) -> str:
        """What it trains from, for the stage's summary line (empty: its LM)."""
        if self.trunk is not None:
            return " from the trunk cache"
        return " from the frozen-base cache" if self.cache is not None else ""

    def train(self, run: TrainRun, tokenizer: Path, *, device: torch.device | str,
              checkpoint_root: str | Path, dist: Dist = SINGLE) -> TrainResult:
        """Train ``run.model`` in place the way the options say."""
        if self.cached and run.steps_per_epoch is not None:   # cached training runs passes
            raise UserError(f"{run.name} takes the Baseline's steps from fewer abstracts, which "
                            "training from a cache of hidden states does not do",
                            fix="drop --cache / --trunk (continued-N and baseline-N fine-tune "
                                "their LM)")
        if self.cached and dist.enabled:
            raise UserError("training from a cache of hidden states runs in one process",
                            fix="drop --processes / torchrun (a cached epoch is short)")
        if self.trunk is not None:
            return execute_adapted(run, self.trunk, tokenizer, self.adapt_layers, device=device,
                                   checkpoint_root=checkpoint_root)
        if self.cache is not None:
            return execute_cached(run, self.cache, tokenizer, device=device,
                                  checkpoint_root=checkpoint_root)
        return execute(run, device=device, checkpoint_root=checkpoint_root, dist=dist)
