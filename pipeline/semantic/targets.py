"""The target words of the semantic-change report, and the LM token each one is.

Targets are words; the feature-based methods score LM tokens (the per-period frequency and
embeddings files are per token), so a target is scored only when ``" word"`` is one
word-starting token (:func:`word_token_ids`, :func:`word_token_ids_from_texts`); the others are
listed with their reason, never dropped silently, so a report can state its coverage. The
targets come from a file (:func:`read_targets`: one word per line, or a ``.csv`` with a graded
``truth``) or are the most frequent such tokens seen often in *both* groups
(:func:`frequent_targets`): a vector pooled from a handful of occurrences measures sampling
noise, not a change of use.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pipeline.features.words import starts_word
from pipeline.infra.errors import UserError


@dataclass(frozen=True)
class WordTokens:
    """Target words mapped to single LM tokens; ``rejected``: word -> why it cannot be scored."""

    ids: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)


def word_token_ids(words: Iterable[str], tokenizer: Any) -> WordTokens:
    """Map each target word to the id of the one token " word" encodes to.

    Only a single word-starting token (:func:`pipeline.features.words.starts_word`) has a V_iw of
    its own: a word split into k tokens would need its pieces' vectors combined, which the
    stored per-token means cannot do per occurrence. Such words are rejected with a reason
    ("splits into k tokens"), never dropped silently, so a report can state its coverage.
    """
    out = WordTokens()
    for word in words:
        ids = tokenizer.encode(" " + word.strip(), add_special_tokens=False)
        if len(ids) != 1:
            out.rejected[word] = f"splits into {len(ids)} tokens"
        elif not starts_word(text := tokenizer.decode(ids)):
            out.rejected[word] = f"token {text!r} does not start a word"
        else:
            out.ids[word] = int(ids[0])
    return out


def word_token_ids_from_texts(words: Iterable[str], texts: Sequence[str]) -> WordTokens:
    """Pure variant of :func:`word_token_ids` over token texts (``texts[i]`` = text of id i, from
    :func:`pipeline.features.words.token_texts`): the id whose text is exactly " word" and starts
    a word. Without the tokenizer the number of pieces is unknown, so the reason is generic."""
    index: dict[str, int] = {}
    for i, text in enumerate(texts):
        if starts_word(text):
            index.setdefault(text, i)   # the lowest id if a text repeats (deterministic)
    out = WordTokens()
    for word in words:
        tid = index.get(" " + word.strip())
        if tid is None:
            out.rejected[word] = "not a single word-starting token"
        else:
            out.ids[word] = tid
    return out


@dataclass(frozen=True)
class Targets:
    """Target words (file order, or most frequent first), their token ids, graded truth where
    given, and the words that cannot be scored with the reason."""

    words: list[str]
    ids: dict[str, int]
    truth: dict[str, float]
    rejected: dict[str, str]
    source: str


def read_targets(path: str | Path) -> tuple[list[str], dict[str, float]]:
    """A targets file: ``.csv`` with a ``word`` column and an optional graded ``truth`` column, or
    any other text file with one word per line (blank lines and ``#`` comments skipped)."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"targets file {path} does not exist", path="semantic_change.targets",
                        fix="give a .csv (word[, truth]) or a text file with one word per line")
    if path.suffix.lower() != ".csv":
        lines = path.read_text(encoding="utf-8").splitlines()
        return [w.strip() for w in lines if w.strip() and not w.lstrip().startswith("#")], {}
    table = pd.read_csv(path, dtype={"word": str})
    if "word" not in table.columns:
        raise UserError(f"{path} has no `word` column (columns: {list(table.columns)})",
                        path=str(path), fix="name the column of target words `word`")
    words = table["word"].astype(str).str.strip().tolist()
    if len(set(words)) != len(words):
        raise UserError(f"{path} lists a word twice", path=str(path), fix="list each word once")
    if "truth" not in table.columns:
        return words, {}
    truth = pd.to_numeric(table["truth"], errors="coerce")
    if truth.isna().any():
        bad = table.loc[truth.isna(), "word"].tolist()[:5]
        raise UserError(f"{path}: `truth` is not a number for {bad}", path=str(path),
                        fix="give every target a numeric graded truth (or drop the column)")
    return words, dict(zip(words, truth.astype(float)))


def frequent_targets(texts: Sequence[str], first: np.ndarray, last: np.ndarray,
                     stopwords: frozenset[str], n: int, min_count: int) -> list[str]:
    """The ``n`` most frequent word tokens seen ≥ ``min_count`` times in both groups (summed
    counts ``first``, ``last`` per token id), alphabetic, ≥ 3 letters, no stopword; ties by id."""
    ok = [i for i, t in enumerate(texts[:first.size])
          if starts_word(t) and t[1:].isalpha() and len(t) > 3 and t[1:].lower() not in stopwords
          and first[i] >= min_count and last[i] >= min_count]
    ok.sort(key=lambda i: (-int(first[i] + last[i]), i))
    return [texts[i][1:] for i in ok[:n]]


def choose_targets(texts: Sequence[str], first: np.ndarray, last: np.ndarray,
                   stopwords: frozenset[str], n: int, min_count: int,
                   path: str | Path | None) -> Targets:
    """The targets of the run: the file's (``path``), else :func:`frequent_targets`."""
    if path is None:
        words, truth = frequent_targets(texts, first, last, stopwords, n, min_count), {}
        source = f"the {n} most frequent words seen ≥ {min_count} times in both groups"
    else:
        words, truth = read_targets(path)
        source = f"`{path}`"
    mapped = word_token_ids_from_texts(words, texts)
    return Targets(words, mapped.ids, truth, mapped.rejected, source)
