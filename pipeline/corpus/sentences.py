"""Sentences of a text: the unit paper 003's Algorithm 1 embeds (lines 4-8) and the unit the
semantic-change report quotes.

A sentence ends after ``.``, ``!`` or ``?`` followed by whitespace; nothing else is recognised
(abbreviations such as "e.g. this" split too: a rare short sentence only means one more context
to embed, never a lost occurrence).
"""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences of an abstract, split after ``.``, ``!`` or ``?`` and whitespace (Algorithm 1
    embeds sentences; the reports quote them)."""
    return _SENTENCE_END.split(text)


def sentence_pieces(text: str) -> list[str]:
    """The sentences of :func:`split_sentences`, each with the whitespace before it, so that they
    join back into ``text`` and a byte-level tokenizer gives each word the token it has there."""
    cuts = [0, *(m.start() for m in _SENTENCE_END.finditer(text)), len(text)]
    return [text[a:b] for a, b in zip(cuts, cuts[1:]) if text[a:b].strip()]
