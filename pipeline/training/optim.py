"""The optimiser of a future LM: AdamW with two learning rates, linear warm-up and decay.

One learning rate for the base LM and one for the new temporal modules (reference: 5e-5 / 1e-3),
weight decay on matrices only; :func:`set_dropout` gives a pretrained LM the run's dropout.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from pipeline.infra.schema.config import TrainConfig
from pipeline.models.future_lm import FutureLM


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
