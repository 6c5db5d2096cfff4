"""Next-token negative log-likelihood: the one implementation behind the training loss, the dev
perplexity of early stopping and the reported perplexities (§4.4-4.5).

A causal LM reads ``x_0 .. x_{T-1}`` and at position ``t`` predicts ``x_{t+1}``. The NLL of that
prediction is ``-log softmax(z_t)[x_{t+1}]``, computed here in fp32 whatever the logits' dtype
(bf16 logits would lose ~3 digits in the log-sum-exp). Perplexity, ``exp(Σ NLL / #tokens)``, is
the torch-free arithmetic of :mod:`pipeline.models.perplexity`.

Memory cap. The log-softmax of every position is ``[N, |V|]`` fp32 (``N = B·T``): 1.6 GB for
8 x 1,024 positions of GPT-2's 50,257 tokens, and autograd would keep as much again.
:func:`token_nll` works through the positions in chunks of at most ``max_elements`` fp32 values
and its backward recomputes each chunk's softmax from the logits, so no ``[N, |V|]`` fp32 tensor
exists at any time; the only full-size tensors are the logits (in the model's dtype) and their
gradient. The temporal bias is already in the logits (a hook on ``lm_head``,
:mod:`pipeline.models.future_lm`), so chunking here needs nothing from the bias modules.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

IGNORE = -100               # HF's label for "no target here" (padding, the last position)
MAX_ELEMENTS = 1 << 24      # fp32 values per chunk: 64 MiB


def collate(seqs: Sequence[Sequence[int]], pad_id: int) -> dict[str, Tensor]:
    """Right-padded ``input_ids`` and ``attention_mask`` (1 on real tokens), ``[B, max len]``."""
    if not seqs:
        raise ValueError("collate needs at least one sequence")
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for row, seq in enumerate(seqs):
        ids[row, :len(seq)] = torch.as_tensor(seq, dtype=torch.long)
        mask[row, :len(seq)] = 1
    return {"input_ids": ids, "attention_mask": mask}


def next_token_targets(labels: Tensor, attention_mask: Tensor | None = None) -> Tensor:
    """``targets[b, t] = labels[b, t+1]``, :data:`IGNORE` at the last position and on padding.

    Same shape as ``labels`` (``[B, T]``), so the logits ``[B, T, |V|]`` need no slicing (a
    slice of the logits would be a full copy).
    """
    if attention_mask is not None:
        labels = labels.masked_fill(attention_mask == 0, IGNORE)
    return torch.nn.functional.pad(labels[:, 1:], (0, 1), value=IGNORE)


def token_nll(logits: Tensor, targets: Tensor, max_elements: int = MAX_ELEMENTS) -> Tensor:
    """Per-token NLL ``-log softmax(logits)[target]`` in fp32, shaped like ``targets``; 0 where
    the target is :data:`IGNORE`. Differentiable w.r.t. ``logits``; memory-capped (module doc)."""
    vocab = logits.shape[-1]
    if logits.shape[:-1] != targets.shape:
        raise ValueError(f"logits {tuple(logits.shape)} do not match targets {tuple(targets.shape)}")
    rows = max(1, max_elements // vocab)
    return _ChunkedNLL.apply(logits.reshape(-1, vocab), targets.reshape(-1), rows).view(targets.shape)


def mean_nll(logits: Tensor, targets: Tensor) -> Tensor:
    """The training loss: mean NLL over the positions that have a target."""
    n = (targets != IGNORE).sum().clamp_min(1)
    return token_nll(logits, targets).sum() / n


@torch.no_grad()
def in_top_k(logits: Tensor, targets: Tensor, k: int, max_elements: int = MAX_ELEMENTS) -> Tensor:
    """bool, shaped like ``targets``: fewer than ``k`` tokens have a higher logit than the target
    (ties count in the target's favour); False where the target is :data:`IGNORE`."""
    return in_top_ks(logits, targets, (k,), max_elements)[0]


@torch.no_grad()
def in_top_ks(logits: Tensor, targets: Tensor, ks: tuple[int, ...],
              max_elements: int = MAX_ELEMENTS) -> tuple[Tensor, ...]:
    """:func:`in_top_k` for each of ``ks`` from one partial sort per row chunk: fewer than k
    tokens are above the target exactly when the target's logit reaches the k-th largest (a
    ``topk`` selection is ~6x cheaper on CPU than comparing every logit with the target's)."""
    vocab = logits.shape[-1]
    flat, tgt = logits.reshape(-1, vocab), targets.reshape(-1)
    outs = [torch.zeros(tgt.shape, dtype=torch.bool, device=logits.device) for _ in ks]
    rows, depth = max(1, max_elements // vocab), min(max(ks), vocab)
    safe = tgt.clamp_min(0)
    for start in range(0, flat.shape[0], rows):
        x = flat[start:start + rows]
        target_logit = x.gather(1, safe[start:start + rows, None]).squeeze(1)
        largest = x.topk(depth, dim=-1).values
        for out, k in zip(outs, ks):
            out[start:start + rows] = target_logit >= largest[:, min(k, vocab) - 1]
    valid = tgt != IGNORE
    return tuple((out & valid).view(targets.shape) for out in outs)


class _ChunkedNLL(torch.autograd.Function):
    """``nll[n] = logsumexp(z_n) - z_n[t_n]`` over row chunks; backward ``(softmax(z_n) - 1_{t_n})
    · ∂nll[n]``, recomputing each chunk's softmax from the saved log-sum-exp."""

    @staticmethod
    def forward(ctx, logits: Tensor, targets: Tensor, rows: int) -> Tensor:  # type: ignore[override]
        valid = targets != IGNORE
        safe = targets.clamp_min(0)
        lse = torch.empty(targets.shape, dtype=torch.float32, device=logits.device)
        picked = torch.empty_like(lse)
        for start in range(0, logits.shape[0], rows):
            x = logits[start:start + rows].float()
            lse[start:start + rows] = torch.logsumexp(x, dim=-1)
            picked[start:start + rows] = x.gather(1, safe[start:start + rows, None]).squeeze(1)
        ctx.save_for_backward(logits, safe, valid, lse)
        ctx.rows = rows
        return (lse - picked).masked_fill_(~valid, 0.0)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None, None]:  # type: ignore[override]
        logits, safe, valid, lse = ctx.saved_tensors
        scale = grad.float().masked_fill(~valid, 0.0)
        out = torch.empty_like(logits)
        for start in range(0, logits.shape[0], ctx.rows):
            stop = start + ctx.rows
            p = torch.exp(logits[start:stop].float() - lse[start:stop, None])
            p.scatter_add_(1, safe[start:stop, None], -torch.ones_like(p[:, :1]))
            out[start:stop] = (p * scale[start:stop, None]).to(logits.dtype)
        return out, None, None
