"""Where torch work runs: one rule for every stage (the runtime setting ``device``, runtime.yaml or
``FUTURELM_DEVICE``; never a DVC param, since it cannot change results)."""

from __future__ import annotations

import torch

from pipeline.infra.errors import UserError


def pick_device(device: str = "auto") -> torch.device:
    """``auto`` = CUDA when present, else CPU; anything else is passed to ``torch.device``.

    A string torch cannot read (``gpu``) is a :class:`UserError` naming the valid forms.
    """
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        return torch.device(device)
    except (RuntimeError, ValueError):
        raise UserError(f"{device!r} is not a device", path="device (runtime.yaml, "
                        "FUTURELM_DEVICE or --device)",
                        fix="use auto, cpu, cuda or cuda:N") from None
