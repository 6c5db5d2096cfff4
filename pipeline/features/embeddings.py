"""Per-period pooled contextual embeddings V_iw (paper §3.3, eq. 7), one safetensors file per period.

V_iw is the mean, over every occurrence of LM token w in period i's abstracts, of that occurrence's
contextual vector; an occurrence's vector is the mean of the encoder sub-token vectors that
overlap its characters (:mod:`pipeline.features.alignment`; the identity when encoder and LM share a BPE).

Storage (compact: only tokens seen that period, fp16; never a dense [periods x |V| x d] table),
``<label>.safetensors`` (``2020``, ``2020H2``; :mod:`pipeline.corpus.periods`)::

    token_ids int64 [n]     sorted ids of the LM tokens seen in the period
    counts    int64 [n]     occurrences that received a vector
    vectors   float16 [n,d] V_iw
    metadata  period, encoder, layer, dim, vocab_size, (strings; period = the label)
              tokenizer_sha256, corpus_sha256         (pipeline.infra.identity)

A token absent from a period's file was not seen that period. Consumers
(``pipeline.features.history``) use, for such a token, its vector from the latest earlier period
where it was seen, else zeros with a
``seen=False`` mask — never the encoder's static input embedding, which lives in another space.

Extraction (:func:`extract_period`) runs the encoder over the batches planned by
:func:`pipeline.features.alignment.plan_period` and pools each batch on the device with one
``index_add`` into a [|V|, d] sum; :func:`adapt_encoder` optionally MLM-adapts the encoder to the
period first. Files written before periods existed say ``year``: read as its label.
The sum is kept in fixed point (int64, 2^-24 units): integer addition is associative, so the
result does not depend on the order of the additions — the same bytes with any batch order,
CUDA's atomic ``index_add``, or the period's batches sharded over N processes and all-reduced
(:mod:`pipeline.infra.distributed`). fp16 output needs far less than 2^-24 absolute resolution.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save
from tqdm import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from pipeline.infra import distributed
from pipeline.features.alignment import Batch, PeriodPlan
from pipeline.infra.errors import UserError
from pipeline.infra.identity import (CORPUS_KEY, TOKENIZER_KEY, check_tokenizer,
                                     require_feature_file)
from pipeline.infra.io import atomic_path

FIXED_POINT_BITS = 24                   # sums are int64 multiples of 2^-24
_MAX_SUM = 2.0 ** 62                    # headroom below int64's 2^63


@dataclass(frozen=True)
class PeriodEmbeddings:
    """One period's pooled vectors for the LM tokens seen in it."""

    period: str               # the period's label, e.g. "2020" or "2020H2"
    token_ids: torch.Tensor   # int64 [n], sorted
    counts: torch.Tensor      # int64 [n]
    vectors: torch.Tensor     # float16 [n, d]
    dim: int
    vocab_size: int
    encoder: str = ""
    layer: int = -1
    tokenizer_id: str | None = None   # sha256 of the LM tokenizer folder (pipeline.infra.identity)
    corpus_id: str | None = None      # sha256 of the period's abstracts


def write_period(path: str | os.PathLike[str], period: str, token_ids: torch.Tensor | np.ndarray,
               counts: torch.Tensor | np.ndarray, vectors: torch.Tensor | np.ndarray,
               encoder: str, layer: int, vocab_size: int | None = None, *,
               tokenizer_id: str | None = None, corpus_id: str | None = None) -> None:
    """Write one period's embeddings (``period``: its label) atomically; rows are sorted by token id, vectors stored fp16.

    ``vocab_size`` (|V| of the LM) defaults to ``max(token_ids) + 1``; pass it so that consumers
    can size dense tables without the tokenizer. ``tokenizer_id`` / ``corpus_id``
    (:mod:`pipeline.infra.identity`) are recorded; the embeddings stage always passes both.
    """
    ids = torch.as_tensor(np.asarray(token_ids), dtype=torch.int64).reshape(-1)
    cnt = torch.as_tensor(np.asarray(counts), dtype=torch.int64).reshape(-1)
    vec = torch.as_tensor(vectors).to(torch.float16)
    if vec.ndim != 2 or vec.shape[0] != ids.shape[0] or cnt.shape[0] != ids.shape[0]:
        raise ValueError(f"embeddings for {period}: token_ids {tuple(ids.shape)}, counts "
                         f"{tuple(cnt.shape)} and vectors {tuple(vec.shape)} do not line up")
    if ids.unique().shape[0] != ids.shape[0]:
        raise ValueError(f"embeddings for {period}: token_ids contain duplicates")
    order = torch.argsort(ids)
    if vocab_size is None:
        vocab_size = int(ids.max()) + 1 if ids.numel() else 0
    metadata = {"period": str(period), "encoder": str(encoder), "layer": str(int(layer)),
                "dim": str(int(vec.shape[1])), "vocab_size": str(int(vocab_size))}
    if tokenizer_id is not None:
        metadata[TOKENIZER_KEY] = tokenizer_id
    if corpus_id is not None:
        metadata[CORPUS_KEY] = corpus_id
    tensors = {"token_ids": ids[order].contiguous(), "counts": cnt[order].contiguous(),
               "vectors": vec[order].contiguous()}
    with atomic_path(path) as tmp:
        tmp.write_bytes(_canonical(save(tensors, metadata=metadata)))


def _canonical(blob: bytes) -> bytes:
    """Same tensors and metadata -> same bytes: safetensors writes its JSON header from a hash
    map (random key order), so re-serialise the header with sorted keys, at the same length."""
    n = int.from_bytes(blob[:8], "little")
    header = json.dumps(json.loads(blob[8:8 + n]), sort_keys=True, separators=(",", ":")).encode()
    if len(header) > n:
        raise AssertionError("re-serialised safetensors header grew; cannot canonicalise")
    return blob[:8] + header.ljust(n, b" ") + blob[8 + n:]


def read_period(path: str | os.PathLike[str], tokenizer_id: str | None = None) -> PeriodEmbeddings:
    """Read a file written by :func:`write_period` (memory-mapped read; a few MB per period).

    With ``tokenizer_id`` (the identity of the tokenizer in use), a file computed with another
    tokenizer, or recording none, is refused with the stage that recomputes it.
    """
    stage = require_feature_file("embeddings", path, "embeddings")
    try:
        with safe_open(os.fspath(path), framework="pt") as f:
            meta = f.metadata() or {}
            tensors = {k: f.get_tensor(k) for k in ("token_ids", "counts", "vectors")}
        period = meta["period"] if "period" in meta else str(int(meta["year"]))
        dim, vocab_size = int(meta["dim"]), int(meta["vocab_size"])
    except Exception as err:  # noqa: BLE001 - safetensors raises its own, untyped errors
        raise UserError(f"the embeddings file is damaged or not an embeddings file "
                        f"({type(err).__name__}: {err})", path=path,
                        fix=f"recompute it: `dvc repro {stage}`") from err
    if tokenizer_id is not None:
        check_tokenizer(path, meta.get(TOKENIZER_KEY), tokenizer_id, stage)
    return PeriodEmbeddings(period=period, token_ids=tensors["token_ids"],
                            counts=tensors["counts"], vectors=tensors["vectors"], dim=dim,
                            vocab_size=vocab_size, encoder=meta.get("encoder", ""),
                            layer=int(meta.get("layer", -1)),
                            tokenizer_id=meta.get(TOKENIZER_KEY), corpus_id=meta.get(CORPUS_KEY))


# --- extraction ---------------------------------------------------------------------------------

def pick_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """``auto`` = fp32 on CPU; bf16 on CUDA when supported, else fp16. Or fp32/fp16/bf16."""
    named = {"fp32": torch.float32, "float32": torch.float32, "fp16": torch.float16,
             "float16": torch.float16, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16}
    if dtype == "auto":
        if device.type != "cuda":
            return torch.float32
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if dtype not in named:
        raise UserError(f"unknown encoder dtype {dtype!r}", path="params.yaml embeddings.dtype",
                        fix="use auto, fp32, fp16 or bf16")
    return named[dtype]


def encoder_states(model: PreTrainedModel, batch: Batch, layer: int, device: torch.device) -> torch.Tensor:
    """Hidden states [B, L, d] of ``layer`` (HF ``hidden_states`` index: 0 = input embeddings
    output, -1 = last layer)."""
    out = model(input_ids=batch.input_ids.to(device), attention_mask=batch.attention_mask.to(device),
                output_hidden_states=layer != -1)
    return out.last_hidden_state if layer == -1 else out.hidden_states[layer]


def pool_batch(sums: torch.Tensor, states: torch.Tensor, batch: Batch) -> torch.Tensor:
    """Add one batch's weighted encoder vectors into ``sums`` [|V|, d] with a single index_add.

    Row p adds ``weights[p] * states[positions[p]]`` to ``sums[token_ids[p]]``: the inner mean of
    eq. 7 (over an occurrence's encoder sub-tokens) folded into the outer sum over occurrences.
    ``sums`` is int64 fixed point (:data:`FIXED_POINT_BITS`); returns the batch's largest
    ``|contribution|`` (a 0-d tensor, no device sync) for the overflow check.
    """
    device = sums.device
    flat = states.reshape(-1, states.shape[-1])
    contrib = flat[batch.positions.to(device)].float() * batch.weights.to(device)[:, None]
    # x * 2^24 is exact in fp32 and round() of it is an integer-valued float: exact in int64.
    sums.index_add_(0, batch.token_ids.to(device),
                    torch.round(contrib * 2.0 ** FIXED_POINT_BITS).to(torch.int64))
    return contrib.abs().amax() if contrib.numel() else contrib.new_zeros(())


def check_layer(model: PreTrainedModel, layer: int) -> None:
    """A clear error for a layer index the encoder does not have."""
    n = model.config.num_hidden_layers
    if not -(n + 1) <= layer <= n:
        raise UserError(f"embeddings.layer={layer} is out of range for an encoder with {n} layers",
                        path="params.yaml embeddings.layer",
                        fix=f"use -1 (last), 0 (embedding output) .. {n}")


@torch.inference_mode()
def pool_sums(model: PreTrainedModel, batches: list[Batch], vocab_size: int, layer: int,
              device: torch.device, progress: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Fixed-point sums [|V|, d] int64 of eq. 7's numerators over ``batches`` (all of a period's,
    or one rank's share of them), and the largest ``|contribution|`` seen (0-d fp32 tensor)."""
    check_layer(model, layer)
    model.eval()
    sums = torch.zeros((vocab_size, model.config.hidden_size), dtype=torch.int64, device=device)
    peak = torch.zeros((), dtype=torch.float32, device=device)
    for batch in tqdm(batches, desc="encoder batches", unit="batch", disable=not progress):
        peak = torch.maximum(peak, pool_batch(sums, encoder_states(model, batch, layer, device), batch))
    return sums, peak


def check_fixed_point(peak: float, max_count: int) -> None:
    """Refuse sums that may have left int64's range: ``|sum_w| <= peak * count_w`` because the
    weights of one occurrence add up to 1. Also catches non-finite encoder output."""
    if not peak * 2.0 ** FIXED_POINT_BITS * max(1, max_count) < _MAX_SUM:
        raise ValueError(f"encoder vectors up to {peak:g} (x {max_count} occurrences) cannot be "
                         "pooled exactly in int64 fixed point: the encoder output is not finite or "
                         "far too large; check the encoder and embeddings.dtype")


def mean_vectors(sums: torch.Tensor, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, torch.Tensor]:
    """V_iw = sum / count for the tokens with ``counts > 0``: ``(token_ids, counts, fp16 [n, d])``."""
    token_ids = np.flatnonzero(counts)
    index = torch.from_numpy(token_ids).to(sums.device)
    divisor = torch.from_numpy(counts[token_ids]).to(sums.device, torch.float64)[:, None]
    vectors = sums[index].to(torch.float64) / 2.0 ** FIXED_POINT_BITS / divisor
    return token_ids, counts[token_ids], vectors.to(torch.float16).cpu()


@torch.inference_mode()
def extract_period(model: PreTrainedModel, plan: PeriodPlan, layer: int, device: torch.device,
                   progress: bool = True,
                   dist: distributed.Dist = distributed.SINGLE
                   ) -> tuple[np.ndarray, np.ndarray, torch.Tensor]:
    """V_iw (eq. 7) for the tokens seen in a period: ``(token_ids, counts, vectors fp16 [n, d])``.

    With ``dist`` of N processes, each pools every N-th batch of the plan (the same plan on every
    rank) and the fixed-point sums are all-reduced: the result is bit-identical to one process.
    The occurrence counts come from the plan, so they need no reduction. Sums stay on ``device``
    ([|V|, d] int64: ~400 MB for GPT-2 x roberta-large); only the seen rows come back, as fp16.
    """
    sums, peak = pool_sums(model, distributed.shard(plan.batches, dist), plan.counts.shape[0],
                           layer, device, progress)
    check_fixed_point(float(distributed.all_reduce_max(peak, dist)), int(plan.counts.max(initial=0)))
    return mean_vectors(distributed.all_reduce_sum(sums, dist), plan.counts)


def adapt_encoder(mlm_model: PreTrainedModel, enc_tok: PreTrainedTokenizerBase, texts: list[str],
                  epochs: int, max_length: int, stride: int, batch_size: int, device: torch.device,
                  lr: float = 5e-5, seed: int = 0, progress: bool = True,
                  dist: distributed.Dist = distributed.SINGLE) -> PreTrainedModel:
    """Fine-tune an encoder with its MLM head on one period's abstracts (paper §3.3: the encoder
    is adapted to each period before its vectors are pooled). Returns the bare encoder.

    Long abstracts are windowed as for extraction; masking is 15 % (BERT/RoBERTa recipe) and
    seeded, so the same period always yields the same adapted encoder. With several processes,
    rank 0 adapts and the others receive its weights (one encoder for all the period's shards).
    """
    from transformers import DataCollatorForLanguageModeling

    torch.manual_seed(seed)
    windows = enc_tok(texts, truncation=True, max_length=max_length, stride=stride,
                      return_overflowing_tokens=True, padding=False)["input_ids"]
    collate = DataCollatorForLanguageModeling(enc_tok, mlm_probability=0.15, return_tensors="pt")
    model = mlm_model.to(device).train()
    if not dist.is_main:
        return distributed.broadcast_module(model.base_model.eval(), dist)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    order_rng = torch.Generator().manual_seed(seed)
    for epoch in range(epochs):
        order = torch.randperm(len(windows), generator=order_rng).tolist()
        starts = range(0, len(order), batch_size)
        for i in tqdm(starts, desc=f"MLM adaptation epoch {epoch + 1}/{epochs}", disable=not progress):
            batch = collate([{"input_ids": windows[j]} for j in order[i:i + batch_size]])
            loss = model(**{k: v.to(device) for k, v in batch.items()}).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    return distributed.broadcast_module(model.base_model.eval(), dist)
