"""Contextual temperature on the softmax (paper 002) and its temporal extension.

Paper 002 divides the logits element-wise by a temperature that depends on the context *and* the
word, ``P(x_t = k | x_{1..t-1}) = σ(z / τ)_k`` (eq. 4), with (eq. 5)::

    τ = (σ(f(x_{1..t-1}; θ)ᵀ · W_τ1 · W_τ2) + α) / β        W_τ1 ∈ R^{D×Q}, W_τ2 ∈ R^{Q×K}

so that ``τ ∈ [α/β, (1+α)/β]`` (paper: ``(α, β) = (1, 1/2)``, i.e. ``[2, 4]``). In the paper ``σ``
is the *softmax* (eq. 1-2; §3.1 "we scale the temperature using a Softmax function over the
dimension of the vocabulary"; §4 "Instead of using the Softmax function in Equation 5"); its case
studies report temperatures ``2 + 8.34e-5`` etc., which only a softmax over ~10k words gives.
``σ`` can also be read as the logistic sigmoid, word by word. Both are here (``norm``):

=============  ==============================================================================
``norm``       ``s = σ(μ)``, ``μ = hᵀ W_τ1 W_τ2`` (per position, ``[..., |V|]``)
=============  ==============================================================================
``softmax``    the paper: ``s = softmax(μ)`` over the vocabulary, ``Σ_k s_k = 1``, so every word
               shares a fixed budget: ``Σ_k τ_k = (1 + |V|·α) / β`` exactly.
``sigmoid``    per word: ``s_k = sigmoid(μ_k)``, each ``τ_k`` moves freely in the whole range.
=============  ==============================================================================

* :class:`ContextualTemperature` — eq. 5 (``forward(hidden) -> τ``), :func:`apply_temperature`
  the division of eq. 4 / 6.
* :class:`TemporalTemperature` — not in any paper: ``τ_k = (σ(hᵀ W_τ1 W_τ2 + u_k) + α) / β`` with
  ``u_k = Aᵀ LSTM(log f_{i-m,k}, …, log f_{i-1,k})`` read from word k's history exactly as
  :class:`pipeline.models.temporal.FrequencyBias` reads it (derivation: ``docs/temperature.md``).
* :func:`ct_mos_log_probs` — CT-MoS, eq. 6.
* :func:`scaled_nll` — the loss-scaled cross-entropy, eq. 7's first term.
* :func:`temperature_nll` — eq. 4-5 and 7 from the logits and ``μ`` in one autograd node: the
  training objective's fast path, the same bytes as :func:`bounded_temperature`,
  ``log_softmax(z / τ)`` and :func:`scaled_nll` under autograd.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from pipeline.features.history import PeriodHistory
from pipeline.models.temporal import HistoryCache, PeriodLSTM, compact_rows

NORMS = ("softmax", "sigmoid")
LOSS_SCALES = ("mean", "sum", "none")
IGNORE = -100   # target id of a position without a target (HF convention, as in nll.py)


def bounded_temperature(mu: Tensor, alpha: float, beta: float, norm: str = "softmax") -> Tensor:
    """Eq. 5 from the pre-activation ``μ`` ``[..., |V|]``: ``(σ(μ) + α) / β`` in ``[α/β, (1+α)/β]``."""
    if norm == "softmax":
        s = mu.softmax(-1)
    elif norm == "sigmoid":
        s = mu.sigmoid()
    else:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    return (s + alpha) / beta


def apply_temperature(logits: Tensor, tau: Tensor) -> Tensor:
    """``z / τ`` element-wise (eq. 4; eq. 6's ``z_m ⊙ τ``, where ``⊙`` is division)."""
    if tau.shape[-1] != logits.shape[-1]:
        raise ValueError(f"temperature has {tau.shape[-1]} entries per position, logits "
                         f"{logits.shape[-1]}: shapes {tuple(tau.shape)} vs {tuple(logits.shape)}")
    return logits / tau


class ContextualTemperature(nn.Module):
    """Eq. 5: ``τ = (σ(hᵀ W_τ1 W_τ2) + α) / β`` per position and vocabulary entry.

    ``hidden_size`` is the LM's D (``h`` its last hidden state), ``rank`` the paper's Q (280 in
    its PTB runs), ``vocab_size`` K = |V|. ``norm`` is ``σ`` (module docstring).

    Initialisation: ``W_τ1 ~ N(0, 1/D)`` keeps ``hᵀ W_τ1`` at the scale of ``h``; ``W_τ2 ~ N(0,
    init_scale² / Q)`` is small, so ``μ ≈ 0`` and training starts at the temperature of ``μ = 0``:
    with the paper's softmax ``τ_k = (1/K + α)/β ≈ 2`` for every word — where the paper's trained
    temperatures sit (``2 + O(1e-4)``, its Tables 5-6) — and with the sigmoid ``τ = (½ + α)/β = 3``,
    the middle of the range, where σ's slope is largest. ``W_τ2`` is not exactly zero (as LoRA's
    second factor is) so that ``W_τ1`` gets a gradient from the first step.
    """

    def __init__(self, hidden_size: int, vocab_size: int, rank: int, alpha: float = 1.0,
                 beta: float = 0.5, norm: str = "softmax", init_scale: float = 1e-2) -> None:
        super().__init__()
        if min(hidden_size, vocab_size, rank) < 1:
            raise ValueError(f"hidden_size, vocab_size and rank must be >= 1, "
                             f"got {hidden_size}, {vocab_size}, {rank}")
        if not (beta > 0 and alpha >= 0):
            raise ValueError(f"need beta > 0 and alpha >= 0 (τ > 0), got alpha={alpha}, beta={beta}")
        if norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
        self.hidden_size, self.vocab_size, self.rank = hidden_size, vocab_size, rank
        self.alpha, self.beta, self.norm = float(alpha), float(beta), norm
        self.w_tau1 = nn.Parameter(torch.randn(hidden_size, rank) / math.sqrt(hidden_size))
        self.w_tau2 = nn.Parameter(torch.randn(rank, vocab_size) * (init_scale / math.sqrt(rank)))

    @property
    def bounds(self) -> tuple[float, float]:
        """``(α/β, (1+α)/β)``: the range of every ``τ_k``."""
        return self.alpha / self.beta, (1 + self.alpha) / self.beta

    def pre_activation(self, hidden: Tensor) -> Tensor:
        """``μ = hᵀ W_τ1 W_τ2`` ``[..., |V|]`` from ``hidden`` ``[..., D]`` (rank-Q product)."""
        if hidden.shape[-1] != self.hidden_size:
            raise ValueError(f"hidden states have size {hidden.shape[-1]}, "
                             f"the temperature expects {self.hidden_size}")
        return (hidden @ self.w_tau1) @ self.w_tau2

    def forward(self, hidden: Tensor) -> Tensor:
        """τ ``[batch, seq, |V|]`` (any leading dimensions) for ``hidden`` ``[batch, seq, D]``."""
        return bounded_temperature(self.pre_activation(hidden), self.alpha, self.beta, self.norm)

    def scale_logits(self, logits: Tensor, hidden: Tensor) -> Tensor:
        """``z / τ(h)``: the logits that go into the softmax of eq. 4."""
        return apply_temperature(logits, self(hidden))


class TemporalTemperature(ContextualTemperature):
    """``τ_k = (σ(hᵀ W_τ1 W_τ2 + u_k) + α) / β``: eq. 5 plus a per-word term from the history.

    ``u_k = Aᵀ LSTM(log f_{i-m,k}, …, log f_{i-1,k})`` (:meth:`word_terms`, once per history, as
    :class:`pipeline.models.temporal.FrequencyBias` computes its ``B_ik``; same :class:`PeriodLSTM`)
    and :meth:`forward` takes ``u`` ``[|V|]`` so it can come from anywhere. ``u_k > 0`` raises word
    k's temperature (flattens its logit towards 0), ``u_k < 0`` lowers it (sharpens);
    ``docs/temperature.md``. ``A`` starts small (like ``W_τ2``): training starts from eq. 5.
    """

    def __init__(self, hidden_size: int, vocab_size: int, rank: int, lstm_hidden: int = 64,
                 dropout: float = 0.0, alpha: float = 1.0, beta: float = 0.5,
                 norm: str = "softmax", init_scale: float = 1e-2) -> None:
        super().__init__(hidden_size, vocab_size, rank, alpha, beta, norm, init_scale)
        self.lstm = PeriodLSTM(1, lstm_hidden, dropout)
        self.A = nn.Linear(lstm_hidden, 1, bias=False)
        nn.init.normal_(self.A.weight, std=init_scale / math.sqrt(lstm_hidden))
        self._cache = HistoryCache()

    def word_terms(self, history: PeriodHistory) -> Tensor:
        """``u`` ``[|V|]`` from the log frequencies of the previous periods (oldest first)."""
        if history.vocab_size != self.vocab_size:
            raise ValueError(f"history has {history.vocab_size} words, "
                             f"the temperature {self.vocab_size}")
        rows = self._cache.get(history, lambda: compact_rows(history.log_freq.unsqueeze(-1),
                                                             history.observed))
        return self.A(self.lstm.run(rows)).squeeze(-1)

    def forward(self, hidden: Tensor, u: Tensor) -> Tensor:  # type: ignore[override]
        """τ ``[batch, seq, |V|]`` for ``hidden`` ``[batch, seq, D]`` and word terms ``u`` ``[|V|]``."""
        if u.shape != (self.vocab_size,):
            raise ValueError(f"u must have shape ({self.vocab_size},), got {tuple(u.shape)}")
        mu = self.pre_activation(hidden) + u.to(hidden.dtype)
        return bounded_temperature(mu, self.alpha, self.beta, self.norm)

    def scale_logits(self, logits: Tensor, hidden: Tensor, u: Tensor) -> Tensor:  # type: ignore[override]
        return apply_temperature(logits, self(hidden, u))


def ct_mos_log_probs(logits: Tensor, prior_logits: Tensor, tau: Tensor) -> Tensor:
    """Eq. 6, in log space: ``log Σ_m π_m σ(z_m / τ)`` ``[..., |V|]``.

    ``logits`` ``[..., M, |V|]`` are the components' ``z_m``, ``prior_logits`` ``[..., M]`` give
    ``π = softmax(prior_logits)``; one ``τ`` ``[..., |V|]`` is shared by all M components.
    """
    if logits.dim() < 2 or prior_logits.shape != logits.shape[:-1]:
        raise ValueError(f"expected logits [..., M, V] and prior_logits [..., M], "
                         f"got {tuple(logits.shape)} and {tuple(prior_logits.shape)}")
    components = apply_temperature(logits, tau.unsqueeze(-2)).log_softmax(-1)
    return torch.logsumexp(prior_logits.log_softmax(-1).unsqueeze(-1) + components, dim=-2)


def loss_scale(tau: Tensor, mode: str = "mean") -> Tensor | None:
    """Eq. 7's LS factor per position ``[...]`` from ``τ`` ``[..., |V|]``: ``Σ_k τ_k`` (``sum``, the
    equation as printed), ``mean_k τ_k`` (``mean``, what §3.3's text says was used) or ``None``."""
    if mode == "sum":
        return tau.sum(-1)
    if mode == "mean":
        return tau.mean(-1)
    if mode == "none":
        return None
    raise ValueError(f"loss scale must be one of {LOSS_SCALES}, got {mode!r}")


def scaled_nll(log_probs: Tensor, targets: Tensor, tau: Tensor, mode: str = "mean",
               ignore_index: int = IGNORE) -> Tensor:
    """Eq. 7's first term, ``LS · H(ŷ, y)``, averaged over the positions that have a target.

    ``log_probs`` ``[..., |V|]`` are the model's (``log_softmax(z/τ)`` or :func:`ct_mos_log_probs`),
    ``targets`` ``[...]`` the next-token ids already aligned with them (``ignore_index`` = none),
    ``τ`` ``[..., |V|]``. Per position ``t``: ``LS_t · (−log p_t(y_t))`` with ``LS_t`` from
    :func:`loss_scale`; the result is ``Σ_t LS_t H_t / #targets`` (``mode='none'``: the plain
    cross-entropy). The gradient flows through ``LS_t`` too, as eq. 7 is written; with the paper's
    softmax ``σ`` the factor is the constant ``(1/K + α)/β`` (mean) or ``(1 + Kα)/β`` (sum) anyway.
    The AR/TAR/WD terms of eq. 7 are the training loop's, not this module's.
    """
    if targets.shape != log_probs.shape[:-1] or tau.shape != log_probs.shape:
        raise ValueError(f"need log_probs [..., V], targets [...], tau [..., V]; got "
                         f"{tuple(log_probs.shape)}, {tuple(targets.shape)}, {tuple(tau.shape)}")
    keep = targets != ignore_index
    nll = -log_probs.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    scale = loss_scale(tau, mode)
    if scale is not None:
        nll = scale * nll
    return torch.where(keep, nll, torch.zeros_like(nll)).sum() / keep.sum().clamp(min=1)


def temperature_nll(logits: Tensor, mu: Tensor, targets: Tensor, alpha: float, beta: float,
                    norm: str = "softmax", mode: str = "mean", ignore_index: int = IGNORE) -> Tensor:
    """Per position ``LS_t · (−log σ(z_t / τ_t)[y_t])`` ``[...]``, ``τ`` of eq. 5 from ``μ``.

    The fast path of the temperature heads' training loss: the same floats, forward and backward,
    as the reference composition ``τ = bounded_temperature(μ)``, ``lp = (z / τ).log_softmax(-1)``,
    ``LS(τ) · (−lp[y])`` (:func:`scaled_nll` before its masked mean), which autograd runs as ~25
    passes over ``[..., |V|]`` tensors with ~16 of them freshly allocated. :class:`_TemperatureNLL`
    computes the backward with the very kernels and the very rounding order autograd would use
    (each step's equality is written next to it), but fuses the chain ``z / τ`` → ``τ`` → ``σ``
    into a few in-place passes: ~8 passes over ``[..., |V|]`` in backward instead of ~14, and 3
    new tensors instead of ~11. ``tests/test_temperature.py`` checks the bytes against the
    reference. ``logits`` and ``mu`` ``[..., |V|]`` fp32, ``targets`` ``[...]`` (``ignore_index``:
    the loss there is multiplied by nothing here; the caller masks it, as :func:`scaled_nll`).
    """
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    if mode not in LOSS_SCALES:
        raise ValueError(f"loss scale must be one of {LOSS_SCALES}, got {mode!r}")
    if logits.shape != mu.shape or targets.shape != logits.shape[:-1]:
        raise ValueError(f"need logits [..., V], mu [..., V], targets [...]; got "
                         f"{tuple(logits.shape)}, {tuple(mu.shape)}, {tuple(targets.shape)}")
    if logits.dtype != torch.float32 or mu.dtype != torch.float32:
        raise ValueError(f"logits and mu must be float32, got {logits.dtype} and {mu.dtype}")
    index = targets.clamp(min=0).unsqueeze(-1)
    return _TemperatureNLL.apply(logits, mu, index, float(alpha), float(beta), norm, mode)


def _power_of_two_at_most_one(beta: float) -> bool:
    """``β = 2^-j``, ``j ≥ 0``: then ``x / β`` is ``x · (1/β)`` exactly and ``round(a + b) / β`` is
    ``round(a/β + b/β)`` (scaling by ``2^j`` commutes with rounding; ``1/β`` does not underflow)."""
    mantissa, _ = math.frexp(beta)
    return mantissa == 0.5 and beta <= 1.0


class _TemperatureNLL(torch.autograd.Function):
    """:func:`temperature_nll`'s node. Forward: the reference's ops, in place where the reference
    allocated a tensor only to read it once. Backward, with ``g`` the incoming gradient ``[...]``,
    written as autograd's formulas for each reference op (``torch/csrc/autograd/FunctionsManual.cpp``,
    ``tools/autograd/derivatives.yaml``) so that every float is the same:

    * ``LS · nll``: ``∂nll = g · LS``, ``∂LS = g · nll``; ``nll = −lp[y]``: ``∂lp`` is zero but
      ``−∂nll`` at ``y`` (gather's backward: ``zeros.scatter_add_``);
    * ``log_softmax``: ``∂y = _log_softmax_backward_data(∂lp, lp)`` (the same kernel: its ``exp``
      is not ``torch.exp``'s, bit for bit), written over ``∂lp`` (the kernel reads a row's sum
      before it writes the row);
    * ``y = z / τ``: ``∂z = ∂y / τ`` and ``∂τ = −∂y · ((z / τ) / τ)``, where ``z / τ`` is ``y``;
      plus the loss scale's ``∂τ``: ``mean``'s ``∂LS / |V|`` (``sum``'s ``∂LS``) broadcast over
      the row. ``m + (−a·q)`` is ``m − a·q`` exactly (IEEE), so one in-place ``sub``;
    * ``τ = (s + α) / β``: ``∂s = ∂τ / β``; ``s = softmax(μ)``: ``_softmax_backward_data(∂s, s)``,
      ``s = sigmoid(μ)``: ``sigmoid_backward(∂s, s)`` (the reference's kernels), in place.

    With ``β = 2^-j`` (the defaults ½ and 1) the division by β folds into the neighbouring pass
    exactly (:func:`_power_of_two_at_most_one`): ``τ = s·(1/β) + α/β`` and ``∂s = m/β − q·(1/β)``.
    The backward reuses ``y``'s buffer, so it runs once (no ``retain_graph``).
    """

    @staticmethod
    def forward(ctx, logits: Tensor, mu: Tensor, index: Tensor, alpha: float,  # type: ignore[override]
                beta: float, norm: str, mode: str) -> Tensor:
        fold = _power_of_two_at_most_one(beta)
        with torch.autocast(logits.device.type, enabled=False):
            s = mu.softmax(-1) if norm == "softmax" else mu.sigmoid()
            tau = (torch.add(s.new_tensor(alpha / beta), s, alpha=1 / beta) if fold
                   else (s + alpha).div_(beta))
            y = logits / tau
            lp = y.log_softmax(-1)
            nll = -lp.gather(-1, index).squeeze(-1)
            scale = loss_scale(tau, mode)
            out = nll if scale is None else scale * nll
        ctx.save_for_backward(s, tau, y, lp, index, nll, scale)
        ctx.beta, ctx.norm, ctx.mode, ctx.fold, ctx.done = beta, norm, mode, fold, False
        return out

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor | None, ...]:  # type: ignore[override]
        if ctx.done:
            raise RuntimeError("temperature_nll's backward reuses its saved buffers and runs once "
                               "(no retain_graph)")
        ctx.done = True
        s, tau, y, lp, index, nll, scale = ctx.saved_tensors
        beta = ctx.beta
        with torch.autocast(grad.device.type, enabled=False):
            d_nll = grad if scale is None else grad * scale
            d_y = torch.zeros_like(lp).scatter_add_(-1, index, (-d_nll).unsqueeze(-1))
            torch.ops.aten._log_softmax_backward_data.out(d_y, lp, -1, lp.dtype, out=d_y)
            d_logits = d_y / tau if ctx.needs_input_grad[0] else None
            d_mu = None
            if ctx.needs_input_grad[1]:
                d_s = y.div_(tau).mul_(d_y)            # q = ∂y · ((z/τ)/τ); ∂τ = m − q
                del d_y
                if ctx.mode == "none":                 # ∂τ = −q; (−q)/β = q/(−β) exactly
                    d_s.div_(-beta)
                else:
                    m = grad * nll
                    if ctx.mode == "mean":
                        m = m / tau.shape[-1]
                    m = m.unsqueeze(-1)
                    if ctx.fold:
                        torch.sub(m / beta, d_s, alpha=1 / beta, out=d_s)
                    else:
                        torch.sub(m, d_s, out=d_s).div_(beta)
                if ctx.norm == "softmax":
                    d_mu = torch.ops.aten._softmax_backward_data.out(d_s, s, -1, s.dtype,
                                                                     grad_input=d_s)
                else:
                    d_mu = torch.ops.aten.sigmoid_backward.grad_input(d_s, s, grad_input=d_s)
        return d_logits, d_mu, None, None, None, None, None
