"""A pretrained LM's body cut in two: the bottom blocks (the *trunk*) and the top ``k`` blocks.

A domain-adapted Baseline (``train.base: adapted``) fine-tunes only the top ``k``
transformer blocks and the final norm of a pretrained LM; the trunk, the input embeddings and the
(tied) output layer stay as pretrained. The states entering block ``L − k`` are then the same
numbers in every seed and epoch, so they are computed once (:func:`trunk_states`, stored by
:mod:`pipeline.features.base_cache` as the *trunk cache*), and every training step, dev
evaluation and the adapted model's final states run only :func:`top_states`: blocks
``L − k .. L − 1`` and the final norm, from the cached states.

Both run the LM's own forward with its block list sliced (and, for the top, the input embedding
and any absolute position embedding bypassed), so masks, rotary position embeddings and attention
are computed by the model's own code: ``top_states(trunk_states(x, L − k), L − k)`` is the LM's
``last_hidden_state`` of ``x`` in the same batches (``tests/test_blocks.py``). Right padding is
harmless: a causal position never attends to a later (padded) one.

:data:`BODIES` names, per architecture (``config.model_type``), the block list, the final norm
and what the input adds before block 0 besides the token embedding; an architecture not listed
is a :class:`UserError` naming the supported ones.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from transformers import PreTrainedModel

from pipeline.infra.errors import UserError


@dataclass(frozen=True)
class Body:
    """Attribute names in a model's ``base_model``: the block list, the final norm, and the
    modules between the token embedding and block 0 that a run from cached states must skip
    (GPT-2 adds an absolute position embedding and applies embedding dropout; Llama-style models
    add nothing: their rotary positions are computed inside the forward, from the positions)."""

    blocks: str
    norm: str
    positions: str | None = None
    input_dropout: str | None = None


_LLAMA = Body("layers", "norm")
BODIES: dict[str, Body] = {
    "llama": _LLAMA, "mistral": _LLAMA, "qwen2": _LLAMA, "qwen3": _LLAMA, "olmo2": _LLAMA,
    "gpt2": Body("h", "ln_f", positions="wpe", input_dropout="drop"),
}


class _ZeroPositions(nn.Module):
    """Stands in for an absolute position embedding: adds exactly 0 to the cached states."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.width = width

    def forward(self, position_ids: Tensor) -> Tensor:
        return torch.zeros((*position_ids.shape, self.width), device=position_ids.device)


def body_of(lm: PreTrainedModel) -> Body:
    """The :class:`Body` of ``lm``'s architecture (a :class:`UserError` if not supported)."""
    kind = getattr(lm.config, "model_type", None)
    if kind not in BODIES:
        raise UserError(f"adapting the top blocks of a {kind!r} model is not supported",
                        path="lm.base", fix=f"use a base LM of type {', '.join(sorted(BODIES))}, "
                                            "or train.base: shared / frozen")
    return BODIES[kind]


def n_blocks(lm: PreTrainedModel) -> int:
    """L, the number of transformer blocks of ``lm``."""
    return len(getattr(lm.base_model, body_of(lm).blocks))


def split_layer(lm: PreTrainedModel, top: int) -> int:
    """``L − top``: the block where the top ``top`` blocks begin (checked: 1 <= top <= L)."""
    total = n_blocks(lm)
    if not 1 <= top <= total:
        raise UserError(f"train.adapt_layers {top} is not between 1 and the {total} blocks of "
                        "the base LM", path="train.adapt_layers",
                        fix=f"set train.adapt_layers to 1 .. {total}")
    return total - top


def top_modules(lm: PreTrainedModel, top: int) -> list[nn.Module]:
    """The modules an adapted Baseline trains: the top ``top`` blocks and the final norm."""
    body = body_of(lm)
    blocks = getattr(lm.base_model, body.blocks)
    return [*blocks[split_layer(lm, top):], getattr(lm.base_model, body.norm)]


@contextlib.contextmanager
def _sliced(lm: PreTrainedModel, start: int, stop: int, *, final_norm: bool,
            from_states: bool) -> Iterator[None]:
    """``lm.base_model`` runs blocks ``start .. stop − 1`` only; without ``final_norm`` its
    output is the last block's (un-normed); ``from_states``: its ``inputs_embeds`` are states
    entering block ``start``, taken as given (no position embedding, no input dropout)."""
    body, base = body_of(lm), lm.base_model
    saved = {name: getattr(base, name) for name in
             (body.blocks, body.norm, body.positions, body.input_dropout) if name is not None}
    try:
        setattr(base, body.blocks, nn.ModuleList(list(saved[body.blocks])[start:stop]))
        if not final_norm:
            setattr(base, body.norm, nn.Identity())
        if from_states:
            if body.positions is not None:
                setattr(base, body.positions, _ZeroPositions(lm.config.hidden_size))
            if body.input_dropout is not None:
                setattr(base, body.input_dropout, nn.Identity())
        yield
    finally:
        for name, module in saved.items():
            setattr(base, name, module)


def trunk_states(lm: PreTrainedModel, input_ids: Tensor, attention_mask: Tensor,
                 layer: int) -> Tensor:
    """The hidden states ``[B, T, d]`` entering block ``layer`` (the output of blocks
    ``0 .. layer − 1``; ``layer = 0``: the input embeddings as block 0 receives them)."""
    with _sliced(lm, 0, layer, final_norm=False, from_states=False):
        return lm.base_model(input_ids=input_ids, attention_mask=attention_mask,
                             use_cache=False).last_hidden_state


def top_states(lm: PreTrainedModel, hidden: Tensor, attention_mask: Tensor, layer: int) -> Tensor:
    """The final hidden states ``[B, T, d]`` (what the output layer reads) of states ``hidden``
    entering block ``layer``: blocks ``layer .. L − 1`` and the final norm."""
    with _sliced(lm, layer, n_blocks(lm), final_norm=True, from_states=True):
        return lm.base_model(inputs_embeds=hidden, attention_mask=attention_mask,
                             use_cache=False).last_hidden_state


def trunk_weights(lm: PreTrainedModel, layer: int) -> dict[str, Tensor]:
    """The part of ``lm``'s state the states entering block ``layer`` depend on: all but the
    blocks from ``layer`` up, the final norm and the output layer. A trunk cache's identity
    digests it (:func:`pipeline.features.base_cache.lm_identity`), so the cache serves the
    pretrained LM and every Baseline adapted from it above ``layer`` alike."""
    body, prefix = body_of(lm), lm.base_model_prefix
    above = (*(f"{prefix}.{body.blocks}.{i}." for i in range(layer, n_blocks(lm))),
             f"{prefix}.{body.norm}.")
    output = next(name for name, module in lm.named_modules()
                  if module is lm.get_output_embeddings())
    return {name: tensor for name, tensor in lm.state_dict().items()
            if not name.startswith(above) and not name.startswith(f"{output}.")}
