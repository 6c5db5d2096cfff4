"""Where torch work runs: one rule for every stage (`device: auto` in params.yaml)."""

from __future__ import annotations

import torch


def pick_device(device: str = "auto") -> torch.device:
    """``auto`` = CUDA when present, else CPU; anything else is passed to ``torch.device``."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)
