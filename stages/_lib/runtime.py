"""Runtime settings (device, workers, nproc): where and how a stage runs, never what it computes.

They live in ``runtime.yaml`` (or the file named by ``FUTURELM_RUNTIME``), each overridable by an
environment variable (``FUTURELM_DEVICE``, ``FUTURELM_WORKERS``, ``FUTURELM_NPROC``). They are
not DVC params, so changing them reruns nothing; a stage's ``--device`` flag, when given, wins
over both. Results do not depend on ``workers`` or ``nproc`` (tested); ``device`` changes the last
bits (GPU kernels differ from CPU ones). The torch thread count is NOT a runtime setting: it is
part of the recorded numerics, fixed at :data:`pipeline.infra.numerics.THREADS` (``threads`` is
that constant here; a stage's ``--threads`` exists for tests and gives other bytes).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path

import yaml

from pipeline.infra.errors import UserError
from pipeline.infra.numerics import THREADS

DEFAULT_FILE = Path(__file__).resolve().parents[1] / "runtime.yaml"
ENV_PREFIX = "FUTURELM_"
SETTINGS = {"device", "workers", "nproc"}   # what runtime.yaml and FUTURELM_* may set


@dataclass(frozen=True)
class Runtime:
    device: str = "auto"
    threads: int = THREADS   # fixed, not read from runtime.yaml or the environment
    workers: int = 2
    nproc: int = 1      # processes per stage under torchrun, for stages that are bit-identical with N


def load_runtime(path: str | os.PathLike[str] | None = None) -> Runtime:
    """Settings from the runtime file, then environment overrides."""
    path = Path(path or os.environ.get(f"{ENV_PREFIX}RUNTIME") or DEFAULT_FILE)
    values: dict[str, object] = {}
    if path.exists():
        try:
            values = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as err:
            raise UserError(f"runtime settings are not valid YAML: {err}", path=path,
                            fix="fix the file, or delete it to use the defaults") from None
        unknown = set(values) - SETTINGS
        if unknown:
            raise UserError(f"unknown runtime settings {sorted(unknown)}", path=path,
                            fix=f"use only {sorted(SETTINGS)}" + (
                                " (threads is fixed: pipeline/infra/numerics.py THREADS)"
                                if "threads" in unknown else ""))
    runtime = replace(Runtime(), **values)
    for f in fields(Runtime):
        if f.name not in SETTINGS:
            continue
        env = os.environ.get(f"{ENV_PREFIX}{f.name.upper()}")
        if env:
            try:
                runtime = replace(runtime, **{f.name: type(getattr(Runtime(), f.name))(env)})
            except ValueError:
                raise UserError(f"{ENV_PREFIX}{f.name.upper()}={env!r} is not a valid {f.name}",
                                fix=f"set it to a {type(getattr(Runtime(), f.name)).__name__}") from None
    return runtime
