"""The variant registry: every model variant a future-LM experiment can train, found, not listed.

A variant is one module under :mod:`pipeline.variants`; its name is the module's with
``-`` for ``_`` (``frequency_nolstm.py``: ``frequency-nolstm``, its ``experiment.variants`` name).
The module declares ``VARIANT`` (:class:`pipeline.variants._spec.VariantSpec`: its typed settings,
the history features it reads, what its ``torch`` module does to the LM and where that module's
equations live) and its registry row: ``DISPLAY`` (the paper's name), ``ORDER`` (its place in
listings: the order params.yaml's ``variants`` section and the error messages list variants in)
and, optionally, ``COMPARED_WITH`` (the variant its output-layer question sets it against in the
results report). Nothing else lists variant names: a new variant is one new module, and adding it
edits no file an existing stage depends on (``docs/design.md``, "Add a variant").

:func:`lookup` imports only the module of the variant it is asked for, so a stage depends on the
modules of the variants it runs and no other (:class:`pipeline.graph.code_deps.Code`);
:func:`all_variants` imports every one (the stage graph and the tests list them). Reading the
rows and the specs needs no torch.

Two properties are easy to confuse: a variant *has a module* (``module`` is set: everything but
the baselines) and a variant is *temporal* (its module reads a history: it predicts a change from
one period to the next). ``temperature`` and ``continuous-*`` have a module but no history.

Every temporal variant has a *time-free control*, ``<variant>-static``, derived here and written
nowhere: the same module and settings with a history pooled over the training periods, the same
for every period (:attr:`pipeline.variants._spec.VariantSpec.static_history`). It reads
the history features but is not temporal, and it reads its variant's params section
(:func:`params_section`). :func:`control_of` and :func:`control_for` pair a control with its
variant.

``baseline`` (:data:`BASELINE`) is the plain LM, the one row without a module. ``baseline-N`` is a
family, not a row: the Baseline LM trained on the N latest training periods only (the paper's
Baseline-2/3); :func:`lookup` builds its entry. ``baseline-0`` (:data:`UNADAPTED`), trained on
none, is a pretrained LM as it is: the unadapted reference row of ``train.base: adapted``, whose
Baseline is that LM adapted to the training periods. ``continued-N`` (:data:`CONTINUED`, N >= 1)
is the other family: the seed's trained Baseline trained further, the whole LM, on the N latest
training periods, for as many optimizer steps as one Baseline run over every training period
(what a practitioner does first for next period's text: keep training on the latest data, at the
extra compute a temporal variant costs). Both families are baselines: no module, no history. ``docs/equations.md`` maps each equation of the
papers to the file and function that computes it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import pipeline.variants as package
from pipeline.infra.errors import UserError
from pipeline.variants._spec import VariantSpec

NO_BIAS = "none"
STATIC_SUFFIX = "-static"
BASELINE = "baseline"      # the plain LM trained on every training period: the reference row
UNADAPTED = "baseline-0"   # the pretrained LM, trained on no period (train.base: adapted)
CONTINUED = "continued"    # continued-N: the trained Baseline, further on the N latest periods
# A variant's name: its module's (lower case, digits, ``-`` for ``_``); ``-static`` ends only the
# derived controls' names.
_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


@dataclass(frozen=True)
class Variant:
    """One registry row: ``name`` (``experiment.variants``), ``display`` (the paper's name) and
    ``module``, the variant module (a module path) whose ``VARIANT`` spec describes it; ``None``
    for the baselines (the plain LM). ``latest_periods``: N of baseline-N and continued-N, the
    latest training periods it trains on; ``continued``: continued-N, which starts from the
    seed's trained Baseline rather than from ``lm.base``. ``control``: a time-free control, whose
    spec is its module's with ``static_history``. ``compared_with`` and ``order``: the module's
    ``COMPARED_WITH`` and ``ORDER``."""

    name: str
    display: str
    module: str | None = None
    latest_periods: int | None = None
    continued: bool = False
    control: bool = False
    compared_with: str | None = None
    order: int = 0

    @property
    def spec(self) -> VariantSpec | None:
        """The variant module's :class:`VariantSpec` (``None``: a baseline; a control: the
        module's with its history pooled over time)."""
        if self.module is None:
            return None
        spec = getattr(importlib.import_module(self.module), "VARIANT", None)
        if not isinstance(spec, VariantSpec):
            raise ValueError(f"variant module {self.module} defines no VARIANT = VariantSpec(...)")
        return replace(spec, static_history=True) if self.control else spec

    @property
    def kind(self) -> str:
        """The module kind saved with a model: the variant's name (``none`` for baselines)."""
        return NO_BIAS if self.module is None else self.name

    @property
    def has_module(self) -> bool:
        """Adds a module to the base LM (every variant but the baselines)."""
        return self.module is not None

    @property
    def settings(self) -> type | None:
        """Its settings class (params ``variants.<name>.*``), ``None`` when it has none."""
        spec = self.spec
        return None if spec is None else spec.settings

    @property
    def reads(self) -> frozenset[str]:
        spec = self.spec
        return frozenset() if spec is None else spec.reads

    @property
    def in_body(self) -> bool:
        """Its module changes the LM's hidden states (a frozen LM's cached states do not apply)."""
        spec = self.spec
        return spec is not None and spec.in_body

    @property
    def output_layer(self) -> bool:
        """Its module replaces the output layer's loss (trains on its own objective: contextual
        temperature, continuous output) rather than adding a bias to the logits."""
        spec = self.spec
        return spec is not None and spec.own_objective

    @property
    def targets_from_baseline(self) -> bool:
        spec = self.spec
        return spec is not None and spec.targets_from_baseline

    @property
    def distribution(self) -> str:
        spec = self.spec
        return "softmax" if spec is None else spec.distribution

    @property
    def cacheable(self) -> bool:
        """Shared-base training can read a frozen base's cached final hidden states
        (``train.cache``; :mod:`pipeline.training.cached`): it has a module and the module
        allows it (:attr:`VariantSpec.cacheable`: it does not change the hidden states). The one
        statement of the rule."""
        spec = self.spec
        return spec is not None and spec.cacheable

    @property
    def static(self) -> bool:
        """A time-free control: its history is pooled over the training periods, the same for
        every period (:attr:`VariantSpec.static_history`)."""
        spec = self.spec
        return spec is not None and spec.static_history

    @property
    def relative(self) -> bool:
        """Reads its history relative to the pooled log frequency of the training periods
        (:attr:`VariantSpec.relative`): its stages read those periods' frequency files too."""
        spec = self.spec
        return spec is not None and spec.relative

    @property
    def temporal(self) -> bool:
        """Its module reads a history that changes with the period, so its predictions move from
        one period to the next (a time-free control reads one that does not)."""
        return bool(self.reads) and not self.static

    @property
    def feature_files(self) -> tuple[str, ...]:
        """Per-period feature files its stages read: none, or frequencies (always: they give the
        history's ``observed`` mask) plus what the module reads."""
        if not self.reads:
            return ()
        return ("frequencies", *sorted(self.reads - {"frequencies"}))

    def module_class(self) -> type[Any]:
        """The module's class (imports torch: only call this to build a model)."""
        spec = self.spec
        if spec is None:
            raise ValueError(f"{self.name} has no module")
        return spec.module_class()



_BASELINE_ROW = Variant(BASELINE, "Baseline-all")


def _module_of(name: str) -> str:
    return f"{package.__name__}.{name.replace('-', '_')}"


def _declared(name: str) -> Variant | None:
    """The row the variant module of ``name`` declares (importing that module alone); ``None``
    when there is no such module."""
    if not _NAME.fullmatch(name) or name.endswith(STATIC_SUFFIX):
        return None
    module_name = _module_of(name)
    if importlib.util.find_spec(module_name) is None:
        return None
    module = importlib.import_module(module_name)
    display, order = getattr(module, "DISPLAY", None), getattr(module, "ORDER", None)
    if not isinstance(display, str) or not isinstance(order, int) \
            or not isinstance(getattr(module, "VARIANT", None), VariantSpec):
        raise ValueError(f"variant module {module_name} needs VARIANT = VariantSpec(...), "
                         "DISPLAY = '<paper name>' and ORDER = <int> (its place in listings)")
    return Variant(name, display, module_name,
                   compared_with=getattr(module, "COMPARED_WITH", None), order=order)


def _control_row(variant: Variant) -> Variant | None:
    """``variant``'s time-free control, derived: every temporal variant has one."""
    if not variant.temporal:
        return None
    return replace(variant, name=variant.name + STATIC_SUFFIX,
                   display=variant.display + STATIC_SUFFIX, control=True, compared_with=None)


@functools.cache
def _row(name: str) -> Variant | None:
    """The row of a variant module or a derived control (``None``: neither), one object each."""
    if name.endswith(STATIC_SUFFIX):
        variant = _row(name[:-len(STATIC_SUFFIX)])
        return None if variant is None or variant.control else _control_row(variant)
    return _declared(name)


@functools.cache
def all_variants() -> Mapping[str, Variant]:
    """Every variant, by name: Baseline, each variant module's in ``ORDER``, then the time-free
    controls in their variants' order. Imports every variant module (the graph and the tests
    list them; a stage that runs one variant uses :func:`lookup`)."""
    names = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("_"):
            continue
        name = info.name.replace("_", "-")
        if not _NAME.fullmatch(name) or name.endswith(STATIC_SUFFIX) \
                or name.partition("-")[0] in (BASELINE, CONTINUED):
            raise ValueError(f"{package.__name__}.{info.name}: a variant module's name is lower "
                             "case letters, digits and _, neither ends in _static (the time-free "
                             "controls are derived) nor starts with baseline or continued (the "
                             "plain LM's families)")
        names.append(name)
    rows = [r for r in map(_row, names) if r is not None]
    declared = sorted(rows, key=lambda r: (r.order, r.name))
    controls = [c for r in declared if (c := _row(r.name + STATIC_SUFFIX)) is not None]
    return MappingProxyType({v.name: v for v in (_BASELINE_ROW, *declared, *controls)})


def module_kinds() -> tuple[str, ...]:
    """Every kind a saved model may record: ``none`` and each variant with a module."""
    return (NO_BIAS, *(v.name for v in all_variants().values() if v.has_module))


def _names() -> str:
    return ", ".join(module_kinds()[1:])


def _latest(name: str, family: str, least: int) -> int:
    """N of ``<family>-N`` (the number of latest training periods), at least ``least``; a
    :class:`UserError` naming the family's rule otherwise."""
    n = name[len(family) + 1:]
    if not n.isdigit() or int(n) < least:
        rule = ("the number of latest training periods; 0: the pretrained LM as it is"
                if family == BASELINE else "the number of latest training periods the trained "
                "Baseline continues on")
        raise UserError(f"unknown variant {name!r}: {family}-N needs N >= {least} ({rule})",
                        path="experiment.variants",
                        fix=f"use baseline, baseline-N with N >= 0, continued-N with N >= 1, "
                            f"or one of {_names()}")
    return int(n)


def lookup(name: str) -> Variant:
    """The registry row of ``name`` (``baseline-N`` and ``continued-N`` built from Baseline's; a
    control from its variant's module), importing at most that one variant module; a
    :class:`UserError` naming the valid names otherwise."""
    if name == BASELINE:
        return _BASELINE_ROW
    row = _row(name)
    if row is not None:
        return row
    if name.startswith(f"{BASELINE}-"):
        n = _latest(name, BASELINE, 0)
        display = "Baseline-unadapted" if name == UNADAPTED else f"Baseline-{n}"
        return replace(_BASELINE_ROW, name=name, display=display, latest_periods=n)
    if name.startswith(f"{CONTINUED}-"):
        n = _latest(name, CONTINUED, 1)
        return replace(_BASELINE_ROW, name=name, display=f"Baseline-continued-{n}",
                       latest_periods=n, continued=True)
    raise UserError(f"unknown variant {name!r}", path="experiment.variants",
                    fix=f"use baseline, baseline-N (N >= 0 latest training periods; 0: the "
                        f"pretrained LM as it is, with train.base: adapted), continued-N (the "
                        f"trained Baseline continued on the N >= 1 latest training periods) or "
                        f"one of {_names()}")


def by_kind(kind: str) -> Variant:
    """The row whose module kind is ``kind`` (as saved in a model's config); ``none``: Baseline."""
    if kind == NO_BIAS:
        return _BASELINE_ROW
    row = _row(kind)
    if row is not None:
        return row
    raise ValueError(f"unknown module kind {kind!r}; expected one of {module_kinds()}")


def control_of(name: str) -> str | None:
    """The variant that the time-free control ``name`` controls (``frequency-static`` ->
    ``frequency``); ``None`` when ``name`` is no control (or unknown)."""
    row = _row(name)
    return name[:-len(STATIC_SUFFIX)] if row is not None and row.control else None


def control_for(variant: str) -> str | None:
    """The name of ``variant``'s time-free control (``frequency`` -> ``frequency-static``);
    ``None`` for a variant without one (no history, or a control itself)."""
    name = variant + STATIC_SUFFIX
    return name if control_of(name) == variant else None


def window_control(variant: str, variants: Sequence[str]) -> str | None:
    """A continued Baseline's control among ``variants``: the continued Baseline with the most
    latest periods (``continued-2`` -> ``continued-17`` of a 17-period training run). Both take
    the Baseline's steps from the same seed's Baseline, so what differs is only how recent the
    window is; ``None`` for any other variant and for the widest itself."""
    continued = [v for v in variants if v.startswith(f"{CONTINUED}-")]
    if variant not in continued or len(continued) < 2:
        return None
    widest = max(continued, key=lambda v: lookup(v).latest_periods)
    return None if lookup(variant).latest_periods >= lookup(widest).latest_periods else widest


def params_section(name: str) -> str:
    """The ``variants.<section>`` whose settings the variant ``name`` reads: its own, or for a
    time-free control its variant's (``frequency-static``: ``frequency``), so that the two
    cannot differ in a setting, nor in their parameter count."""
    return control_of(name) or name


def display_name(name: str) -> str:
    """The paper's name for a variant (``baseline-2`` -> ``Baseline-2``); an unknown name as is."""
    try:
        return lookup(name).display
    except UserError:
        return name


def seeds_by_variant(variants: Sequence[str], seeds: Sequence[int],
                     other_seeds: Sequence[int] = ()) -> dict[str, tuple[int, ...]]:
    """The seeds each of ``variants`` runs (params ``experiment.seeds`` and ``.other_seeds``).

    The two sides of a temporal-gain claim (a variant whose time-free control or window control
    is among ``variants``, and that control) and the Baseline run every seed of ``seeds``; the rest run
    ``other_seeds`` (empty: ``seeds`` too). The Baseline is the reference of every variant claim
    and, when the variants start from a trained Baseline, each seed's base."""
    chosen = tuple(other_seeds) or tuple(seeds)
    window = {v: window_control(v, variants) for v in variants}
    full = {BASELINE} | {w for v, w in window.items() if w} | {
        v for v in variants if control_for(v) in variants or control_of(v) in variants or window[v]}
    return {v: tuple(seeds) if v in full else chosen for v in variants}


def common_seeds(seeds: Mapping[str, Sequence[int]]) -> list[int]:
    """The seeds every variant of :func:`seeds_by_variant`'s mapping runs, in the first one's
    order."""
    groups = list(seeds.values())
    return [s for s in groups[0] if all(s in mine for mine in groups)]
