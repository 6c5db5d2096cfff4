"""What a future LM reads of an abstract, and in which order abstracts are batched.

* **The truncation rule** (:func:`encode_for_model`): the LM sees ``eos + abstract + eos``
  (:func:`pipeline.features.tokenizer.encode_abstracts`) cut to the model's context length — the
  ``train.max_length`` it was trained on — keeping the start. Training, scoring (PPL/CPL, §4.4-4.5)
  and the vocabulary forecast all encode with it, so each measures the positions the model was
  trained on.
* **Length-sorted batches** (:func:`longest_first`): abstracts are batched longest first, so a
  batch holds abstracts of similar length (little padding). Scoring, training's dev perplexity
  (which shards exactly the batches scoring forms) and the forecast's predicted distribution use
  this one order; a different order would change the batches and so the float rounding of results.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from transformers import PreTrainedTokenizerBase

from pipeline.features.tokenizer import encode_abstracts


def encode_for_model(tok: PreTrainedTokenizerBase, texts: Sequence[str],
                     context_length: int) -> tuple[list[list[int]], int]:
    """``eos + abstract + eos`` cut to ``context_length`` tokens (the start is kept, as in
    training), and the number of abstracts that were longer."""
    full = encode_abstracts(tok, texts, max_length=sys.maxsize)
    return [ids[:context_length] for ids in full], sum(len(ids) > context_length for ids in full)


def longest_first(seqs: Sequence[Sequence[int]]) -> list[int]:
    """Indices of ``seqs`` from the longest to the shortest; equal lengths keep input order
    (a stable sort), so the batches are the same on every run."""
    return sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))
