"""Portable modules: the same bits on Intel and AMD CPUs from the same seed.

With the CPU kernels pinned (:mod:`pipeline.infra.numerics`) dropout still depends on the machine:
``bernoulli_`` with a scalar ``p`` (``nn.Dropout``, ``F.dropout``, SDPA's dropout) draws from MKL's
VSL generator on Intel CPUs and from ATen's generator elsewhere, so Intel and AMD drop different
units from the same seed (benchmarks/results/numerics.md). :class:`PortableDropout` draws its mask
from ``torch.rand`` (``>= p``, survivors scaled by ``1/(1-p)``), which is vendor- and
capability-independent; attention dropout goes through it too (:func:`portable_sdpa`).

:func:`make_portable` swaps it into a model in place (``FutureLM`` does it for its LM and bias, so
every future LM built, trained or loaded gets it). The swapped modules are subclasses of
``nn.Dropout`` with the same attributes: ``set_dropout`` still finds them, state-dict keys are
unchanged, and saved weights load into the plain Hugging Face classes. Attention goes through SDPA
registered as ``futurelm_sdpa``: unchanged SDPA whenever its dropout is off (eval: scoring, dev
perplexity, generation) or the tensors are not on the CPU; in CPU training with attention dropout,
the same softmax attention written out with the portable dropout on the weights.

Threads: :class:`ComposedLayerNorm` (``make_portable(..., layer_norm=True)``) replaces LayerNorm's
fused CPU backward, whose per-thread partial sums of the gamma/beta gradients make 1 and 2 threads
differ. It is not applied by default: MKL's SGEMM itself rounds some shapes differently on 1 and 2
threads, so the thread count stays part of the recorded numerics anyway
(:data:`pipeline.infra.numerics.THREADS`), and
the composed form costs time (more so on GPUs, where the fused kernel is exact per thread block).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

ATTENTION = "futurelm_sdpa"


def portable_dropout(x: Tensor, p: float, training: bool = True) -> Tensor:
    """Inverted dropout with a ``torch.rand`` mask: the same units on every CPU for one seed."""
    if not training or p == 0.0:
        return x
    if p >= 1.0:
        return x * 0.0
    # fp32 uniforms whatever x's dtype: bf16 ones would come in steps of 2^-8 and bias the rate
    keep = torch.rand(x.shape, device=x.device) >= p
    return x * keep * (1.0 / (1.0 - p))


class PortableDropout(nn.Dropout):
    """``nn.Dropout`` with a vendor-neutral mask (module doc); ``p``/``inplace`` as in ``nn.Dropout``."""

    def forward(self, x: Tensor) -> Tensor:
        return portable_dropout(x, self.p, self.training)


class ComposedLayerNorm(nn.LayerNorm):
    """``nn.LayerNorm`` over the last dimensions, composed of plain ops (mean, variance, rsqrt,
    affine) so that its backward does not depend on the thread count (module doc; opt-in). Same
    parameters, state-dict keys and ``eps``."""

    def forward(self, x: Tensor) -> Tensor:
        dims = tuple(range(-len(self.normalized_shape), 0))
        mean = x.mean(dims, keepdim=True)
        centred = x - mean
        var = (centred * centred).mean(dims, keepdim=True)
        out = centred * torch.rsqrt(var + self.eps)
        if self.weight is not None:
            out = out * self.weight
        if self.bias is not None:
            out = out + self.bias
        return out


def portable_sdpa(module: nn.Module, query: Tensor, key: Tensor, value: Tensor,
                  attention_mask: Tensor | None, dropout: float = 0.0,
                  scaling: float | None = None, is_causal: bool | None = None,
                  **kwargs) -> tuple[Tensor, None]:
    """Hugging Face's SDPA attention, except with dropout on CPU tensors (module doc)."""
    if dropout == 0.0 or query.device.type != "cpu" or kwargs.get("cache") is not None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, is_causal=is_causal, **kwargs)
    groups = getattr(module, "num_key_value_groups", 1)
    if groups > 1:
        key = key.repeat_interleave(groups, dim=1)
        value = value.repeat_interleave(groups, dim=1)
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    scores = torch.matmul(query, key.transpose(-1, -2)) * scaling
    q_len, kv_len = query.shape[2], key.shape[2]
    if attention_mask is None:
        causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
        if causal and q_len > 1:
            attention_mask = torch.ones(q_len, kv_len, dtype=torch.bool,
                                        device=query.device).tril(kv_len - q_len)
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            # A fully masked row (padding) gets uniform weights instead of NaN, as SDPA's math path.
            scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + attention_mask
    weights = torch.softmax(scores, dim=-1).to(value.dtype)
    weights = portable_dropout(weights, dropout)
    out = torch.matmul(weights, value).transpose(1, 2).contiguous()
    return out, None


AttentionInterface.register(ATTENTION, portable_sdpa)
AttentionMaskInterface.register(ATTENTION, sdpa_mask)


def make_portable(model: nn.Module, *, layer_norm: bool = False) -> nn.Module:
    """Swap ``model``'s dropout modules (and with ``layer_norm`` its LayerNorms) for the portable
    ones, in place (module doc), and route SDPA attention through :func:`portable_sdpa`. Returns
    ``model``."""
    for module in model.modules():
        if type(module) is nn.Dropout:
            module.__class__ = PortableDropout
        elif layer_norm and type(module) is nn.LayerNorm:
            module.__class__ = ComposedLayerNorm
        config = getattr(module, "config", None)
        if (hasattr(module, "set_attn_implementation") and config is not None
                and getattr(config, "_attn_implementation", None) == "sdpa"):
            module.set_attn_implementation(ATTENTION)
    return model


def is_portable(model: nn.Module) -> bool:
    """No native dropout module left in ``model``, and SDPA attention (if any) is the portable one."""
    config = getattr(model, "config", None)
    return (not any(type(m) is nn.Dropout for m in model.modules())
            and getattr(config, "_attn_implementation", None) != "sdpa")
