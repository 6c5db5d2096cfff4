"""The interface of a semantic-change method: what it may read, what it returns, what it declares.

A method is fit on the periods of two groups (``first`` and ``last``, each in time order) and
scores target words: ``score(inputs, targets) -> MethodResult``, one score per target (higher =
more change, NaN = not scored, e.g. a word too rare in one group). Both stages serve it:

* the ``semantic_change`` stage reads the corpus's abstracts per period *and* the stage features:
  per-period LM-token counts (``counts``), per-period embeddings files (``embeddings``) and the
  targets' LM token ids (``token_ids``), so methods that work per LM token read those;
* the ``semantic_benchmark`` stage has only texts (pseudo-words are made by rewriting texts, and
  SemEval's corpora are texts): ``counts``, ``embeddings`` and ``token_ids`` are None and
  ``encoding`` says how to embed the texts with the encoder instead.

A method declares (:class:`ChangeMethod`) its ``name`` (a registry row:
:mod:`pipeline.semantic.methods.registry`), its one-line ``description`` (the
semantic-change report's section title), its sentence in the benchmark's report
(``benchmark_note``) and which :class:`ChangeInputs` fields it ``reads``.

:class:`ChangeScores` (one score per LM token id) is what the per-token methods compute and the
statistics (:mod:`pipeline.semantic.scores`) rank. It lives here, below both, because the
statistics import the registry (its ``AGREEMENT`` pair) and the registry names the methods: a
method importing the statistics would close an import cycle.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.infra.schema.params import ChangeMethodsConfig, ContextualConfig

# one group's per-period values, in time order (texts, count arrays, embeddings files)
PerPeriod = Sequence[Any]


@dataclass(frozen=True)
class EncoderSettings:
    """How to embed texts with the encoder (the benchmark's contextual method; the embeddings
    stage's ``layer``, ``max_length``, ``batch_size``) and on which ``device`` (a torch.device)."""

    layer: int
    max_length: int
    batch_size: int
    device: Any = "cpu"


@dataclass(frozen=True)
class ChangeInputs:
    """Everything a method may read. ``texts``: (first group, last group), each a list of its
    periods' texts (time order). ``counts``: the same shape of per-period LM-token count arrays
    (the frequencies stage), ``embeddings``: of per-period embeddings files, ``token_ids``: each
    target word's LM token id (the LM tokenizer's single word-starting token) — all three None
    where a stage has no features (the benchmark). ``encoder``: the encoder's name
    (embeddings.encoder: the benchmark's contextual vectors, the scratch MLM's tokenizer);
    ``encoding``: how to embed texts with it (None: use the embeddings files); ``learned``: the
    learned methods' settings; ``seed``: every method's seed. ``max_usages``: from the texts,
    the contextual method encodes at most this many sentences per target and period, a seeded
    sample (:mod:`pipeline.semantic.usages`); None: every sentence holding a target.
    ``contextual``: the usage-vector methods' settings (the layers averaged per occurrence, the
    apd methods' usages per group and shuffles)."""

    first: tuple[str, ...]
    last: tuple[str, ...]
    texts: tuple[PerPeriod, PerPeriod]
    encoder: str
    learned: ChangeMethodsConfig = field(default_factory=ChangeMethodsConfig)
    seed: int = 0
    counts: tuple[PerPeriod, PerPeriod] | None = None
    embeddings: tuple[Sequence[Path], Sequence[Path]] | None = None
    token_ids: Mapping[str, int] | None = None
    encoding: EncoderSettings | None = None
    max_usages: int | None = None
    contextual: ContextualConfig = field(default_factory=ContextualConfig)

    @property
    def group_texts(self) -> tuple[list[str], list[str]]:
        """Each group's texts, its periods' in time order, one list."""
        first, last = ([t for texts in g for t in texts] for g in self.texts)
        return first, last


INPUT_FIELDS = frozenset(f.name for f in dataclasses.fields(ChangeInputs))


@dataclass(frozen=True)
class MethodResult:
    """A method's scores of the targets, in target order (float64, NaN = not scored).

    ``first_counts`` / ``last_counts``: the occurrences each score rests on in each group, where
    the method has its own (the contextual method's embedded occurrences); None: the report
    shows the group's LM-token counts. ``details``: recorded under the method's name in the
    benchmark's JSON (the learned methods' losses); ``totals``: keys of that JSON's top level and
    fields of ``benchmark_note`` (the contextual method's skipped occurrences); ``log``: one line
    for the stage's log (training time)."""

    scores: np.ndarray
    first_counts: np.ndarray | None = None
    last_counts: np.ndarray | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    totals: Mapping[str, Any] = field(default_factory=dict)
    log: str | None = None

    @staticmethod
    def empty() -> MethodResult:
        """No target: nothing to score (a learned method then does not train)."""
        return MethodResult(np.zeros(0, dtype=np.float64))


@dataclass(frozen=True)
class ChangeMethod:
    """One semantic-change method. ``benchmark_note`` is filled with ``str.format`` from
    ``encoder`` (the encoder's name) and the result's ``totals``; ``reads`` names the
    :class:`ChangeInputs` fields the method reads (documentation, checked against the fields)."""

    name: str
    description: str
    benchmark_note: str
    reads: frozenset[str]
    score: Callable[[ChangeInputs, Sequence[str]], MethodResult]

    def __post_init__(self) -> None:
        unknown = set(self.reads) - INPUT_FIELDS
        if unknown:
            raise ValueError(f"method {self.name!r} reads unknown inputs {sorted(unknown)}; "
                             f"ChangeInputs has {sorted(INPUT_FIELDS)}")

    def note(self, encoder: str, result: MethodResult) -> str:
        """The benchmark report's sentence on this method, for its ``result``."""
        return self.benchmark_note.format(encoder=encoder, **result.totals)


@dataclass(frozen=True)
class ChangeScores:
    """One change score per LM token id (higher = more change); ``token_ids`` sorted, unique.

    ``first_counts`` / ``last_counts``: occurrences in the first / last group of periods (kept so
    that a reader can see how well supported a score is; empty when not applicable).
    """

    token_ids: np.ndarray            # int64 [n]
    scores: np.ndarray               # float64 [n]
    first_counts: np.ndarray | None = None   # int64 [n]
    last_counts: np.ndarray | None = None    # int64 [n]

    def __len__(self) -> int:
        return int(self.token_ids.size)

    def as_dict(self) -> dict[int, float]:
        return dict(zip(self.token_ids.tolist(), self.scores.tolist()))
