"""Perplexity (PPL, §4.4) and content perplexity (CPL, §4.5) of a future LM on one year.

Every abstract of year ``i`` is scored with the bias computed from year ``i``'s *own* history
(the reference scored the test year with the dev year's history). The LM sees
``eos + abstract + eos`` (:func:`pipeline.tokenizer.encode_abstracts`) and predicts every token
after the first: the abstract's tokens and the closing EOS.

    PPL = exp( sum_{abstracts, t} -log p(w_t | w_<t, B_i) / #tokens )          (§4.4)
    CPL = the same sums restricted to content tokens (pipeline.content)         (§4.5)

Per-abstract sums are returned (not only the corpus value) so that models can be compared
abstract by abstract with the paired sign test (:mod:`pipeline.significance`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from pipeline.future_lm import FutureLM
from pipeline.history import YearHistory

TOKEN_COLUMNS = ("n_tokens", "nll_sum", "n_content", "content_nll_sum")


@dataclass(frozen=True)
class Perplexities:
    ppl: float
    cpl: float
    n_tokens: int
    n_content_tokens: int


def token_nlls(model: FutureLM, input_ids: torch.Tensor, attention_mask: torch.Tensor,
               history: YearHistory | None) -> torch.Tensor:
    """Next-token NLL ``[B, T-1]`` (float64) of each position's successor; 0 where masked."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask, history=history).logits
    logp = F.log_softmax(logits[:, :-1].float(), dim=-1)
    nll = -logp.gather(-1, input_ids[:, 1:, None]).squeeze(-1).double()
    return nll * attention_mask[:, 1:]


@torch.no_grad()
def score_abstracts(model: FutureLM, encoded: Sequence[Sequence[int]], content_mask: np.ndarray,
                    history: YearHistory | None, batch_size: int = 8,
                    pad_id: int = 0, desc: str = "scoring") -> pd.DataFrame:
    """Per-abstract NLL sums over all predicted tokens and over content tokens.

    ``encoded``: token ids per abstract (EOS + abstract + EOS); ``content_mask[id]`` marks CPL
    content tokens. Returns one row per abstract, in input order, with ``TOKEN_COLUMNS``.
    Abstracts are batched by length (less padding); results do not depend on ``batch_size``
    beyond float rounding.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    short = [i for i, ids in enumerate(encoded) if len(ids) < 2]
    if short:
        raise ValueError(f"abstracts at positions {short[:5]} have fewer than 2 tokens: nothing to "
                         "predict (expected EOS + abstract + EOS from encode_abstracts)")
    device = next(model.parameters()).device
    mask_t = torch.as_tensor(np.asarray(content_mask, dtype=bool), device=device)
    out = np.zeros((len(encoded), 4), dtype=np.float64)
    order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i]))
    total = sum(len(ids) - 1 for ids in encoded)
    with tqdm(total=total, desc=desc, unit="tok", leave=False) as bar:
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            width = len(encoded[idx[0]])
            ids = torch.full((len(idx), width), pad_id, dtype=torch.long)
            att = torch.zeros((len(idx), width), dtype=torch.long)
            for row, i in enumerate(idx):
                ids[row, :len(encoded[i])] = torch.as_tensor(encoded[i])
                att[row, :len(encoded[i])] = 1
            ids, att = ids.to(device), att.to(device)
            nll = token_nlls(model, ids, att, history)
            targets = ids[:, 1:]
            is_content = mask_t[targets] & att[:, 1:].bool()
            sums = torch.stack([att[:, 1:].sum(1).double(), nll.sum(1),
                                is_content.sum(1).double(), (nll * is_content).sum(1)], dim=1)
            out[idx] = sums.cpu().numpy()
            bar.update(int(att[:, 1:].sum()))
    frame = pd.DataFrame(out, columns=list(TOKEN_COLUMNS))
    return frame.astype({"n_tokens": "int64", "n_content": "int64"})


def perplexities(tokens: pd.DataFrame) -> Perplexities:
    """Corpus PPL and CPL from per-abstract sums (token-weighted, as the paper's perplexity)."""
    n, n_content = int(tokens["n_tokens"].sum()), int(tokens["n_content"].sum())
    if n == 0:
        raise ValueError("no tokens were scored: the split is empty")
    if n_content == 0:
        raise ValueError("no content tokens in the scored abstracts: CPL is undefined (is the "
                         "stopword list right for this tokenizer?)")
    return Perplexities(ppl=math.exp(tokens["nll_sum"].sum() / n),
                        cpl=math.exp(tokens["content_nll_sum"].sum() / n_content),
                        n_tokens=n, n_content_tokens=n_content)

