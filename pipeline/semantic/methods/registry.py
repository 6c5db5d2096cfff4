"""The method registry: the one table of semantic-change methods, in the order of every report,
found, not listed.

A method is one module of this package that declares ``METHOD`` (a :class:`~.interface.ChangeMethod`
named as the module, ``_`` written ``-``) and ``ORDER`` (its place in the table); the registry
discovers them (their own heavy imports, torch, stay inside their functions, so reading the table
is quick). The ``semantic_change`` stage (the report) and the ``semantic_benchmark`` stage
(pseudo-words or SemEval) both loop over this table (:func:`run`); nothing else lists method
names. A new method is one module, or, without adding a file here (a test's toy method, an
experiment), one :func:`register` call. A module that declares ``OPTIONAL = True`` is a method
the stages do not run by default (each learned method trains an MLM, minutes on the shared
cores); :func:`enable` adds it to the table for the process.

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
import pkgutil
from collections.abc import Iterator, Sequence

from threadpoolctl import threadpool_limits

import pipeline.semantic.methods as _package
from pipeline.semantic.methods.interface import ChangeInputs, ChangeMethod, MethodResult

# Modules of this package that hold no method.
_NOT_METHODS = frozenset({"interface", "registry"})


def _discovered() -> tuple[dict[str, str], dict[str, str]]:
    """Every method module of this package, by its ``ORDER``: the rows run by default and the
    optional ones (``OPTIONAL = True``), each name -> module. A method's name is its module's,
    ``_`` written ``-`` (``apd_corrected.py``: ``apd-corrected``)."""
    rows = []
    for info in pkgutil.iter_modules(_package.__path__):
        if info.name.startswith("_") or info.name in _NOT_METHODS:
            continue
        module = importlib.import_module(f"{_package.__name__}.{info.name}")
        order = getattr(module, "ORDER", None)
        if not isinstance(order, int):
            raise ValueError(f"{module.__name__} needs ORDER = <int> (its place in the reports)")
        optional = bool(getattr(module, "OPTIONAL", False))
        rows.append((order, info.name.replace("_", "-"), module.__name__, optional))
    rows.sort()
    return ({name: module for _, name, module, optional in rows if not optional},
            {name: module for _, name, module, optional in rows if optional})


# name -> module holding METHOD, in table (report) order; and the methods known but not run by
# default (opt-in: enable(name) adds the row)
METHODS, OPTIONAL = _discovered()

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
        # numpy's BLAS sums a product in another order with another thread count, and its count
        # follows the caller's OMP_NUM_THREADS: one thread, so the scores are the same bytes
        # whatever the environment (torch's threads are fixed by the stage: not "blas" here)
        with threadpool_limits(limits=1, user_api="blas"):
            result = method.score(inputs, targets)
        if len(result.scores) != len(targets):
            raise ValueError(f"method {method.name!r} returned {len(result.scores)} scores for "
                             f"{len(targets)} targets")
        out[method.name] = result
    return out
