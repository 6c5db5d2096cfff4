"""Generating future abstracts (§4.6): N abstracts per model, one random seed each.

Each abstract starts from the LM's end-of-text token alone (GPT-2 convention: EOS precedes every
training abstract) and is decoded with beam search with sampling (beam 5, top-k 50, top-p 0.92,
no repeated bigram), the paper's settings. The target period's temporal bias is on during the whole
``generate`` call (:meth:`pipeline.models.future_lm.FutureLM.generate`), i.e. at every decoding step.
Abstract ``i`` uses seed ``i``, so abstract ``i`` of two models is a paired sample.
"""

from __future__ import annotations

import pandas as pd
import torch
from tqdm.auto import tqdm
from transformers import PreTrainedTokenizerBase

from pipeline.infra.config import GenerationSettings
from pipeline.models.future_lm import FutureLM
from pipeline.features.history import PeriodHistory


class EmptyGenerationError(ValueError):
    """The model produced no text for a generated abstract."""


@torch.no_grad()
def generate_abstracts(model: FutureLM, tokenizer: PreTrainedTokenizerBase,
                       history: PeriodHistory | None, settings: GenerationSettings,
                       desc: str = "generating") -> pd.DataFrame:
    """``settings.n`` abstracts for ``history``'s period: columns ``index``, ``seed``, ``text``,
    ``n_new_tokens``. Raises :class:`EmptyGenerationError` naming the seed if a text is empty."""
    eos = tokenizer.eos_token_id
    if eos is None:
        raise ValueError("the tokenizer has no EOS token to start generation from")
    start = torch.tensor([[eos]], dtype=torch.long, device=model.device)
    rows = []
    for i in tqdm(range(settings.n), desc=desc, unit="abstract", leave=False):
        torch.manual_seed(i)
        out = model.generate(start, history=history, do_sample=True,
                             num_beams=settings.num_beams, top_k=settings.top_k,
                             top_p=settings.top_p,
                             no_repeat_ngram_size=settings.no_repeat_ngram_size,
                             max_new_tokens=settings.max_new_tokens,
                             min_new_tokens=settings.min_new_tokens,
                             attention_mask=torch.ones_like(start),
                             eos_token_id=eos, pad_token_id=eos)
        new = out[0, start.shape[1]:].tolist()
        if eos in new:
            new = new[:new.index(eos)]
        text = tokenizer.decode(new, skip_special_tokens=True).strip()
        if not text:
            raise EmptyGenerationError(
                f"generated abstract {i} (seed {i}) of the {model.variant} model is empty: the model "
                "ended it at once. The model is likely under-trained; raise score.min_new_tokens")
        rows.append({"index": i, "seed": i, "text": text, "n_new_tokens": len(new)})
    return pd.DataFrame(rows).astype({"index": "int64", "seed": "int64", "n_new_tokens": "int64"})
