"""Temporal attention (paper 003, Rosin & Radinsky 2022) as a drop-in for HF GPT-2 / BERT.

Eq. 1 is ``softmax(Q Kᵀ / √d_k) V``. Eq. 2 conditions the scores on time::

    TemporalAttention(Q, K, V, T) = softmax(Q Tᵀ T Kᵀ / √d_k) V,    T = Xᵗ W_T

with ``Xᵗ ∈ R^{n×D}`` the time embeddings of the n tokens and ``W_T ∈ R^{D×d_k}`` (one per head
and layer; no bias as in eq. 2, the authors' code has one). The printed eq. 2 has no norm, but
§3.2 says "we then divide by the time matrix's norm" and eq. 6 shows ``/‖T‖``; the authors' code
does ``(Q Tᵀ)(T / ‖T‖) Kᵀ``. We follow that: ``Q (Tᵀ T / ‖T‖_F) Kᵀ / √d_k``, Frobenius norm
(their ``Tensor.norm(2)``). (Eq. 6's per-pair form ``q_i t_i t_jᵀ k_jᵀ / ‖T‖`` is not eq. 2.)
Deviations, so that an output never depends on anything it cannot attend to:

* ``‖T‖`` is per sequence and head; the authors' code takes it over the whole batch tensor,
  which makes a sequence's outputs depend on the other sequences in its batch.
* ``T`` holds the rows of the keys the query may attend to (``scope="visible"``, default):
  the non-pad tokens for BERT, the causal prefix for GPT-2, so future time ids and sequence
  length do not leak and KV-cached decoding equals the full forward. The authors keep all n
  rows, pads included (pads get their own time point, footnote 3). ``scope="sequence"`` gives
  every query the rows of all non-masked keys (GPT-2: the time term then sees the whole
  sequence's time ids and length, never its tokens).

Because ``Q Tᵀ T Kᵀ = Q' Kᵀ`` with ``q'_i = q_i T_iᵀ T_i / ‖T_i‖``, the layer only replaces the
queries and then calls the model's own attention function (eager or sdpa) with the model's
own mask. Note: with one time point per sequence (the paper's setting) ``TᵀT`` has rank 1, so
the scores become ``(q_i·t)(t·k_j)``; ``TᵀT/‖T‖ = I`` needs ≥ d_k orthogonal time rows.

Use: ``emb = add_temporal_attention(model, n_periods)``, then
``with temporal_times(model, emb.ids(periods, attention_mask, input_ids, mask_token_id)):``
``model(...)``. Periods are 0..n_periods-1; ``emb.pad_id`` / ``emb.mask_id`` are the special time
points of padding and [MASK] tokens (footnote 3). Eager and sdpa attention (4D or no mask) are
supported; flash attention (2D masks), cross-attention and GPT-2's ``reorder_and_upcast_attn``
are not. With gradient checkpointing, run ``backward()`` inside the ``with`` block too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Literal

import torch
from torch import Tensor, nn
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.bert.modeling_bert import BertSelfAttention
from transformers.models.bert.modeling_bert import eager_attention_forward as bert_eager
from transformers.models.gpt2.modeling_gpt2 import GPT2Attention
from transformers.models.gpt2.modeling_gpt2 import eager_attention_forward as gpt2_eager

Scope = Literal["visible", "sequence"]


class TimeEmbedding(nn.Module):
    """One D-dimensional vector per period ``0..n_periods-1`` plus two special time points."""

    def __init__(self, n_periods: int, dim: int) -> None:
        super().__init__()
        self.n_periods = n_periods
        self.pad_id = n_periods
        self.mask_id = n_periods + 1
        self.embedding = nn.Embedding(n_periods + 2, dim)
        self.times: Tensor | None = None  # ids of the current forward (see temporal_times)

    def ids(
        self,
        periods: Tensor,
        attention_mask: Tensor | None = None,
        input_ids: Tensor | None = None,
        mask_token_id: int | None = None,
    ) -> Tensor:
        """Per-token time ids ``[B, n]`` from a period per sequence ``[B]`` or per token ``[B, n]``.

        Padding (``attention_mask == 0``) gets ``pad_id``; ``input_ids == mask_token_id`` gets
        ``mask_id``.
        """
        shape = (
            attention_mask.shape
            if attention_mask is not None
            else input_ids.shape
            if input_ids is not None
            else periods.shape
        )
        if periods.dim() == 1 and len(shape) == 2:
            periods = periods[:, None]
        ids = periods.to(torch.long).expand(shape).clone()
        if ids.numel() and (ids.min() < 0 or ids.max() >= self.n_periods):
            raise ValueError(f"periods must lie in [0, {self.n_periods})")
        if attention_mask is not None:
            ids[attention_mask == 0] = self.pad_id
        if input_ids is not None and mask_token_id is not None:
            ids[input_ids == mask_token_id] = self.mask_id
        return ids

    def forward(self, time_ids: Tensor) -> Tensor:
        return self.embedding(time_ids)

    def rows(self, proj: nn.Linear, kv_len: int, device: torch.device) -> Tensor:
        """``T = Xᵗ W_T`` ``[B, kv, H*d]`` for the current time ids (:func:`temporal_times`)."""
        if self.times is None:
            raise RuntimeError("no time ids: call the model inside `with temporal_times(model, ids):`")
        ids = self.times.to(device)
        if ids.dim() == 1:  # one period per sequence
            ids = ids[:, None].expand(-1, kv_len)
        if ids.shape[-1] < kv_len:
            raise ValueError(f"time ids cover {ids.shape[-1]} positions, keys need {kv_len}")
        # W_T on the n_periods + 2 time vectors, then a lookup: the same rows as
        # ``proj(self(ids))`` without a [B * kv, D] x [D, H * d] product per layer
        return proj(self.embedding.weight)[ids[:, :kv_len]]


class PeriodTime:
    """A time source holding one vector for every token of the current forward (the future LM:
    the period's time vector is computed from its history, :mod:`pipeline.models.attention_time`).
    Set ``vector`` (``[D]``) for the duration of a forward; ``None`` outside one."""

    def __init__(self) -> None:
        self.vector: Tensor | None = None

    def rows(self, proj: nn.Linear, kv_len: int, device: torch.device) -> Tensor:
        """``T`` ``[1, kv, H*d]``: the same row ``x W_T`` for every key (broadcast over the batch)."""
        if self.vector is None:
            raise RuntimeError("no time vector: run the model inside FutureLM.biased(history)")
        return proj(self.vector.to(device))[None, None].expand(1, kv_len, -1)


def _visible(mask: Tensor | None, q_len: int, kv_len: int, causal: bool, device: torch.device) -> Tensor:
    """``[B|1, 1, q, kv]`` float 0/1: which keys each query may attend to under ``mask``."""
    if mask is None:
        vis = torch.ones(q_len, kv_len, dtype=torch.bool, device=device)
        if causal and q_len > 1:
            vis = torch.ones_like(vis).tril(kv_len - q_len)
        vis = vis[None, None]
    elif mask.dim() != 4:
        raise ValueError(f"temporal attention needs a 4D attention mask (eager/sdpa), got {mask.dim()}D")
    elif mask.dtype == torch.bool:
        vis = mask
    else:  # additive: 0 where allowed, a large negative number (or -inf) where masked
        vis = mask > torch.finfo(mask.dtype).min / 2
    return vis[..., -q_len:, -kv_len:].to(torch.float32)


def temporal_queries(
    query: Tensor, time_rows: Tensor, visible: Tensor, scope: Scope = "visible", eps: float = 1e-12,
    residual: bool = False,
) -> Tensor:
    """``q'_i = q_i T_iᵀ T_i / ‖T_i‖_F`` per head, ``T_i`` = the rows ``j`` with ``visible[i, j]``.

    ``query [B, H, q, d]``, ``time_rows [B|1, H, kv, d]``, ``visible [B|1, 1, q, kv]`` (0/1).
    Then ``q'_i · k_j = q_i (T_iᵀ T_i / ‖T_i‖) k_jᵀ``, eq. 2's scores before ``/√d_k``.
    ``residual``: ``q_i + q'_i / √n_i`` (``n_i`` = the visible rows), the scores
    ``Q (I + TᵀT/(‖T‖√n)) Kᵀ``: ordinary attention plus a time term whose size does not grow
    with the position (with one time point ``t`` per sequence ``TᵀT/‖T‖ = √n t tᵀ/‖t‖``); the
    future LM's form, :mod:`pipeline.models.attention_time` says why.
    """
    if scope == "sequence":  # every key some query may see: the sequence's non-masked keys
        visible = visible.amax(dim=-2, keepdim=True)
    dtype = query.dtype
    q, t = query.float(), time_rows.float()
    proj = (q @ t.transpose(-1, -2)) * visible  # q_i · t_m, only for visible m
    sq_norm = visible @ t.pow(2).sum(-1, keepdim=True)  # ‖T_i‖²_F
    timed = (proj @ t) / sq_norm.clamp_min(eps).sqrt()
    if not residual:
        return timed.to(dtype)
    rows = visible.sum(-1, keepdim=True).clamp_min(1.0)   # n_i
    return (q + timed / rows.sqrt()).to(dtype)


class _TemporalMixin(nn.Module):
    """Shared state of the temporal self-attention classes (set by add_temporal_attention)."""

    time_scope: Scope
    time_residual: bool  # scores Q (I + TᵀT/(‖T‖√n)) Kᵀ instead of eq. 2's Q (TᵀT/‖T‖) Kᵀ
    # Lists, so that these modules are not registered here: the time source is shared by all
    # layers, and W_T ([D] -> [H * d_k], no bias: T = Xᵗ W_T) may be owned by another module
    # (add_temporal_attention registers it as ``.time``; attach_temporal_attention does not).
    _time_source: list[TimeEmbedding | PeriodTime]
    _time_proj: list[nn.Linear]

    def _time_rows(self, kv_len: int, n_heads: int, device: torch.device) -> Tensor:
        rows = self._time_source[0].rows(self._time_proj[0], kv_len, device)  # [B|1, kv, H*d]
        return rows.view(*rows.shape[:2], n_heads, -1).transpose(1, 2)

    def _temporal_attend(
        self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, eager: Callable, **kwargs
    ) -> tuple[Tensor, Tensor | None]:
        rows = self._time_rows(key.shape[-2], query.shape[1], query.device)
        vis = _visible(mask, query.shape[-2], key.shape[-2], bool(getattr(self, "is_causal", False)), query.device)
        query = temporal_queries(query, rows, vis, self.time_scope, residual=self.time_residual)
        interface = ALL_ATTENTION_FUNCTIONS.get_interface(self.config._attn_implementation, eager)
        return interface(self, query, key, value, mask, **kwargs)


class TemporalGPT2Attention(GPT2Attention, _TemporalMixin):
    """GPT2Attention (self-attention only) with eq. 2's scores."""

    def forward(  # type: ignore[override]
        self,
        hidden_states: Tensor,
        past_key_values: object | None = None,
        attention_mask: Tensor | None = None,
        encoder_hidden_states: Tensor | None = None,
        encoder_attention_mask: Tensor | None = None,
        output_attentions: bool | None = False,
        **kwargs: object,
    ) -> tuple[Tensor, Tensor | None]:
        if encoder_hidden_states is not None or self.is_cross_attention:
            raise NotImplementedError("temporal attention replaces self-attention only")
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        shape = (*hidden_states.shape[:-1], -1, self.head_dim)
        query, key, value = (x.view(shape).transpose(1, 2) for x in (query, key, value))
        if past_key_values is not None:
            cache = getattr(past_key_values, "self_attention_cache", past_key_values)
            key, value = cache.update(key, value, self.layer_idx)  # type: ignore[attr-defined]
        dropout = self.attn_dropout.p if self.training else 0.0
        out, weights = self._temporal_attend(
            query, key, value, attention_mask, gpt2_eager, dropout=dropout, scaling=self.scaling, **kwargs
        )
        out = self.resid_dropout(self.c_proj(out.reshape(*out.shape[:-2], -1).contiguous()))
        return out, weights


class TemporalBertSelfAttention(BertSelfAttention, _TemporalMixin):
    """BertSelfAttention with eq. 2's scores."""

    def forward(  # type: ignore[override]
        self,
        hidden_states: Tensor,
        attention_mask: Tensor | None = None,
        past_key_values: object | None = None,
        **kwargs: object,
    ) -> tuple[Tensor, Tensor | None]:
        shape = (*hidden_states.shape[:-1], -1, self.attention_head_size)
        query, key, value = (p(hidden_states).view(shape).transpose(1, 2) for p in (self.query, self.key, self.value))
        if past_key_values is not None:
            cache = getattr(past_key_values, "self_attention_cache", past_key_values)
            key, value = cache.update(key, value, self.layer_idx)  # type: ignore[attr-defined]
        dropout = self.dropout.p if self.training else 0.0
        out, weights = self._temporal_attend(
            query, key, value, attention_mask, bert_eager, dropout=dropout, scaling=self.scaling, **kwargs
        )
        return out.reshape(*hidden_states.shape[:-1], -1).contiguous(), weights


_TEMPORAL = {GPT2Attention: TemporalGPT2Attention, BertSelfAttention: TemporalBertSelfAttention}


def add_temporal_attention(
    model: nn.Module, n_periods: int, scope: Scope = "visible", time_dim: int | None = None
) -> TimeEmbedding:
    """Turn every GPT-2 / BERT self-attention of ``model`` into temporal attention, in place.

    Adds ``model.time_embedding`` (a :class:`TimeEmbedding` of ``time_dim``, default the hidden
    size D, shared by all layers) and a bias-free ``W_T`` (``.time``) per layer; existing weights
    and parameter names are kept. Returns the time embedding.
    """
    layers = [m for m in model.modules() if type(m) in _TEMPORAL]
    if not layers:
        raise ValueError("no GPT2Attention / BertSelfAttention module found")
    if any(getattr(m, "is_cross_attention", False) or getattr(m, "reorder_and_upcast_attn", False) for m in layers):
        raise NotImplementedError("temporal attention: self-attention only, no reorder_and_upcast_attn")
    dim = time_dim or model.config.hidden_size
    first = next(model.parameters())
    embedding = TimeEmbedding(n_periods, dim).to(device=first.device, dtype=first.dtype)
    model.add_module("time_embedding", embedding)
    for module in layers:
        hidden = module.config.hidden_size
        module.__class__ = _TEMPORAL[type(module)]
        module.time = nn.Linear(dim, hidden, bias=False).to(device=first.device, dtype=first.dtype)
        module.time_scope = scope
        module.time_residual = False
        module._time_source = [embedding]
        module._time_proj = [module.time]
    return embedding


def attention_layers(model: nn.Module) -> list[nn.Module]:
    """The GPT-2 / BERT self-attention modules of ``model`` (temporal ones included), in order."""
    kinds = (*_TEMPORAL, *_TEMPORAL.values())
    return [m for m in model.modules() if type(m) in kinds]


def attach_temporal_attention(
    model: nn.Module, source: PeriodTime, projections: list[nn.Linear], *, residual: bool,
    scope: Scope = "visible",
) -> None:
    """Turn ``model``'s self-attention layers into temporal attention reading ``source`` through
    ``projections`` (one W_T per layer, owned by the caller: nothing is registered on ``model``,
    so its parameters and state dict are unchanged)."""
    layers = attention_layers(model)
    if not layers:
        raise ValueError(f"temporal attention supports GPT-2 and BERT self-attention; "
                         f"{type(model).__name__} has none")
    if len(layers) != len(projections):
        raise ValueError(f"{len(projections)} W_T for {len(layers)} attention layers")
    if any(getattr(m, "is_cross_attention", False) or getattr(m, "reorder_and_upcast_attn", False) for m in layers):
        raise NotImplementedError("temporal attention: self-attention only, no reorder_and_upcast_attn")
    for module, proj in zip(layers, projections):
        module.__class__ = _TEMPORAL.get(type(module), type(module))
        module.time_scope = scope
        module.time_residual = residual
        module._time_source = [source]
        module._time_proj = [proj]


@contextlib.contextmanager
def temporal_times(model: nn.Module, time_ids: Tensor) -> Iterator[None]:
    """Run ``model`` with these time ids (``[B]`` per sequence or ``[B, n]`` per token)."""
    embedding = model.time_embedding
    if not isinstance(embedding, TimeEmbedding):
        raise TypeError("call add_temporal_attention(model, ...) first")
    previous, embedding.times = embedding.times, time_ids
    try:
        yield
    finally:
        embedding.times = previous
