"""Contextual vectors of whole-word occurrences, straight from an encoder (paper 003, Algorithm 1
lines 4-10), for words that are not one LM token — the pseudo-words of the semantic-change
benchmark (:mod:`pipeline.corpus.pseudowords`).

The per-period embeddings files (:mod:`pipeline.features.embeddings`) pool vectors per *LM token*;
a pseudo-word such as ``psw007`` is several LM tokens, so its vectors are taken here instead:
each text is split into sentences (Algorithm 1 embeds sentences), the sentences holding a target
are encoded, and an occurrence's vector is the mean of the encoder sub-tokens whose characters
overlap the word (line 6; the same rule as the embeddings stage's alignment), at ``layer``, or
the mean of the ``layers`` hidden layers ending there (line 7's AvgHiddenLayers(H_w, h);
:func:`layer_states`; 1, the default, is the one layer the embeddings stage stores). The sums and
counts per word give line 10's mean for any group of texts (:func:`sentence_sums`); the vectors
of the single occurrences (:func:`sentence_usages`) give the distances between usages (average
pairwise distance, :mod:`pipeline.semantic.vectors`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from pipeline.corpus.pseudowords import word_pattern
from pipeline.corpus.sentences import split_sentences
from pipeline.features.alignment import Batch
from pipeline.features.embeddings import check_layer, encoder_states
from pipeline.infra.errors import UserError


def target_sentences(texts: Sequence[str], pattern: re.Pattern[str]) -> list[str]:
    """The sentences of ``texts`` that hold at least one target, in text order."""
    return [s for t in texts for s in split_sentences(t) if pattern.search(s)]


def occurrence_sums(encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                    texts: Sequence[str], words: Sequence[str], layer: int, max_length: int,
                    batch_size: int, device: torch.device, layers: int = 1
                    ) -> tuple[np.ndarray, np.ndarray, int]:
    """``(sums float64 [W, d], counts int64 [W], skipped)`` over every occurrence of ``words[i]``
    in ``texts``: the sum of the occurrences' vectors and their number; ``skipped`` counts
    occurrences beyond ``max_length`` encoder tokens of their sentence (truncated: no vector)."""
    sentences = target_sentences(texts, word_pattern(words))
    return sentence_sums(encoder, tokenizer, sentences, words, layer, max_length, batch_size,
                         device, layers=layers)


def check_layers(encoder: PreTrainedModel, layer: int, layers: int) -> None:
    """A clear error for a layer the encoder does not have, or more layers than lie at or below
    ``layer`` (the embedding output counts as one, hidden state 0)."""
    check_layer(encoder, layer)
    top = layer % (encoder.config.num_hidden_layers + 1)
    if not 1 <= layers <= top + 1:
        raise UserError(f"semantic_benchmark.contextual_layers={layers}: embeddings.layer={layer} "
                        f"has {top + 1} hidden states at or below it",
                        path="params.yaml semantic_benchmark.contextual_layers",
                        fix=f"use 1 .. {top + 1}")


def layer_states(encoder: PreTrainedModel, batch: Batch, layer: int, layers: int,
                 device: torch.device) -> torch.Tensor:
    """Hidden states [B, L, d]: of ``layer`` when ``layers`` is 1 (the embeddings stage's
    :func:`~pipeline.features.embeddings.encoder_states`, the same bytes), else the mean of the
    ``layers`` hidden states ending at ``layer`` (HF ``hidden_states`` indices ``top - layers + 1
    .. top``; with ``layer`` -1, the last ``layers``: Algorithm 1 line 7's h).

    Why a setting: which layers carry lexical meaning differs between encoders, and a word's
    change is found far better in some than in others (Periti & Tahmasebi, NAACL 2024); paper 003
    chose h per language from {1, 2, 4, 12} (all 12 for English)."""
    if layers == 1:
        return encoder_states(encoder, batch, layer, device)
    hidden = encoder(input_ids=batch.input_ids.to(device),
                     attention_mask=batch.attention_mask.to(device),
                     output_hidden_states=True).hidden_states
    top = layer % len(hidden)
    return torch.stack(hidden[top - layers + 1:top + 1]).float().mean(dim=0)


def occurrence_vectors(encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                       sentences: Sequence[str], words: Sequence[str], layer: int,
                       max_length: int, batch_size: int, device: torch.device,
                       counts_for: Sequence[frozenset[str]] | None = None, layers: int = 1
                       ) -> Iterator[tuple[int, np.ndarray | None]]:
    """``(i, vector float64 [d])`` per occurrence of ``words[i]`` in ``sentences``, in sentence
    order: the mean of the encoder sub-tokens overlapping the word (:func:`layer_states`); vector
    None for an occurrence beyond ``max_length`` encoder tokens of its sentence (truncated).
    ``counts_for[i]`` (lower-cased words): the targets whose occurrences in sentence ``i`` count
    (a capped sample, :mod:`pipeline.semantic.usages`); None: all.

    The sentences are encoded in batches of ``batch_size`` sorted by their token length (ties in
    sentence order). Why: a batch is padded to its longest sentence, and abstracts' sentences run
    from a few tokens to over a hundred, so batches in sentence order were about twice as wide
    as their mean sentence (the export's targets' sentences: 34 tokens, batches of 32 padded to
    68); sorted, they pad little and the encoder, most of the cost, does about half the work."""
    check_layers(encoder, layer, layers)
    encoder.eval()
    index = {w.lower(): i for i, w in enumerate(words)}
    pattern = word_pattern(words)
    if not sentences:
        return
    enc = tokenizer(list(sentences), return_offsets_mapping=True, truncation=True,
                    max_length=max_length)
    ids, offsets = enc["input_ids"], enc["offset_mapping"]
    order = sorted(range(len(sentences)), key=lambda i: (len(ids[i]), i))
    found: dict[int, list[tuple[int, np.ndarray | None]]] = {}
    for at in range(0, len(order), batch_size):
        rows = order[at:at + batch_size]
        width = max(len(ids[i]) for i in rows)
        input_ids = torch.full((len(rows), width), tokenizer.pad_token_id, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        for r, i in enumerate(rows):
            input_ids[r, :len(ids[i])] = torch.tensor(ids[i])
            attention[r, :len(ids[i])] = 1
        batch = Batch(input_ids=input_ids, attention_mask=attention,
                      positions=torch.zeros(0, dtype=torch.long),
                      token_ids=torch.zeros(0, dtype=torch.long), weights=torch.zeros(0))
        with torch.inference_mode():
            states = layer_states(encoder, batch, layer, layers, device).double().cpu().numpy()
        for r, i in enumerate(rows):
            spans = np.asarray(offsets[i]).reshape(-1, 2)
            start, end = spans[:, 0], spans[:, 1]
            real = end > start                      # special tokens span nothing
            vectors = []
            for m in pattern.finditer(sentences[i]):
                word = m.group(0).lower()
                if counts_for is not None and word not in counts_for[i]:
                    continue
                inside = real & (start < m.end()) & (end > m.start())
                vectors.append((index[word], states[r, :len(ids[i])][inside].mean(axis=0)
                                if inside.any() else None))
            found[i] = vectors
    for i in range(len(sentences)):
        yield from found.pop(i)


def sentence_sums(encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                  sentences: Sequence[str], words: Sequence[str], layer: int, max_length: int,
                  batch_size: int, device: torch.device,
                  counts_for: Sequence[frozenset[str]] | None = None, layers: int = 1
                  ) -> tuple[np.ndarray, np.ndarray, int]:
    """:func:`occurrence_sums` over ``sentences`` (:func:`occurrence_vectors`, summed per word
    in sentence order)."""
    sums = np.zeros((len(words), encoder.config.hidden_size), dtype=np.float64)
    counts = np.zeros(len(words), dtype=np.int64)
    skipped = 0
    for i, vector in occurrence_vectors(encoder, tokenizer, sentences, words, layer, max_length,
                                        batch_size, device, counts_for, layers):
        if vector is None:
            skipped += 1
            continue
        sums[i] += vector
        counts[i] += 1
    return sums, counts, skipped


def sentence_usages(encoder: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                    sentences: Sequence[str], words: Sequence[str], layer: int, max_length: int,
                    batch_size: int, device: torch.device,
                    counts_for: Sequence[frozenset[str]] | None = None, layers: int = 1
                    ) -> tuple[list[np.ndarray], int]:
    """Each word's occurrence vectors in ``sentences`` (float64 ``[n_i, d]``, sentence order;
    :func:`occurrence_vectors`) and the number skipped past ``max_length``."""
    found: list[list[np.ndarray]] = [[] for _ in words]
    skipped = 0
    for i, vector in occurrence_vectors(encoder, tokenizer, sentences, words, layer, max_length,
                                        batch_size, device, counts_for, layers):
        if vector is None:
            skipped += 1
        else:
            found[i].append(vector)
    dim = encoder.config.hidden_size
    return [np.array(v, dtype=np.float64).reshape(-1, dim) for v in found], skipped
