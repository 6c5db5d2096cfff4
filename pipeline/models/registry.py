"""The variant registry: the one table of every model variant a future-LM experiment can train.

Each row names a variant (its ``experiment.variants`` name), the paper's name for it, and its
variant module under :mod:`pipeline.models.variants`, which declares everything else
(:class:`pipeline.models.variant.VariantSpec`: its typed settings, the history features it reads,
what its ``torch`` module does to the LM and where that module's equations live). Reading the
table and the specs needs no torch. The stage graph, training, scoring, the forecast and the
reports read this table; nothing else lists variant names. A new variant is one module plus one
row here (``docs/design.md``, "Add a variant").

Two properties are easy to confuse: a variant *has a module* (``module`` is set: everything but
the baselines) and a variant is *temporal* (its module reads a history: it predicts a change from
one period to the next). ``temperature`` and ``continuous-*`` have a module but no history.

Every variant that reads a history has a *time-free control*, ``<variant>-static``: the same
module and settings with a history pooled over the training periods, the same for every period
(:attr:`pipeline.models.variant.VariantSpec.static_history`; GUIDE §12). It reads the history
features but is not temporal. :func:`control_of` and :func:`control_for` pair a control with its
variant, read from the specs and the ``-static`` name alone.

``baseline-N`` is a family, not a row: the Baseline LM trained on the N latest training periods
only (the paper's Baseline-2/3); :func:`lookup` builds its entry. ``baseline-0`` (:data:`UNADAPTED`),
trained on none, is a pretrained LM as it is: the unadapted reference row of ``train.base:
adapted``, whose Baseline is that LM adapted to the training periods. ``docs/equations.md`` maps each
equation of the papers to the file and function that computes it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, replace
from typing import Any

from pipeline.infra.errors import UserError
from pipeline.models.variant import VariantSpec

NO_BIAS = "none"
STATIC_SUFFIX = "-static"
BASELINE = "baseline"   # the Baseline LM, fine-tuned on every training period
UNADAPTED = "baseline-0"   # the pretrained LM, trained on no period (train.base: adapted)


@dataclass(frozen=True)
class Variant:
    """One registry row: ``name`` (``experiment.variants``), ``display`` (the paper's name) and
    ``module``, the variant module (a module path) whose ``VARIANT`` spec describes it; ``None``
    for the baselines (the plain LM). ``latest_periods``: N of baseline-N."""

    name: str
    display: str
    module: str | None = None
    latest_periods: int | None = None

    @property
    def spec(self) -> VariantSpec | None:
        """The variant module's :class:`VariantSpec` (``None``: a baseline)."""
        if self.module is None:
            return None
        spec = getattr(importlib.import_module(self.module), "VARIANT", None)
        if not isinstance(spec, VariantSpec):
            raise ValueError(f"variant module {self.module} defines no VARIANT = VariantSpec(...)")
        return spec

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


VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("baseline", "Baseline-all"),
    Variant("frequency-nolstm", "Frequency-NoLSTM", "pipeline.models.variants.frequency_nolstm"),
    Variant("frequency", "Frequency", "pipeline.models.variants.frequency"),
    Variant("context", "Context", "pipeline.models.variants.context"),
    Variant("context2", "Context²", "pipeline.models.variants.context2"),
    Variant("temperature", "Temperature", "pipeline.models.variants.temperature"),
    Variant("temperature-sigmoid", "Temperature-σ", "pipeline.models.variants.temperature_sigmoid"),
    Variant("temporal-temperature", "Temporal-Temperature", "pipeline.models.variants.temporal_temperature"),
    Variant("continuous-vmf", "Continuous-vMF", "pipeline.models.variants.continuous_vmf"),
    Variant("continuous-cosine", "Continuous-cosine", "pipeline.models.variants.continuous_cosine"),
    Variant("continuous-max-margin", "Continuous-max-margin", "pipeline.models.variants.continuous_max_margin"),
    Variant("temporal-attention", "Temporal-Attention", "pipeline.models.variants.temporal_attention"),
    # time-free controls (GUIDE §12): each the variant above with its history pooled over time
    Variant("frequency-nolstm-static", "Frequency-NoLSTM-static", "pipeline.models.variants.frequency_nolstm_static"),
    Variant("frequency-static", "Frequency-static", "pipeline.models.variants.frequency_static"),
    Variant("context-static", "Context-static", "pipeline.models.variants.context_static"),
    Variant("context2-static", "Context²-static", "pipeline.models.variants.context2_static"),
    Variant("temporal-temperature-static", "Temporal-Temperature-static", "pipeline.models.variants.temporal_temperature_static"),
    Variant("temporal-attention-static", "Temporal-Attention-static", "pipeline.models.variants.temporal_attention_static"),
)}


def module_kinds() -> tuple[str, ...]:
    """Every kind a saved model may record: ``none`` and each variant with a module."""
    return (NO_BIAS, *(v.name for v in VARIANTS.values() if v.has_module))


def _names() -> str:
    return ", ".join(module_kinds()[1:])


def lookup(name: str) -> Variant:
    """The registry row of ``name`` (``baseline-N`` built from Baseline's); a :class:`UserError`
    naming the valid names otherwise."""
    if name in VARIANTS:
        return VARIANTS[name]
    if name.startswith("baseline-"):
        n = name[len("baseline-"):]
        if not n.isdigit():
            raise UserError(f"unknown variant {name!r}: baseline-N needs N >= 0 (the number of "
                            "latest training periods; 0: the pretrained LM as it is)",
                            path="experiment.variants",
                            fix=f"use baseline, baseline-N with N >= 0, or one of {_names()}")
        display = "Baseline-unadapted" if name == UNADAPTED else f"Baseline-{int(n)}"
        return replace(VARIANTS["baseline"], name=name, display=display, latest_periods=int(n))
    raise UserError(f"unknown variant {name!r}", path="experiment.variants",
                    fix=f"use baseline, baseline-N (N >= 0 latest training periods; 0: the "
                        f"pretrained LM as it is, with train.base: adapted) or one of {_names()}")


def by_kind(kind: str) -> Variant:
    """The row whose module kind is ``kind`` (as saved in a model's config); ``none``: Baseline."""
    if kind == NO_BIAS:
        return VARIANTS["baseline"]
    if kind in VARIANTS and VARIANTS[kind].has_module:
        return VARIANTS[kind]
    raise ValueError(f"unknown module kind {kind!r}; expected one of {module_kinds()}")


def control_of(name: str) -> str | None:
    """The variant that the time-free control ``name`` controls (``frequency-static`` ->
    ``frequency``): the row named ``name`` minus ``-static`` whose spec is the control's but for
    ``static_history``; ``None`` when ``name`` is no control (or unknown)."""
    entry = VARIANTS.get(name)
    if entry is None or not entry.static or not name.endswith(STATIC_SUFFIX):
        return None
    variant = VARIANTS.get(name[:-len(STATIC_SUFFIX)])
    if variant is None or variant.spec is None or variant.static:
        return None
    return variant.name if replace(variant.spec, static_history=True) == entry.spec else None


def control_for(variant: str) -> str | None:
    """The name of ``variant``'s time-free control (``frequency`` -> ``frequency-static``);
    ``None`` for a variant without one (no history, or a control itself)."""
    name = variant + STATIC_SUFFIX
    return name if control_of(name) == variant else None


def display_name(name: str) -> str:
    """The paper's name for a variant (``baseline-2`` -> ``Baseline-2``); an unknown name as is."""
    try:
        return lookup(name).display
    except UserError:
        return name
