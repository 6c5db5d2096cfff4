"""A deterministic sample of a period's sentences that gives every LM token up to ``cap`` usages.

Pooling V_iw (paper eq. 7) over every occurrence makes the encoder run over every abstract, the
largest cost of a full-corpus run on a CPU; a mean of a few dozen contextual vectors is already
close to the mean of thousands (``benchmarks/results/usage_cap.md`` measures how close). So with
``embeddings.usage_cap`` the embeddings stage encodes only the sentences this module picks, as
semantic-change practice samples usages:

1. the period's abstracts are split into sentences (:mod:`pipeline.corpus.sentences`), each
   with the whitespace before it, so the LM tokenizer gives every word the token it has inside
   the abstract;
2. the sentences are ordered by a hash of their text (BLAKE2b), so the order, and the sample,
   depend on neither the corpus's row order nor the machine;
3. walking that order, a sentence is taken while it holds at least one LM token with fewer than
   ``cap`` usages among the sentences taken so far.

Every token then has ``min(cap, its usages in the period)`` usages or more: a rare token keeps all
of its sentences, a frequent one gets those of the sentences taken for rarer tokens (more than
``cap``; they cost nothing extra). The cap bounds the encoder's work, not each token's count; and
a sampled usage is encoded with its sentence as context, not its whole abstract, so even a cap
above every count gives vectors close to, not equal to, the paper's pooling. The unit is the
sentence because whole abstracts save nothing: with a few thousand BPE tokens most abstracts hold
some token still short of any useful cap (measured in the benchmark).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
from transformers import PreTrainedTokenizerBase

from pipeline.corpus.sentences import sentence_pieces
from pipeline.features.tokenizer import tokenize_texts


def hash_order(texts: Sequence[str]) -> np.ndarray:
    """Indices of ``texts`` ordered by the BLAKE2b digest of each text (ties, i.e. duplicate
    texts, by position): a shuffle that is the same for the same texts in any row order."""
    digests = [hashlib.blake2b(t.encode("utf-8"), digest_size=16).digest() for t in texts]
    return np.array(sorted(range(len(texts)), key=lambda i: (digests[i], i)), dtype=np.int64)


def capped_sentences(texts: Sequence[str], lm_tok: PreTrainedTokenizerBase, cap: int) -> list[str]:
    """The sentences of ``texts`` to encode under ``cap`` (rules 1-3), in text order."""
    sentences = [s for t in texts for s in sentence_pieces(t)]
    taken = capped_documents(tokenize_texts(lm_tok, sentences), sentences, cap, len(lm_tok))
    return [sentences[i] for i in taken]


def capped_documents(token_ids: Sequence[Sequence[int]], texts: Sequence[str], cap: int,
                     vocab_size: int) -> np.ndarray:
    """Sorted indices of the texts to encode: rule 3 of the module docstring over the hash
    order of ``texts``, where ``token_ids[i]`` are text ``i``'s LM token ids."""
    if cap < 1:
        raise ValueError(f"usage cap must be >= 1, got {cap}")
    seen = np.zeros(vocab_size, dtype=np.int64)
    taken = []
    for i in hash_order(texts):
        ids = np.asarray(token_ids[i], dtype=np.int64)
        if ids.size and (seen[ids] < cap).any():
            np.add.at(seen, ids, 1)
            taken.append(i)
    return np.sort(np.asarray(taken, dtype=np.int64))
