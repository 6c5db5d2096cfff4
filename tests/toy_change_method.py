"""A toy semantic-change method, registered by tests/test_change_method_seam.py only: the change
of the share of a group's texts that hold the word, ``|share_last - share_first|``.

It shows what a new method is: one module with a ``METHOD``
(:class:`pipeline.semantic.methods.interface.ChangeMethod`) and one registry row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pipeline.corpus.pseudowords import word_pattern
from pipeline.semantic.methods.interface import ChangeInputs, ChangeMethod, MethodResult

NAME = "toy-share"


def share(texts: Sequence[str], word: str) -> float:
    """The share of ``texts`` holding ``word`` as a whole word (any case); 0 without texts."""
    pattern = word_pattern([word])
    return sum(bool(pattern.search(t)) for t in texts) / len(texts) if texts else 0.0


def score(inputs: ChangeInputs, targets: Sequence[str]) -> MethodResult:
    first, last = inputs.group_texts
    scores = np.array([abs(share(last, w) - share(first, w)) for w in targets], dtype=np.float64)
    return MethodResult(scores, details={"texts_first": len(first), "texts_last": len(last)},
                        log=f"{len(first)} + {len(last)} texts")


ORDER = 90   # its place in the table, were it a module of pipeline/semantic/methods/

METHOD = ChangeMethod(
    name=NAME,
    description="|change of the share of texts holding the word| (a toy of the test suite)",
    benchmark_note="|Δ share of texts holding the word| (`tests/toy_change_method.py`)",
    reads=frozenset({"texts"}),
    score=score)
