"""Scoring abstracts with a future LM: per-abstract NLL sums behind PPL (§4.4) and CPL (§4.5).

Every abstract of period ``i`` is scored with the bias computed from period ``i``'s *own* history
(the reference scored the test year with the dev year's history). The LM sees
``eos + abstract + eos`` cut to the model's context length — the length it was trained on
(:func:`pipeline.models.encoding.encode_for_model`) — and predicts every token after the first:
the abstract's tokens and the closing EOS.

    PPL = exp( sum_{abstracts, t} -log p(w_t | w_<t, B_i) / #tokens )          (§4.4)
    CPL = the same sums restricted to content tokens (pipeline.evaluation.content)  (§4.5)

The sums become perplexities in :func:`pipeline.models.perplexity.perplexities`.
:func:`score_abstracts` is both the score stage's computation (:mod:`pipeline.evaluation.evaluate`)
and the dev perplexity of training's early stopping (:func:`pipeline.training.loop.evaluate`), so
it lives below both, with the model: one computation (:mod:`pipeline.models.nll`) on the same
tokens. Per-abstract sums are returned (not only the corpus value) so that models can be compared
abstract by abstract (the verdicts resample abstracts, paired across models), and optionally a
per-position table for metrics by token frequency.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from pipeline.features.history import PeriodHistory
from pipeline.models.encoding import longest_first
from pipeline.models.future_lm import FutureLM
from pipeline.models.nll import IGNORE, collate, in_top_ks, next_token_targets, token_nll

TOKEN_COLUMNS = ("n_tokens", "nll_sum", "n_content", "content_nll_sum")
POSITION_COLUMNS = ("abstract", "position", "target_id", "nll", "top1", "top10")
TOP_K = 10


@dataclass(frozen=True)
class Scores:
    """``tokens``: one row per abstract, input order, ``TOKEN_COLUMNS``. ``positions`` (when
    asked for): one row per predicted token, ``POSITION_COLUMNS`` — ``abstract`` (row of
    ``tokens``), ``position`` (index of the target in ``eos + abstract + eos``, from 1),
    ``target_id``, ``nll``, ``top1`` (target is the most probable token; ties in its favour) and
    ``top10`` (target among the 10 most probable tokens)."""

    tokens: pd.DataFrame
    positions: pd.DataFrame | None = None


@torch.no_grad()
def score_abstracts(model: FutureLM, encoded: Sequence[Sequence[int]],
                    content_mask: np.ndarray | None, history: PeriodHistory | None,
                    batch_size: int = 8, pad_id: int = 0, desc: str = "scoring", *,
                    positions: bool = False) -> Scores:
    """Per-abstract NLL sums over all predicted tokens and over content tokens.

    ``encoded``: token ids per abstract (EOS + abstract + EOS, already cut); ``content_mask[id]``
    marks CPL content tokens (``None``: no content sums). Abstracts are batched longest first
    (:func:`pipeline.models.encoding.longest_first`: less padding); results do not depend on
    ``batch_size`` beyond float rounding.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    short = [i for i, ids in enumerate(encoded) if len(ids) < 2]
    if short:
        raise ValueError(f"abstracts at positions {short[:5]} have fewer than 2 tokens: nothing to "
                         "predict (expected EOS + abstract + EOS from encode_abstracts)")
    was_training = model.training
    model.eval()
    device = model.device
    mask_t = (torch.as_tensor(np.asarray(content_mask, dtype=bool), device=device)
              if content_mask is not None else None)
    sums = np.zeros((len(encoded), 4), dtype=np.float64)
    rows: list[dict[str, np.ndarray]] = []
    order = longest_first(encoded)
    try:
        with tqdm(total=sum(len(ids) - 1 for ids in encoded), desc=desc, unit="tok",
                  leave=False) as bar:
            for start in range(0, len(order), batch_size):
                idx = order[start:start + batch_size]
                batch = {k: v.to(device) for k, v in collate([encoded[i] for i in idx], pad_id).items()}
                logits = model(batch["input_ids"], batch["attention_mask"], history).logits
                targets = next_token_targets(batch["input_ids"], batch["attention_mask"])
                has = targets != IGNORE
                nll = token_nll(logits, targets).double()
                content = (mask_t[targets.clamp_min(0)] & has if mask_t is not None
                           else torch.zeros_like(has))
                sums[idx] = torch.stack([has.sum(1).double(), nll.sum(1), content.sum(1).double(),
                                         (nll * content).sum(1)], dim=1).cpu().numpy()
                if positions:
                    rows.append(_position_rows(idx, logits, targets, nll, has))
                bar.update(int(has.sum()))
    finally:
        model.train(was_training)
    tokens = pd.DataFrame(sums, columns=list(TOKEN_COLUMNS)).astype(
        {"n_tokens": "int64", "n_content": "int64"})
    return Scores(tokens, _position_frame(rows) if positions else None)


def _position_rows(idx: list[int], logits: torch.Tensor, targets: torch.Tensor,
                   nll: torch.Tensor, has: torch.Tensor) -> dict[str, np.ndarray]:
    top1, top = in_top_ks(logits, targets, (1, TOP_K))
    row, col = has.nonzero(as_tuple=True)
    return {"abstract": np.asarray(idx, dtype=np.int32)[row.cpu().numpy()],
            "position": (col + 1).to(torch.int32).cpu().numpy(),
            "target_id": targets[row, col].to(torch.int32).cpu().numpy(),
            "nll": nll[row, col].cpu().numpy(),
            "top1": top1[row, col].cpu().numpy(),
            "top10": top[row, col].cpu().numpy()}


def _position_frame(rows: list[dict[str, np.ndarray]]) -> pd.DataFrame:
    if not rows:
        return pd.DataFrame({c: pd.Series([], dtype=d) for c, d in
                             zip(POSITION_COLUMNS, ("int32", "int32", "int32", "float64", "bool", "bool"))})
    frame = pd.DataFrame({c: np.concatenate([r[c] for r in rows]) for c in POSITION_COLUMNS})
    return frame.sort_values(["abstract", "position"], kind="stable").reset_index(drop=True)
