"""What counts as *content* for content perplexity (CPL, §4.5) and content METEOR (CM, §4.6).

Both metrics ignore function words so that they measure topical content, with the paper's
curated stopword list (``data/reference/stopwords.txt``, ``rank<TAB>word<TAB>count``):

- CPL works on LM tokens: a token is content when its text, with the leading-space marker removed
  and lowercased, is longer than 4 characters and not a stopword (:func:`is_content_token`).
- CM works on words: nltk ``word_tokenize``, lowercase, drop stopwords and words of at most 4
  characters (:func:`content_words`).

``word_tokenize`` first splits sentences with nltk's English Punkt model (``punkt_tab``), which
nltk can only download and which no package here ships. We split sentences with Punkt's own
algorithm and default (untrained) parameters instead, then apply nltk's word tokenizer per
sentence exactly as ``word_tokenize`` does. The untrained model differs only in abbreviation
handling: it may end a sentence after "e.g." or "approx.", so the period is split off the word.
Most abbreviations are at most 4 characters long and dropped by CM anyway.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import numpy as np
from transformers import PreTrainedTokenizerBase

MIN_CONTENT_CHARS = 5  # "longer than 4 characters"


def load_stopwords(path: str | os.PathLike[str]) -> frozenset[str]:
    """The paper's stopword list: one ``rank<TAB>word<TAB>count`` line per word, lowercased."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"stopword list {path} does not exist (it ships in "
                                f"data/reference/stopwords.txt)")
    words = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 3 or not fields[0].isdigit():
            raise ValueError(f"{path}:{n}: expected 'rank<TAB>word<TAB>count', got {line!r}")
        words.add(fields[1].lower())
    if not words:
        raise ValueError(f"stopword list {path} is empty")
    return frozenset(words)


def is_content_token(text: str, stopwords: frozenset[str]) -> bool:
    """CPL's filter for one LM token's text (e.g. ``" Translation"`` or ``"Ġtransl"``).

    The leading-space marker is either a real space (decoded text) or GPT-2's ``Ġ`` / SentencePiece's
    ``▁``; surrounding whitespace is not part of a word either.
    """
    word = text.lstrip("Ġ▁").strip().lower()
    return len(word) >= MIN_CONTENT_CHARS and word not in stopwords


def content_token_mask(tokenizer: PreTrainedTokenizerBase, stopwords: frozenset[str]) -> np.ndarray:
    """``mask[id]`` is True when LM token ``id`` is a CPL content token (bool, ``len(tokenizer)``).

    Each id is decoded on its own, so byte-level pieces give their real text (e.g. ``" transl"``),
    and special tokens (EOS) are never content.
    """
    special = set(tokenizer.all_special_ids)
    texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
    return np.array([i not in special and is_content_token(t, stopwords)
                     for i, t in enumerate(texts)], dtype=bool)


@lru_cache(maxsize=1)
def _tokenizers():
    from nltk.tokenize.destructive import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer
    return PunktSentenceTokenizer(), NLTKWordTokenizer()


def word_tokenize(text: str) -> list[str]:
    """nltk ``word_tokenize`` (sentences, then the improved Treebank tokenizer), see module doc."""
    sentences, words = _tokenizers()
    return [w for s in sentences.tokenize(text) for w in words.tokenize(s)]


def content_words(text: str, stopwords: frozenset[str]) -> list[str]:
    """CM's content words of a text: tokenized, lowercased, stopwords and words <= 4 chars dropped."""
    out = []
    for word in word_tokenize(text):
        word = word.lower()
        if len(word) >= MIN_CONTENT_CHARS and word not in stopwords:
            out.append(word)
    return out
