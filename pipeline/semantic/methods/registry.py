"""The method registry: the one table of semantic-change methods, in the order of every report.

Each row names a method and the module that implements it (:mod:`.interface`: the module's
``METHOD``, a :class:`~.interface.ChangeMethod`), by string: reading the table imports nothing,
and a module is imported only when its method is described or run (its own heavy imports, torch,
stay inside its functions). The ``semantic_change`` stage (the report) and the
``semantic_benchmark`` stage (pseudo-words or SemEval) both loop over this table (:func:`run`);
nothing else lists method names. A new method is one module plus one row here, or, without
editing this file (a test's toy method, an experiment), one :func:`register` call. A row of
``OPTIONAL`` is a method the stages do not run by default (each learned method trains an MLM,
minutes on the shared cores); :func:`enable` adds it to the table for the process.

=====================  ==========================================  ===============================
method                 what it does                                module (``methods.``)
=====================  ==========================================  ===============================
``contextual``         paper 003's Algorithm 1 on pooled encoder   ``contextual``
                       vectors (Martinc et al. 2020): the distance
                       of the groups' mean vectors (prototypes)
``apd``                average pairwise distance between the two   ``apd``
                       groups' usage vectors (Kutuzov & Giulianelli
                       2020; Periti & Tahmasebi 2024)
``apd-corrected``      ``apd`` minus its mean with the usages'     ``apd_corrected``
                       group labels shuffled
``temporal-attention`` paper 003's temporal-attention MLM, then    ``temporal_attention``
                       Algorithm 1
``time-token``         the same MLM with a period token per text,  ``time_token``
                       masked more often than words (time masking,
                       Rosin et al. 2022)
``sgns``               SGNS per group, Procrustes-aligned          ``sgns``
                       (Hamilton et al. 2016)
``frequency``          |Δ mean log frequency|, the naive baseline  ``frequency``
=====================  ==========================================  ===============================

Optional (``OPTIONAL``, run after :func:`enable`):

=======================  ========================================  ===============================
``time-token-unmasked``  ``time-token`` with the period token      ``time_token_unmasked``
                         never masked (what time masking adds)
=======================  ========================================  ===============================
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Sequence

from pipeline.semantic.methods.interface import ChangeInputs, ChangeMethod, MethodResult

# name -> module holding METHOD, in table (report) order
METHODS: dict[str, str] = {
    "contextual": "pipeline.semantic.methods.contextual",
    "apd": "pipeline.semantic.methods.apd",
    "apd-corrected": "pipeline.semantic.methods.apd_corrected",
    "temporal-attention": "pipeline.semantic.methods.temporal_attention",
    "time-token": "pipeline.semantic.methods.time_token",
    "sgns": "pipeline.semantic.methods.sgns",
    "frequency": "pipeline.semantic.methods.frequency",
}

# name -> module, methods known but not run by default (opt-in: enable(name) adds the row)
OPTIONAL: dict[str, str] = {
    "time-token-unmasked": "pipeline.semantic.methods.time_token_unmasked",
}

# The pair whose Spearman ρ is the semantic_change stage's one DVC metric, ``agreement``: the
# paper's method against the naive baseline (does it only restate a frequency change?).
AGREEMENT = ("contextual", "frequency")


def names() -> list[str]:
    """Every method's name, in table order."""
    return list(METHODS)


def register(name: str, module: str) -> None:
    """Add a row (at the end of the table) for the method in ``module`` (its ``METHOD``); a name
    already in the table is refused. The row lasts for the process (tests restore the table)."""
    if name in METHODS:
        raise ValueError(f"a semantic-change method {name!r} is already registered")
    METHODS[name] = module


def enable(name: str) -> None:
    """Add the ``OPTIONAL`` row ``name`` to the table (at its end; for the process, like
    :func:`register`); a name already in the table is left there."""
    if name not in OPTIONAL:
        raise ValueError(f"no optional semantic-change method {name!r}; optional: {list(OPTIONAL)}")
    if name not in METHODS:
        register(name, OPTIONAL[name])


def lookup(name: str) -> ChangeMethod:
    """The method of row ``name`` (imports its module); ValueError naming the rows otherwise."""
    if name not in METHODS:
        raise ValueError(f"unknown semantic-change method {name!r}; registered: {names()}")
    method = importlib.import_module(METHODS[name]).METHOD
    if not isinstance(method, ChangeMethod) or method.name != name:
        raise ValueError(f"{METHODS[name]}.METHOD must be a ChangeMethod named {name!r}")
    return method


def methods() -> Iterator[ChangeMethod]:
    """Every method, in table order."""
    return (lookup(name) for name in names())


def descriptions() -> dict[str, str]:
    """Each method's one-line description, in table order (the report's section titles)."""
    return {m.name: m.description for m in methods()}


def run(inputs: ChangeInputs, targets: Sequence[str]) -> dict[str, MethodResult]:
    """Every method's scores of ``targets``, in table order (the order the methods run in)."""
    out = {}
    for method in methods():
        result = method.score(inputs, targets)
        if len(result.scores) != len(targets):
            raise ValueError(f"method {method.name!r} returned {len(result.scores)} scores for "
                             f"{len(targets)} targets")
        out[method.name] = result
    return out
