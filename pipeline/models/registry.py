"""The variant registry: the one table of every model variant a future-LM experiment can train.

Each row names a variant (its ``experiment.variants`` name), the paper's name for it, the module
it adds to the base LM's output layer (a ``module:Class`` path, imported only when a model is
built, so that reading the table needs no torch), the per-period history features that module
reads, and the params its train stage reads beyond the ones every variant reads. The stage graph,
training, scoring, the forecast and the reports read this table; nothing else lists variant
names. A new variant is one module (the interface of :class:`pipeline.models.temporal.TemporalBias`)
plus one row here.

Two properties are easy to confuse: a variant *has a module* (``bias`` is set: everything but
the baselines) and a variant is *temporal* (its module reads a history: it predicts a change from
one period to the next). ``temperature`` and ``continuous-*`` have a module but no history.

``baseline-N`` is a family, not a row: the Baseline LM trained on the N latest training periods
only (the paper's Baseline-2/3); :func:`lookup` builds its entry.

=====================  ===================  ================================  ==================
variant                paper name           bias (pipeline.models.temporal)   history features
=====================  ===================  ================================  ==================
``baseline[-N]``       Baseline-all / -N    none                              none
``frequency-nolstm``   Frequency-NoLSTM     ``a · log f_{i-1,w} + b``         frequencies
``frequency``          Frequency            eq. 6, LSTM over log f            frequencies
``context``            Context              eq. 8, LSTM over V                embeddings
``context2``           Context²             eq. 9-10                          embeddings
``temperature``        (paper 002) CT       ``z / τ(h)``, eq. 5               none
``temporal-            (ours)               ``z / τ(h, u_k)``,                frequencies
temperature``                               ``docs/temperature.md``
``continuous-vmf``,    (paper 004) vMF,     ``ê = W h``, NN decoding          none (targets: the
``-cosine``,           cosine, max-margin   (:mod:`.continuous`)              Baseline's input
``-max-margin``                                                               embeddings)
``temporal-            (ours)               attention ``Q(I+TᵀT/(‖T‖√n))Kᵀ``,   frequencies
attention``                                 T from the history (:mod:`.attention_time`)
=====================  ===================  ================================  ==================
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, replace
from typing import Any

from pipeline.infra.errors import UserError

NO_BIAS = "none"


@dataclass(frozen=True)
class Variant:
    """One registry row. ``kind`` is the bias kind saved with a model (``none`` for baselines);
    ``reads`` the history features its bias reads (``frequencies``/``embeddings``); ``params``
    the dotted params only this variant's train stage reads; ``latest_periods`` N of baseline-N;
    ``in_body``: the module changes the LM's hidden states, so a frozen base's cached states
    (:mod:`pipeline.training.cached`) do not apply."""

    name: str
    display: str
    bias: str | None = None
    reads: frozenset[str] = frozenset()
    params: tuple[str, ...] = ()
    latest_periods: int | None = None
    targets_from_baseline: bool = False
    distribution: str = "softmax"
    in_body: bool = False   # its module changes the LM's hidden states (temporal attention)

    @property
    def kind(self) -> str:
        return NO_BIAS if self.bias is None else self.name

    @property
    def has_module(self) -> bool:
        """Adds a module to the base LM (every variant but the baselines)."""
        return self.bias is not None

    @property
    def output_layer(self) -> bool:
        """Its module changes the output layer itself (:mod:`pipeline.models.heads`: temperature,
        continuous output) rather than adding a temporal bias."""
        return self.bias is not None and self.bias.startswith(f"{_HEADS}:")

    @property
    def cacheable(self) -> bool:
        """Shared-base training can read a frozen base's cached final hidden states
        (``train.cache``; :mod:`pipeline.training.cached`): it has a module, the module leaves
        the LM's hidden states alone (not ``in_body``) and trains on the NLL of the biased logits
        (not an output-layer head, whose own objective — ``own_objective`` — the cache does not
        serve)."""
        return self.has_module and not self.in_body and not self.output_layer

    @property
    def temporal(self) -> bool:
        """Its module reads a history, so its predictions move from one period to the next."""
        return bool(self.reads)

    @property
    def feature_files(self) -> tuple[str, ...]:
        """Per-period feature files its stages read: none, or frequencies (always: they give the
        history's ``observed`` mask) plus what the module reads."""
        if not self.temporal:
            return ()
        return ("frequencies", *sorted(self.reads - {"frequencies"}))

    def bias_class(self) -> type[Any]:
        """The bias module's class (imports torch: only call this to build a model)."""
        if self.bias is None:
            raise ValueError(f"{self.name} has no bias module")
        module, _, cls = self.bias.partition(":")
        return getattr(importlib.import_module(module), cls)


_TEMPORAL = "pipeline.models.temporal"
_HEADS = "pipeline.models.heads"
_LSTM = ("train.lr_new", "train.lstm_hidden")
_CONTEXT = ("features.context_input",)
_TAU = ("train.lr_new", "train.temperature_rank", "train.temperature_norm",
        "train.temperature_alpha", "train.temperature_beta", "train.temperature_loss_scale")
_CONTINUOUS = ("train.lr_new",)
_ATTENTION = ("train.lr_new", "train.time_dim", "train.time_attention")

VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("baseline", "Baseline-all"),
    Variant("frequency-nolstm", "Frequency-NoLSTM", f"{_TEMPORAL}:FrequencyNoLSTMBias",
            frozenset({"frequencies"}), ("train.lr_new",)),
    Variant("frequency", "Frequency", f"{_TEMPORAL}:FrequencyBias",
            frozenset({"frequencies"}), _LSTM),
    Variant("context", "Context", f"{_TEMPORAL}:ContextBias",
            frozenset({"embeddings"}), (*_LSTM, *_CONTEXT)),
    Variant("context2", "Context²", f"{_TEMPORAL}:Context2Bias",
            frozenset({"embeddings"}), (*_LSTM, "train.alpha", *_CONTEXT)),
    Variant("temperature", "Temperature", f"{_HEADS}:TemperatureHead", frozenset(), _TAU),
    Variant("temporal-temperature", "Temporal-Temperature", f"{_HEADS}:TemperatureHead",
            frozenset({"frequencies"}), (*_TAU, "train.lstm_hidden")),
    *(Variant(f"continuous-{loss}", f"Continuous-{name}", f"{_HEADS}:ContinuousOutput",
              frozenset(), _CONTINUOUS, targets_from_baseline=True, distribution="vmf")
      for loss, name in (("vmf", "vMF"), ("cosine", "cosine"), ("max-margin", "max-margin"))),
    Variant("temporal-attention", "Temporal-Attention",
            "pipeline.models.attention_time:TemporalAttentionLM", frozenset({"frequencies"}),
            _ATTENTION, in_body=True),
)}
BIAS_KINDS = (NO_BIAS, *(v.name for v in VARIANTS.values() if v.has_module))


def _unknown(name: str) -> UserError:
    return UserError(f"unknown variant {name!r}", path="experiment.variants",
                     fix="use baseline, baseline-N (N >= 1 latest training periods) or one of "
                         f"{', '.join(BIAS_KINDS[1:])}")


def lookup(name: str) -> Variant:
    """The registry row of ``name`` (``baseline-N`` built from Baseline's); a :class:`UserError`
    naming the valid names otherwise."""
    if name in VARIANTS:
        return VARIANTS[name]
    if name.startswith("baseline-"):
        n = name[len("baseline-"):]
        if not n.isdigit() or int(n) < 1:
            raise UserError(f"unknown variant {name!r}: baseline-N needs N >= 1 (the number of "
                            "latest training periods)", path="experiment.variants",
                            fix="use baseline, baseline-N with N >= 1, or one of "
                                f"{', '.join(BIAS_KINDS[1:])}")
        return replace(VARIANTS["baseline"], name=name, display=f"Baseline-{int(n)}",
                       latest_periods=int(n))
    raise _unknown(name)


def by_kind(kind: str) -> Variant:
    """The row whose bias kind is ``kind`` (as saved in a model's config); ``none``: Baseline."""
    if kind == NO_BIAS:
        return VARIANTS["baseline"]
    if kind in VARIANTS and VARIANTS[kind].has_module:
        return VARIANTS[kind]
    raise ValueError(f"unknown bias kind {kind!r}; expected one of {BIAS_KINDS}")


def display_name(name: str) -> str:
    """The paper's name for a variant (``baseline-2`` -> ``Baseline-2``); an unknown name as is."""
    try:
        return lookup(name).display
    except UserError:
        return name
