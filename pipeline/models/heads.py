"""Output-layer variants as registry modules: contextual temperature (paper 002) and continuous
output (paper 004), behind the same interface as the temporal biases
(:class:`pipeline.models.temporal.TemporalBias`), so training, scoring, generation, the forecast
and the long-tail metrics serve them unchanged (issue 18 §1-2).

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

from dataclasses import dataclass
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from pipeline.features.history import PeriodHistory
from pipeline.models.continuous import IGNORE, ContinuousHead
from pipeline.models.temperature import (ContextualTemperature, TemporalTemperature,
                                         bounded_temperature, scaled_nll)
from pipeline.models.temporal import BiasConfig, TemporalBias

VMF_LAMBDA1 = 0.02   # NLLvMF_reg1's λ1, K&T's setting: keeps ‖ê‖ (κ) from growing without bound


@dataclass(frozen=True)
class TemperatureShape:
    """The temperature heads' settings (params ``train.temperature_*``; paper 002 eq. 5, 7)."""

    rank: int = 32
    alpha: float = 1.0
    beta: float = 0.5
    norm: str = "softmax"
    loss_scale: str = "mean"

    def bias_fields(self) -> dict[str, Any]:
        """The :class:`BiasConfig` fields these settings fill."""
        return {"rank": self.rank, "tau_alpha": self.alpha, "tau_beta": self.beta,
                "norm": self.norm, "loss_scale": self.loss_scale}


def _n_targets(targets: Tensor) -> Tensor:
    return (targets != IGNORE).sum()


def _require(config: BiasConfig, *names: str) -> None:
    missing = [n for n in names if getattr(config, n) is None]
    if missing:
        raise ValueError(f"the {config.kind} module needs {', '.join(missing)} in its BiasConfig")


class TemperatureHead(TemporalBias):
    """Eq. 5's temperature on the logits; ``temporal-temperature`` adds the history term ``u``.

    :meth:`word_terms` is ``u`` ``[|V|]`` (zeros for ``temperature``: eq. 5 exactly, since adding
    0 changes no float), so the per-history part runs once per batch like every bias's.
    """

    def __init__(self, config: BiasConfig) -> None:
        super().__init__(config)
        _require(config, "lm_dim", "vocab_size", "rank")
        args = (config.lm_dim, config.vocab_size, config.rank)
        shape = dict(alpha=config.tau_alpha, beta=config.tau_beta, norm=config.norm)
        self.temporal = config.kind == "temporal-temperature"
        self.tau: ContextualTemperature = (
            TemporalTemperature(*args, lstm_hidden=config.lstm_hidden, dropout=config.dropout,
                                **shape)
            if self.temporal else ContextualTemperature(*args, **shape))

    def word_terms(self, history: PeriodHistory, output_embeddings: Tensor) -> Tensor:
        if self.temporal:
            return self.tau.word_terms(history)   # type: ignore[union-attr]
        return torch.zeros(self.config.vocab_size, device=output_embeddings.device)  # type: ignore[arg-type]

    def temperature(self, terms: Tensor, hidden: Tensor) -> Tensor:
        """τ ``[..., |V|]`` for ``hidden`` ``[..., d]`` and word terms ``u`` ``[|V|]``."""
        mu = self.tau.pre_activation(hidden) + terms.to(hidden.dtype)
        return bounded_temperature(mu, self.config.tau_alpha, self.config.tau_beta, self.config.norm)

    def add_bias(self, terms: Tensor, hidden: Tensor, logits: Tensor) -> Tensor:
        return logits / self.temperature(terms, hidden).to(logits.dtype)

    own_objective: ClassVar[bool] = True

    def objective(self, terms: Tensor, hidden: Tensor, output_layer: nn.Module,
                  targets: Tensor) -> Tensor:
        """Eq. 7's first term ``Σ_t LS_t · H_t`` (:func:`pipeline.models.temperature.scaled_nll`)
        in fp32."""
        tau = self.temperature(terms, hidden).float()
        log_probs = (output_layer(hidden).float() / tau).log_softmax(-1)
        return scaled_nll(log_probs, targets, tau, self.config.loss_scale) * _n_targets(targets)


class ContinuousOutput(TemporalBias):
    """Paper 004's continuous output layer (:class:`pipeline.models.continuous.ContinuousHead`):
    replaces the logits by ``ê · e_k`` (module doc); trained on the loss its variant names."""

    LOSS_OF_KIND: ClassVar[dict[str, str]] = {"continuous-vmf": "vmf",
                                              "continuous-cosine": "cosine",
                                              "continuous-max-margin": "max_margin"}

    def __init__(self, config: BiasConfig) -> None:
        super().__init__(config)
        _require(config, "lm_dim", "vocab_size", "target_dim")
        self.loss = self.LOSS_OF_KIND[config.kind]
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

    own_objective: ClassVar[bool] = True

    def objective(self, terms: Tensor, hidden: Tensor, output_layer: nn.Module,
                  targets: Tensor) -> Tensor:
        options = {"lambda1": VMF_LAMBDA1} if self.loss == "vmf" else {}
        mean = self.head.loss(hidden.float(), targets, self.loss, **options)
        return mean * _n_targets(targets)
