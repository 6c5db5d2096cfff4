"""Output-layer variants as registry modules: contextual temperature (paper 002) and continuous
output (paper 004), behind the same interface as the temporal biases
(:class:`pipeline.models.temporal.TemporalBias`), so training, scoring, generation, the forecast
and the long-tail metrics serve them unchanged.

The future LM's hook on ``lm_head`` (:mod:`pipeline.models.future_lm`) hands a module the final
hidden states ``h`` and the logits ``z = Eᵀ h``; a bias returns ``z + B``. These modules return:

=========================  ===================================================================
``temperature``            ``z / τ``, ``τ = (σ(hᵀ W_τ1 W_τ2) + α) / β`` (paper 002 eq. 4-5)
``temporal-temperature``   ``z / τ``, ``τ_k = (σ(hᵀ W_τ1 W_τ2 + u_k) + α) / β``, ``u_k`` from word
                           k's frequency history (``docs/temperature.md``)
``continuous-<loss>``      ``ê · e_k`` for every word k: ``ê = W h + b`` the predicted point,
                           ``e_k`` the fixed unit target vectors. Their argmax / top-10 is
                           nearest-neighbour decoding by cosine (for one position ``‖ê‖`` is a
                           constant factor), their softmax the vMF densities renormalised over
                           the vocabulary (:func:`pipeline.models.continuous.vmf_log_probs`)
=========================  ===================================================================

Both train on their own loss (:meth:`objective`, ``own_objective``): the temperature heads on eq.
7's loss-scaled cross-entropy (``loss_scale``; AR/TAR do not apply: they regularise an LSTM LM's
activations, and our LM is a transformer), the continuous heads on K&T's loss of their name,
computed from ``ê`` alone: no |V|-wide softmax in training.

Target space of the continuous heads: the input embeddings of the trained Baseline of the same
seed (:func:`pipeline.models.continuous.frozen_input_embeddings`), copied once when the model is
built (:meth:`ContinuousOutput.set_targets`) and saved with it. Why not word2vec (paper 004):
gensim is no dependency, and its word vocabulary would not match the token ids that PPL, scoring
and the long-tail metrics use. Why not the LM's own initial embeddings: with the offline default
(a GPT-2 trained from scratch) they are random, a target space with no notion of similar words,
which is the whole point of paper 004. The Baseline's are trained on the training periods only.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from pipeline.features.history import PeriodHistory
from pipeline.models.continuous import IGNORE, ContinuousHead
from pipeline.models.temperature import (ContextualTemperature, TemporalTemperature,
                                         bounded_temperature, temperature_nll)
from pipeline.models.temporal import TemporalBias
from pipeline.variants._spec import BiasConfig

VMF_LAMBDA1 = 0.02   # NLLvMF_reg1's λ1, K&T's setting: keeps ‖ê‖ (κ) from growing without bound


def _n_targets(targets: Tensor) -> Tensor:
    return (targets != IGNORE).sum()


def _require(config: BiasConfig, *names: str) -> None:
    missing = [n for n in names if getattr(config, n) is None]
    if missing:
        raise ValueError(f"the {config.kind} module needs {', '.join(missing)} in its BiasConfig")


class TemperatureHead(TemporalBias):
    """Eq. 5's temperature on the logits (variant ``temperature``); :class:`TemporalTemperatureHead`
    adds the history term ``u``.

    :meth:`word_terms` is ``u`` ``[|V|]`` (zeros here: eq. 5 exactly, since adding 0 changes no
    float), so the per-history part runs once per batch like every bias's.
    """

    def __init__(self, config: BiasConfig) -> None:
        super().__init__(config)
        _require(config, "lm_dim", "vocab_size")
        self.tau: ContextualTemperature = self._temperature(config)

    @staticmethod
    def _shape(config: BiasConfig) -> tuple[tuple[int, int, int], dict[str, Any]]:
        s = config.settings
        return ((config.lm_dim, config.vocab_size, s.rank),   # type: ignore[return-value]
                dict(alpha=s.alpha, beta=s.beta, norm=s.norm))

    def _temperature(self, config: BiasConfig) -> ContextualTemperature:
        args, shape = self._shape(config)
        return ContextualTemperature(*args, **shape)

    def word_terms(self, history: PeriodHistory, output_embeddings: Tensor) -> Tensor:
        return torch.zeros(self.config.vocab_size, device=output_embeddings.device)  # type: ignore[arg-type]

    def pre_activation(self, terms: Tensor, hidden: Tensor) -> Tensor:
        """``μ = hᵀ W_τ1 W_τ2 + u`` ``[..., |V|]``, ``u`` added in place where that keeps the
        dtype (the product is a new tensor no backward reads; under autocast a bf16 product plus
        fp32 ``u`` is fp32). This head's ``u`` is :meth:`word_terms`' zeros, and ``μ + 0`` is
        ``μ`` in every float (``−0 + 0 = +0``, and σ(±0) is the same), so it skips the addition,
        a pass over ``[..., |V|]`` (the gradient of ``u`` is unused)."""
        mu = self.tau.pre_activation(hidden)
        if not self.reads_terms:
            return mu
        u = terms.to(hidden.dtype)
        return mu.add_(u) if torch.result_type(mu, u) == mu.dtype else mu + u

    reads_terms = False   # TemporalTemperatureHead's u is not zero

    def temperature(self, terms: Tensor, hidden: Tensor) -> Tensor:
        """τ ``[..., |V|]`` for ``hidden`` ``[..., d]`` and word terms ``u`` ``[|V|]``."""
        s = self.config.settings
        return bounded_temperature(self.pre_activation(terms, hidden), s.alpha, s.beta, s.norm)

    def add_bias(self, terms: Tensor, hidden: Tensor, logits: Tensor) -> Tensor:
        return logits / self.temperature(terms, hidden).to(logits.dtype)

    def objective(self, terms: Tensor, hidden: Tensor, output_layer: nn.Module,
                  targets: Tensor) -> Tensor:
        """Eq. 7's first term ``Σ_t LS_t · H_t`` in fp32: :func:`pipeline.models.temperature.scaled_nll`
        of ``log_softmax(z / τ)``, computed by :func:`pipeline.models.temperature.temperature_nll`
        (the same floats, fewer passes over ``[..., |V|]``)."""
        s = self.config.settings
        nll = temperature_nll(output_layer(hidden).float(), self.pre_activation(terms, hidden).float(),
                              targets, s.alpha, s.beta, s.norm, s.loss_scale)
        keep = targets != IGNORE   # scaled_nll's masked mean, then the sum over the positions
        mean = torch.where(keep, nll, torch.zeros_like(nll)).sum() / keep.sum().clamp(min=1)
        return mean * _n_targets(targets)


class TemporalTemperatureHead(TemperatureHead):
    """Variant ``temporal-temperature``: eq. 5 with word k's history term ``u_k``
    (:class:`pipeline.models.temperature.TemporalTemperature`, ``docs/temperature.md``)."""

    def _temperature(self, config: BiasConfig) -> ContextualTemperature:
        args, shape = self._shape(config)
        return TemporalTemperature(*args, lstm_hidden=config.settings.lstm_hidden,
                                   dropout=config.dropout, **shape)

    reads_terms = True

    def word_terms(self, history: PeriodHistory, output_embeddings: Tensor) -> Tensor:
        return self.tau.word_terms(history)   # type: ignore[attr-defined]


class ContinuousOutput(TemporalBias):
    """Paper 004's continuous output layer (:class:`pipeline.models.continuous.ContinuousHead`):
    replaces the logits by ``ê · e_k`` (module doc); trained on its subclass's ``loss``."""

    loss: ClassVar[str]

    def __init__(self, config: BiasConfig) -> None:
        super().__init__(config)
        _require(config, "lm_dim", "vocab_size", "target_dim")
        # Zeros until set_targets (or load_model) fills them: the buffer's shape must exist first.
        self.head = ContinuousHead(config.lm_dim,   # type: ignore[arg-type]
                                   torch.zeros(config.vocab_size, config.target_dim))  # type: ignore[arg-type]

    def set_targets(self, vectors: Tensor) -> None:
        """Copy the fixed target vectors ``[|V|, E]`` in (unit-normalised, never trained)."""
        if tuple(vectors.shape) != tuple(self.head.targets.shape):
            raise ValueError(f"target vectors {tuple(vectors.shape)} do not match the head's "
                             f"{tuple(self.head.targets.shape)}")
        with torch.no_grad():
            self.head.targets.copy_(nn.functional.normalize(vectors.float(), dim=-1))

    def word_terms(self, history: PeriodHistory, output_embeddings: Tensor) -> Tensor:
        return torch.zeros(self.config.vocab_size, device=output_embeddings.device)  # type: ignore[arg-type]

    def add_bias(self, terms: Tensor, hidden: Tensor, logits: Tensor) -> Tensor:
        """``ê · e_k`` ``[..., |V|]``: one matrix product per batch, never a loop over words."""
        return (self.head(hidden.float()) @ self.head.targets.T).to(logits.dtype)

    def objective(self, terms: Tensor, hidden: Tensor, output_layer: nn.Module,
                  targets: Tensor) -> Tensor:
        options = {"lambda1": VMF_LAMBDA1} if self.loss == "vmf" else {}
        mean = self.head.loss(hidden.float(), targets, self.loss, **options)
        return mean * _n_targets(targets)


class VMFOutput(ContinuousOutput):
    """Variant ``continuous-vmf``: NLLvMF_reg1 (K&T), λ1 = :data:`VMF_LAMBDA1`."""

    loss = "vmf"


class CosineOutput(ContinuousOutput):
    """Variant ``continuous-cosine``: 1 − cos(ê, e_w)."""

    loss = "cosine"


class MaxMarginOutput(ContinuousOutput):
    """Variant ``continuous-max-margin``: the max-margin loss (Lazaridou et al. 2015, as K&T use it)."""

    loss = "max_margin"
