"""torch.distributed for futurelm's stages: one process per device, started by ``torchrun``.

``torchrun --nproc_per_node N -m stages.<name> ...`` (``python -m torch.distributed.run``) starts
N copies of a stage and tells each its place through environment variables (``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``); multi-node runs add
``--nnodes``/``--node_rank``/``--rdzv_endpoint``. :func:`init` reads them and joins the process
group: NCCL when the stage runs on CUDA (each process on ``cuda:LOCAL_RANK``), gloo on the CPU
(how the tests run two processes on 127.0.0.1). Without those variables everything here is a
no-op for a single process (:data:`SINGLE`), so a stage has one code path for 1 or N processes.

What the stages build from these helpers:

- work split across ranks: :func:`shard` (round-robin, e.g. a year's encoder batches),
  :func:`split_evenly` (one contiguous part of one global batch) and :func:`shard_period_batches`
  (every rank takes the same year at every step, so each step has one history on all ranks);
- partial results combined: :func:`all_reduce_sum` (sums and counts), :func:`all_reduce_max`,
  :func:`broadcast_module`;
- outputs written once: :func:`on_main` (rank 0 writes, the others wait at a barrier).

A stage also runs itself under torchrun when asked for N processes without having been started
by it (:func:`relaunch`), so ``dvc repro`` keeps its one ``cmd`` per stage.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TypeVar

import torch
import torch.distributed as torch_dist

from pipeline.infra.errors import UserError

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Dist:
    """This process's place among the stage's processes (rank 0 of 1 when not distributed)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


SINGLE = Dist()


def from_env(environ: Mapping[str, str] | None = None) -> Dist:
    """The place torchrun gave this process (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``)."""
    env = os.environ if environ is None else environ
    try:
        world = int(env.get("WORLD_SIZE", "1"))
        rank = int(env.get("RANK", "0"))
        local = int(env.get("LOCAL_RANK", str(rank)))
    except ValueError as err:
        raise UserError(f"torchrun's environment is not valid ({err})",
                        fix="start the stage with `torchrun`, or unset RANK/WORLD_SIZE/LOCAL_RANK") from None
    if world < 1 or not 0 <= rank < world:
        raise UserError(f"RANK={rank} is outside WORLD_SIZE={world}",
                        fix="start the stage with `torchrun`, or unset RANK/WORLD_SIZE")
    return Dist(rank=rank, world_size=world, local_rank=local)


def launched() -> bool:
    """True inside a process started by torchrun (even with one process)."""
    return "WORLD_SIZE" in os.environ and "RANK" in os.environ


def rank_device(device: torch.device, dist: Dist) -> torch.device:
    """The device of this rank: ``cuda`` becomes ``cuda:LOCAL_RANK``; CPU stays CPU."""
    if device.type != "cuda" or not dist.enabled:
        return device
    if device.index is not None:
        raise UserError(f"device {device} names one GPU, but {dist.world_size} processes share it",
                        fix="use device `cuda` (or `auto`) under torchrun: rank k takes cuda:LOCAL_RANK")
    return torch.device("cuda", dist.local_rank)


def init(device: torch.device, timeout_s: float = 1800.0) -> tuple[Dist, torch.device]:
    """Join torchrun's process group (NCCL on CUDA, gloo on CPU); returns this rank and device.

    A process not started by torchrun gets :data:`SINGLE` and ``device`` unchanged. ``timeout_s``
    bounds every collective (a peer that died makes the others fail instead of hanging).
    """
    dist = from_env() if launched() else SINGLE
    if not dist.enabled:
        return dist, device
    device = rank_device(device, dist)
    if not torch_dist.is_initialized():
        if device.type == "cuda":
            torch.cuda.set_device(device)
        torch_dist.init_process_group("nccl" if device.type == "cuda" else "gloo",
                                      rank=dist.rank, world_size=dist.world_size,
                                      timeout=timedelta(seconds=timeout_s))
    return dist, device


def shutdown() -> None:
    """Leave the process group (safe to call when none was joined)."""
    if torch_dist.is_available() and torch_dist.is_initialized():
        torch_dist.destroy_process_group()


@contextlib.contextmanager
def session(device: torch.device, timeout_s: float = 1800.0) -> Iterator[tuple[Dist, torch.device]]:
    """:func:`init` for the duration of a ``with`` block, then :func:`shutdown`."""
    try:
        yield init(device, timeout_s)
    finally:
        shutdown()


# --- splitting work -------------------------------------------------------------------------------

def shard(items: Sequence[T], dist: Dist) -> list[T]:
    """This rank's items, round-robin (``items[rank::world]``): with items sorted by cost (the
    embeddings plan sorts its batches by length) every rank gets a similar mix."""
    return list(items[dist.rank::dist.world_size])


def split_bounds(n: int, dist: Dist) -> tuple[int, int]:
    """``[start, stop)`` of this rank's contiguous part of ``n`` items; parts differ by at most 1."""
    base, extra = divmod(n, dist.world_size)
    start = dist.rank * base + min(dist.rank, extra)
    return start, start + base + (dist.rank < extra)


def split_evenly(items: Sequence[T], dist: Dist) -> list[T]:
    """This rank's contiguous part of ``items`` (e.g. of one global batch)."""
    start, stop = split_bounds(len(items), dist)
    return list(items[start:stop])


def shard_period_batches(batches: Sequence[tuple[str, Sequence[T]]],
                         dist: Dist) -> list[tuple[str, list[T]]]:
    """Each global period-batch ``(period, examples)`` split across ranks, in the same order.

    Every rank gets as many steps as there are global batches, and step k has the same period on
    every rank (one history per step, as DDP needs identical bias modules in every forward). A
    rank's part can be empty when a batch has fewer examples than ranks; the caller weights each
    rank's loss by its share (e.g. its tokens over the global batch's) so that the all-reduced
    gradient equals the single-process one.
    """
    return [(period, split_evenly(examples, dist)) for period, examples in batches]


# --- combining results ----------------------------------------------------------------------------

def all_reduce_sum(tensor: torch.Tensor, dist: Dist) -> torch.Tensor:
    """Sum ``tensor`` over ranks in place (and return it); a no-op for one process.

    Integer tensors add exactly, so sums of fixed-point numbers do not depend on the world size.
    """
    if dist.enabled:
        torch_dist.all_reduce(tensor, op=torch_dist.ReduceOp.SUM)
    return tensor


def all_reduce_max(tensor: torch.Tensor, dist: Dist) -> torch.Tensor:
    """Maximum of ``tensor`` over ranks in place (and return it); a no-op for one process."""
    if dist.enabled:
        torch_dist.all_reduce(tensor, op=torch_dist.ReduceOp.MAX)
    return tensor


def broadcast_module(module: torch.nn.Module, dist: Dist, src: int = 0) -> torch.nn.Module:
    """Give every rank rank ``src``'s parameters and buffers (same architecture on every rank)."""
    if dist.enabled:
        with torch.no_grad():
            for tensor in module.state_dict().values():
                torch_dist.broadcast(tensor, src=src)
    return module


def barrier(dist: Dist) -> None:
    if dist.enabled:
        torch_dist.barrier()


def on_main(dist: Dist, write: Callable[..., R], *args: object, **kwargs: object) -> R | None:
    """Run ``write`` on rank 0 only (checkpoints, feature files, logs), then wait for it on every
    rank, so that no rank reads a file rank 0 is still writing. Returns its result on rank 0."""
    result = write(*args, **kwargs) if dist.is_main else None
    barrier(dist)
    return result


# --- starting processes ---------------------------------------------------------------------------

def torchrun_command(module: str, argv: Sequence[str], nproc: int) -> list[str]:
    """``python -m torch.distributed.run --standalone --nproc_per_node N -m <module> <argv>``
    (one machine; for several machines run torchrun by hand, see the README's "Scaling up")."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc_per_node={int(nproc)}", "-m", module, *argv]


def relaunch(module: str, argv: Sequence[str], nproc: int) -> int:
    """Run ``module`` with ``argv`` as ``nproc`` processes under torchrun; its exit status."""
    return subprocess.run(torchrun_command(module, argv, nproc), check=False).returncode
