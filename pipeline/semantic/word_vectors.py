"""Contextual vectors of whole-word occurrences, straight from an encoder (paper 003, Algorithm 1
lines 4-10), for words that are not one LM token — the pseudo-words of the semantic-change
benchmark (:mod:`pipeline.corpus.pseudowords`).

The per-period embeddings files (:mod:`pipeline.features.embeddings`) pool vectors per *LM token*;
a pseudo-word such as ``psw007`` is several LM tokens, so its vectors are taken here instead:
each text is split into sentences (Algorithm 1 embeds sentences), the sentences holding a target
are encoded, and an occurrence's vector is the mean of the encoder sub-tokens whose characters
overlap the word (line 6; the same rule as the embeddings stage's alignment), at ``layer``
(line 7 uses the mean of the last h layers; we use one layer, as the embeddings stage does). The
sums and counts per word give line 10's mean for any group of texts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from pipeline.corpus.pseudowords import word_pattern
from pipeline.corpus.sentences import split_sentences
from pipeline.features.alignment import Batch
from pipeline.features.embeddings import check_layer, encoder_states


def target_sentences(texts: Sequence[str], pattern: re.Pattern[str]) -> list[str]:
    """The sentences of ``texts`` that hold at least one target, in text order."""
    return [s for t in texts for s in split_sentences(t) if pattern.search(s)]


def occurrence_sums(encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                    texts: Sequence[str], words: Sequence[str], layer: int, max_length: int,
                    batch_size: int, device: torch.device) -> tuple[np.ndarray, np.ndarray, int]:
    """``(sums float64 [W, d], counts int64 [W], skipped)`` over every occurrence of ``words[i]``
    in ``texts``: the sum of the occurrences' vectors and their number; ``skipped`` counts
    occurrences beyond ``max_length`` encoder tokens of their sentence (truncated: no vector)."""
    sentences = target_sentences(texts, word_pattern(words))
    return sentence_sums(encoder, tokenizer, sentences, words, layer, max_length, batch_size,
                         device)


@torch.inference_mode()
def sentence_sums(encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                  sentences: Sequence[str], words: Sequence[str], layer: int, max_length: int,
                  batch_size: int, device: torch.device,
                  counts_for: Sequence[frozenset[str]] | None = None
                  ) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`occurrence_sums` over ``sentences`` encoded as given, in batches of ``batch_size``
    in their order; ``counts_for[i]`` (lower-cased words): the targets whose occurrences in
    sentence ``i`` count (a capped sample, :mod:`pipeline.semantic.usages`); None: all."""
    check_layer(encoder, layer)
    encoder.eval()
    index = {w.lower(): i for i, w in enumerate(words)}
    pattern = word_pattern(words)
    sums = np.zeros((len(words), encoder.config.hidden_size), dtype=np.float64)
    counts = np.zeros(len(words), dtype=np.int64)
    skipped = 0
    for at in range(0, len(sentences), batch_size):
        chunk = sentences[at:at + batch_size]
        enc = tokenizer(list(chunk), return_offsets_mapping=True, truncation=True,
                        max_length=max_length, padding=True, return_tensors="pt")
        batch = Batch(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                      positions=torch.zeros(0, dtype=torch.long),
                      token_ids=torch.zeros(0, dtype=torch.long), weights=torch.zeros(0))
        states = encoder_states(encoder, batch, layer, device).double().cpu().numpy()
        offsets = enc["offset_mapping"].numpy()
        for row, sentence in enumerate(chunk):
            start, end = offsets[row, :, 0], offsets[row, :, 1]
            real = end > start                      # special and padding tokens span nothing
            for m in pattern.finditer(sentence):
                word = m.group(0).lower()
                if counts_for is not None and word not in counts_for[at + row]:
                    continue
                inside = real & (start < m.end()) & (end > m.start())
                if not inside.any():
                    skipped += 1
                    continue
                sums[index[word]] += states[row, inside].mean(axis=0)
                counts[index[word]] += 1
    return sums, counts, skipped
