"""Generating future abstracts (§4.6): N abstracts per model, one random seed each.

Each abstract starts from the LM's end-of-text token alone (GPT-2 convention: EOS precedes every
training abstract) and is decoded with beam search with sampling (beam 5, top-k 50, top-p 0.92,
no repeated bigram), the paper's settings. The target period's temporal bias is on during the whole
``generate`` call (:meth:`pipeline.models.future_lm.FutureLM.generate`), i.e. at every decoding step.

Abstracts are decoded :data:`CHUNK` at a time, as one batch of ``CHUNK x num_beams`` beams: a tiny
LM's decoding step is dominated by ``generate``'s per-step Python work, so one call for ten
abstracts took ~1/3 of the time of ten calls (benchmarks/results/scoring.md). A chunk's random
generator is seeded with the index of its first abstract (column ``seed``; one chunk, seed 0, for
n <= CHUNK). Sampling draws the same count of random numbers for every row, so row ``i`` of two
models reads the same random numbers: abstract ``i`` of two models is still a paired sample (the
report's paired CM test). Abstract ``i`` depends on ``n`` (the draws per step do).
"""

from __future__ import annotations

import pandas as pd
import torch
from tqdm.auto import tqdm
from transformers import PreTrainedTokenizerBase

from pipeline.infra.schema.config import GenerationSettings
from pipeline.models.future_lm import FutureLM
from pipeline.features.history import PeriodHistory

CHUNK = 16   # abstracts per generate() call: the default n (10) in one call, memory bounded for n=100


class EmptyGenerationError(ValueError):
    """The model produced no text for a generated abstract."""


@torch.no_grad()
def generate_abstracts(model: FutureLM, tokenizer: PreTrainedTokenizerBase,
                       history: PeriodHistory | None, settings: GenerationSettings,
                       desc: str = "generating") -> pd.DataFrame:
    """``settings.n`` abstracts for ``history``'s period: columns ``index``, ``seed`` (of its chunk),
    ``text``, ``n_new_tokens``. Raises :class:`EmptyGenerationError` naming the abstract if a text
    is empty."""
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ValueError("the tokenizer has no EOS token to start generation from")
    rows = []
    with tqdm(total=settings.n, desc=desc, unit="abstract", leave=False) as bar:
        for first in range(0, settings.n, CHUNK):
            count = min(CHUNK, settings.n - first)
            start = torch.full((count, 1), eos, dtype=torch.long, device=model.device)
            torch.manual_seed(first)
            out = model.generate(start, history=history, do_sample=True,
                                 num_beams=settings.num_beams, top_k=settings.top_k,
                                 top_p=settings.top_p,
                                 no_repeat_ngram_size=settings.no_repeat_ngram_size,
                                 max_new_tokens=settings.max_new_tokens,
                                 min_new_tokens=settings.min_new_tokens,
                                 attention_mask=torch.ones_like(start),
                                 eos_token_id=eos, pad_token_id=eos)
            for row, ids in enumerate(out[:, 1:].tolist()):
                rows.append(_abstract(model, tokenizer, ids, first + row, first, eos))
            bar.update(count)
    return pd.DataFrame(rows).astype({"index": "int64", "seed": "int64", "n_new_tokens": "int64"})


def _abstract(model: FutureLM, tokenizer: PreTrainedTokenizerBase, new: list[int], index: int,
              seed: int, eos: int) -> dict:
    """One generated row: the tokens up to the first EOS (finished rows are padded with EOS)."""
    if eos in new:
        new = new[:new.index(eos)]
    text = tokenizer.decode(new, skip_special_tokens=True).strip()
    if not text:
        raise EmptyGenerationError(
            f"generated abstract {index} (seed {seed}) of the {model.variant} model is empty: the "
            "model ended it at once. The model is likely under-trained; raise score.min_new_tokens")
    return {"index": index, "seed": seed, "text": text, "n_new_tokens": len(new)}
