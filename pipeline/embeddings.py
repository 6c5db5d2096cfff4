"""Per-year pooled contextual embeddings V_iw (paper §3.3, eq. 7), one safetensors file per year.

V_iw is the mean, over every occurrence of LM token w in year i's abstracts, of that occurrence's
contextual vector; an occurrence's vector is the mean of the encoder sub-token vectors that
overlap its characters (:mod:`pipeline.alignment`; the identity when encoder and LM share a BPE).

Storage (compact: only tokens seen that year, fp16; never a dense [years x |V| x d] table)::

    token_ids int64 [n]     sorted ids of the LM tokens seen in the year
    counts    int64 [n]     occurrences that received a vector
    vectors   float16 [n,d] V_iw
    metadata  year, encoder, layer, dim, vocab_size   (strings)

A token absent from a year's file was not seen that year. Consumers (``pipeline.history``) use,
for such a token, its vector from the latest earlier year where it was seen, else zeros with a
``seen=False`` mask — never the encoder's static input embedding, which lives in another space.

Extraction (:func:`extract_year`) runs the encoder over the batches planned by
:func:`pipeline.alignment.plan_year` and pools each batch on the device with one ``index_add``
into a [|V|, d] fp32 sum; :func:`adapt_encoder` optionally MLM-adapts the encoder to the year first.
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

from pipeline.alignment import Batch, YearPlan
from pipeline.io import atomic_path


@dataclass(frozen=True)
class YearEmbeddings:
    """One year's pooled vectors for the LM tokens seen that year."""

    year: int
    token_ids: torch.Tensor   # int64 [n], sorted
    counts: torch.Tensor      # int64 [n]
    vectors: torch.Tensor     # float16 [n, d]
    dim: int
    vocab_size: int
    encoder: str = ""
    layer: int = -1


def write_year(path: str | os.PathLike[str], year: int, token_ids: torch.Tensor | np.ndarray,
               counts: torch.Tensor | np.ndarray, vectors: torch.Tensor | np.ndarray,
               encoder: str, layer: int, vocab_size: int | None = None) -> None:
    """Write one year's embeddings atomically; rows are sorted by token id, vectors stored fp16.

    ``vocab_size`` (|V| of the LM) defaults to ``max(token_ids) + 1``; pass it so that consumers
    can size dense tables without the tokenizer.
    """
    ids = torch.as_tensor(np.asarray(token_ids), dtype=torch.int64).reshape(-1)
    cnt = torch.as_tensor(np.asarray(counts), dtype=torch.int64).reshape(-1)
    vec = torch.as_tensor(vectors).to(torch.float16)
    if vec.ndim != 2 or vec.shape[0] != ids.shape[0] or cnt.shape[0] != ids.shape[0]:
        raise ValueError(f"embeddings for {year}: token_ids {tuple(ids.shape)}, counts "
                         f"{tuple(cnt.shape)} and vectors {tuple(vec.shape)} do not line up")
    if ids.unique().shape[0] != ids.shape[0]:
        raise ValueError(f"embeddings for {year}: token_ids contain duplicates")
    order = torch.argsort(ids)
    if vocab_size is None:
        vocab_size = int(ids.max()) + 1 if ids.numel() else 0
    metadata = {"year": str(int(year)), "encoder": str(encoder), "layer": str(int(layer)),
                "dim": str(int(vec.shape[1])), "vocab_size": str(int(vocab_size))}
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


def read_year(path: str | os.PathLike[str]) -> YearEmbeddings:
    """Read a file written by :func:`write_year` (memory-mapped read; a few MB per year)."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist: run `dvc repro embeddings` for that year")
    with safe_open(os.fspath(path), framework="pt") as f:
        meta = f.metadata() or {}
        tensors = {k: f.get_tensor(k) for k in ("token_ids", "counts", "vectors")}
    return YearEmbeddings(year=int(meta["year"]), token_ids=tensors["token_ids"],
                          counts=tensors["counts"], vectors=tensors["vectors"],
                          dim=int(meta["dim"]), vocab_size=int(meta["vocab_size"]),
                          encoder=meta.get("encoder", ""), layer=int(meta.get("layer", -1)))


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
        raise ValueError(f"unknown dtype {dtype!r}: use auto, fp32, fp16 or bf16 (embeddings.dtype)")
    return named[dtype]


def encoder_states(model: PreTrainedModel, batch: Batch, layer: int, device: torch.device) -> torch.Tensor:
    """Hidden states [B, L, d] of ``layer`` (HF ``hidden_states`` index: 0 = input embeddings
    output, -1 = last layer)."""
    out = model(input_ids=batch.input_ids.to(device), attention_mask=batch.attention_mask.to(device),
                output_hidden_states=layer != -1)
    return out.last_hidden_state if layer == -1 else out.hidden_states[layer]


def pool_batch(sums: torch.Tensor, states: torch.Tensor, batch: Batch) -> None:
    """Add one batch's weighted encoder vectors into ``sums`` [|V|, d] with a single index_add.

    Row p adds ``weights[p] * states[positions[p]]`` to ``sums[token_ids[p]]``: the inner mean of
    eq. 7 (over an occurrence's encoder sub-tokens) folded into the outer sum over occurrences.
    """
    device = sums.device
    flat = states.reshape(-1, states.shape[-1])
    contrib = flat[batch.positions.to(device)].float() * batch.weights.to(device)[:, None]
    sums.index_add_(0, batch.token_ids.to(device), contrib)


def check_layer(model: PreTrainedModel, layer: int) -> None:
    """A clear error for a layer index the encoder does not have."""
    n = model.config.num_hidden_layers
    if not -(n + 1) <= layer <= n:
        raise ValueError(f"embeddings.layer={layer} is out of range for an encoder with {n} "
                         f"layers: use -1 (last), 0 (embedding output) .. {n}")


@torch.inference_mode()
def extract_year(model: PreTrainedModel, plan: YearPlan, layer: int, device: torch.device,
                 progress: bool = True) -> tuple[np.ndarray, np.ndarray, torch.Tensor]:
    """V_iw (eq. 7) for the tokens seen in a year: ``(token_ids, counts, vectors fp16 [n, d])``.

    Sums stay in fp32 on ``device`` ([|V|, d]: ~200 MB for GPT-2 x roberta-large), whatever the
    encoder's compute dtype; only the seen rows come back, as fp16.
    """
    check_layer(model, layer)
    model.eval()
    sums = torch.zeros((plan.counts.shape[0], model.config.hidden_size), dtype=torch.float32,
                       device=device)
    for batch in tqdm(plan.batches, desc="encoder batches", unit="batch", disable=not progress):
        pool_batch(sums, encoder_states(model, batch, layer, device), batch)
    token_ids = np.flatnonzero(plan.counts)
    counts = plan.counts[token_ids]
    index = torch.from_numpy(token_ids).to(device)
    vectors = sums[index] / torch.from_numpy(counts).to(device, torch.float32)[:, None]
    return token_ids, counts, vectors.to(torch.float16).cpu()


def adapt_encoder(mlm_model: PreTrainedModel, enc_tok: PreTrainedTokenizerBase, texts: list[str],
                  epochs: int, max_length: int, stride: int, batch_size: int, device: torch.device,
                  lr: float = 5e-5, seed: int = 0, progress: bool = True) -> PreTrainedModel:
    """Fine-tune an encoder with its MLM head on one year's abstracts (paper §3.3: the encoder
    is adapted to each year before its vectors are pooled). Returns the bare encoder.

    Long abstracts are windowed as for extraction; masking is 15 % (BERT/RoBERTa recipe) and
    seeded, so the same year always yields the same adapted encoder.
    """
    from transformers import DataCollatorForLanguageModeling

    torch.manual_seed(seed)
    windows = enc_tok(texts, truncation=True, max_length=max_length, stride=stride,
                      return_overflowing_tokens=True, padding=False)["input_ids"]
    collate = DataCollatorForLanguageModeling(enc_tok, mlm_probability=0.15, return_tensors="pt")
    model = mlm_model.to(device).train()
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
    return model.base_model.eval()
