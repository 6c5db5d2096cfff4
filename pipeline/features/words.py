"""Which token is a word, and which scored position predicts a *whole word*.

Paper 004 (``../shared/papers/004-continuous-output-long-tail.txt``) predicts whole words from a
word vocabulary. Our LMs predict sub-word tokens (byte-level BPE), so its long-tail metrics
(:mod:`pipeline.evaluation.longtail`) are computed at the positions where one token *is* one whole
word (:func:`whole_word_positions`):

* the target token starts a word: its text is a space, then an alphanumeric character, then only
  alphanumerics, ``-`` or ``'`` (``" model"``, ``" BERT"``); at the first position of an abstract
  the space is not needed (the first word after the opening EOS has none);
* and the word ends there: the next target of the same abstract does not continue it (a token
  whose text starts with an alphanumeric, ``-`` or ``'`` continues a word: ``" transl" + "ation"``).

Numbers-and-letters tokens count as words (``" BERT"``, ``" 2D"``); punctuation and words split
into several tokens do not, so a model is credited for a word only when it proposed that word's
single token, which is what the argmax and the top-10 of a token softmax can do. These token
predicates are the ones the forecast report uses for its terms. The token texts come from the
tokenizer (:func:`token_texts`); everything else is a pure function of arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class WordPieces:
    """Per token id: ``starts`` (a space, then a word: :func:`starts_word`), ``word`` (a word
    without the space: the first word of an abstract) and ``continues`` (:func:`continues_word`)."""

    starts: np.ndarray
    word: np.ndarray
    continues: np.ndarray

    @classmethod
    def from_texts(cls, texts: Sequence[str]) -> WordPieces:
        """From the decoded text of every token id (``texts[i]`` = the text of id ``i``)."""
        return cls(starts=np.array([starts_word(t) for t in texts], dtype=bool),
                   word=np.array([starts_word(" " + t) for t in texts], dtype=bool),
                   continues=np.array([continues_word(t) for t in texts], dtype=bool))

    def __len__(self) -> int:
        return int(self.starts.size)


def starts_word(text: str) -> bool:
    """A token that begins a word: a space, an alphanumeric, then alphanumerics, ``-`` or ``'``."""
    body = text[1:]
    return (text.startswith(" ") and bool(body) and body[0].isalnum()
            and all(ch.isalnum() or ch in "-'" for ch in body))


def continues_word(text: str) -> bool:
    """A token that continues the word before it: it starts with an alphanumeric, ``-`` or ``'``."""
    return bool(text) and (text[0].isalnum() or text[0] in "-'")


def token_texts(tokenizer, size: int) -> list[str]:
    """The decoded text of each of the ``size`` first token ids, one id at a time (byte-level BPE
    decodes its space marker to a real space)."""
    return [tokenizer.decode([i]) for i in range(size)]


def whole_word_positions(abstract, position, target_id, pieces: WordPieces) -> np.ndarray:
    """Boolean per scored position (rows of a ``positions_<label>.parquet``, sorted by abstract and
    position): the target is one whole word (module doc).

    ``position`` counts from 1 (the first target after the opening EOS)."""
    abstract = np.asarray(abstract)
    position = np.asarray(position)
    target = np.asarray(target_id, dtype=np.int64)
    if not abstract.shape == position.shape == target.shape:
        raise ValueError(f"abstract, position and target_id differ in shape: {abstract.shape}, "
                         f"{position.shape}, {target.shape}")
    if target.size and (target.min() < 0 or target.max() >= len(pieces)):
        raise ValueError(f"target ids outside the {len(pieces)} token texts")
    same_next = np.zeros(target.shape, dtype=bool)
    same_next[:-1] = (abstract[1:] == abstract[:-1]) & (position[1:] == position[:-1] + 1)
    if target.size > 1 and ((abstract[1:] < abstract[:-1])
                            | ((abstract[1:] == abstract[:-1]) & (position[1:] <= position[:-1]))).any():
        raise ValueError("positions must be sorted by abstract, then position")
    starts = pieces.starts[target] | (pieces.word[target] & (position == 1))
    continued = np.zeros(target.shape, dtype=bool)
    continued[:-1] = pieces.continues[target[1:]]
    return starts & ~(same_next & continued)
