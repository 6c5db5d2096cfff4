"""The variant seam: what one variant module declares, and the record a built module is made from.

A *variant* of the future LM is one module under :mod:`pipeline.variants`, which
:mod:`pipeline.models.registry` finds. The module declares, in :class:`VariantSpec`:

* ``settings`` — its typed settings, a small frozen dataclass whose fields carry defaults and help
  (``field(metadata={"help": ...})``, as in :mod:`pipeline.infra.schema.config`), read from its own
  section of ``params.yaml`` (``variants.<name>.<field>``). The stage graph turns each field into
  one ``--<field>`` option and one declared param of the train stage; the train stage builds its
  options from the same class (``stages/train.py``);
* ``reads`` — the per-period history features its module reads (``frequencies``,
  ``embeddings``, ``forecasts``: a forecaster's predicted log frequency of the target period
  itself, made from earlier periods only); none: a time-free module;
* what it does to the LM: ``in_body`` (it changes the LM's hidden states, so a frozen LM's cached
  states cannot serve it: :attr:`VariantSpec.cacheable`), ``own_objective`` (it trains on its
  own loss of the final hidden states, not the NLL of its logits), ``targets_from_baseline``
  (it reads the trained Baseline of its seed), ``distribution`` (``softmax``, or ``vmf`` for a
  continuous output whose PPL is not a softmax's);
* ``static_history`` — a *time-free control* of a variant that reads a history: the
  same module, settings and parameter count, but its history is the same for every period, each
  word's features pooled over the training periods (:mod:`pipeline.features.static_history`)
  and repeated in all m window positions. Its difference to its variant is the temporal gain.
  A control is the variant's spec with ``static_history=True``, which the registry derives as
  ``<variant>-static`` (:func:`pipeline.models.registry.control_of`);
* ``relative`` — it reads its history relative to the pooled level of the training periods: the
  history carries ``reference``, each word's log frequency pooled over the LM's training periods
  (:attr:`pipeline.features.history.PeriodHistory.reference`, the level a shared base LM already
  holds), and the model records those periods (``BiasConfig.reference_periods``). Its time-free
  control has both, its history pooled and the reference;
* ``module`` — ``"package.module:Class"``, the ``torch.nn.Module`` holding its equations (the
  interface of :class:`pipeline.models.temporal.TemporalBias`), imported only when a model is
  built. Everything else here is plain data: the graph and the reports read it without torch.

A built module is rebuilt from a :class:`BiasConfig`: the variant's kind, the history window,
the dropout, the LM's shape and the variant's settings; it is saved in the model's
``config.json``. Nothing outside a variant's own module names a variant.
"""

from __future__ import annotations

import importlib
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

from pipeline.features.kinds import kind


def setting(default: Any, help: str, **meta: Any) -> Any:
    """A settings field: its default and its help text (plus option metadata such as ``none``,
    the word that stands for ``None`` on the command line; see
    :mod:`pipeline.infra.schema.config`)."""
    return field(default=default, metadata={"help": help, **meta})


@dataclass(frozen=True)
class VariantSpec:
    """What one variant module declares (module doc)."""

    module: str
    settings: type | None = None
    reads: frozenset[str] = frozenset()
    in_body: bool = False
    own_objective: bool = False
    targets_from_baseline: bool = False
    distribution: str = "softmax"
    static_history: bool = False
    relative: bool = False

    def __post_init__(self) -> None:
        if self.static_history and not self.reads:
            raise ValueError("static_history controls a variant that reads a history; this "
                             "spec reads none")
        if self.relative and "frequencies" not in self.reads:
            raise ValueError("a relative variant reads its log frequencies relative to their "
                             "pooled level: its reads need 'frequencies'")
        for name in self.reads:
            kind(name)   # a ValueError naming the known kinds
        if self.settings is not None:
            for f in fields(self.settings):
                if f.default is MISSING and f.default_factory is MISSING:   # type: ignore[misc]
                    raise ValueError(f"{self.settings.__name__}.{f.name} needs a default: a "
                                     "variant's settings are optional params")

    @property
    def cacheable(self) -> bool:
        """A frozen LM's cached final hidden states can train and score it: the module leaves
        the hidden states alone (not ``in_body``), so with the LM frozen everything it reads is
        in the cache — a bias on the logits as much as an output-layer head with its own
        objective, which reads only the final hidden states (:mod:`pipeline.training.cached`)."""
        return not self.in_body

    def default_settings(self) -> Any:
        return None if self.settings is None else self.settings()

    def module_class(self) -> type[Any]:
        """The module's class (imports torch: only call this to build a model)."""
        path, _, cls = self.module.partition(":")
        return getattr(importlib.import_module(path), cls)


def setting_fields(settings: type | None) -> tuple[Any, ...]:
    """The dataclass fields of a settings class (none for a variant without settings)."""
    return () if settings is None else fields(settings)


_PERIOD_LISTS = ("static_periods", "reference_periods")   # BiasConfig's optional period lists


@dataclass(frozen=True)
class BiasConfig:
    """Everything needed to rebuild a variant's module (stored in the model's ``config.json``).

    ``kind`` is the variant's registry name; ``window`` the history length m; ``dropout`` the
    dropout of its LSTM outputs; ``lm_dim`` the LM's hidden size d and ``vocab_size`` its output
    rows; ``feature_dim`` the contextual embedding size d_enc (variants reading embeddings);
    ``target_dim`` the size of a continuous head's target vectors; ``settings`` the variant's own
    settings (its :class:`VariantSpec` ``settings`` class, or ``None``). ``static_periods``: a
    time-free control's pooling periods (the training periods it was trained with, time order;
    ``None`` for every other variant, and then left out of the saved record).
    ``reference_periods``: the periods a relative variant's reference level is pooled over (its
    training periods, time order; :attr:`VariantSpec.relative`), ``None`` and left out likewise
    for every other variant.
    """

    kind: str
    window: int
    dropout: float = 0.0
    lm_dim: int | None = None
    vocab_size: int | None = None
    feature_dim: int | None = None
    target_dim: int | None = None
    settings: Any = None
    static_periods: tuple[str, ...] | None = None
    reference_periods: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        for name in _PERIOD_LISTS:
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, tuple(map(str, value)))

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)
                if f.name != "settings" and f.name not in _PERIOD_LISTS}
        data["settings"] = None if self.settings is None else asdict(self.settings)
        for name in _PERIOD_LISTS:   # only when set: the records of other variants stay as they were
            if getattr(self, name) is not None:
                data[name] = list(getattr(self, name))
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], settings: type | None) -> BiasConfig:
        """Rebuild from :meth:`to_dict`'s record; ``settings``: the variant's settings class."""
        values = dict(data)
        saved = values.pop("settings", None)
        if settings is not None:
            values["settings"] = settings(**(saved or {}))
        elif saved:
            raise ValueError(f"the {data.get('kind')} variant has no settings, got {saved}")
        return cls(**values)
