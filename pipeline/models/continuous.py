"""Continuous output layer (paper 004; Kumar & Tsvetkov 2019, "Von Mises-Fisher Loss for Training
Sequence to Sequence Models with Continuous Outputs", ICLR); :mod:`pipeline.models.heads` wires
it into the future LM.

Instead of a |V|-way softmax the LM predicts a *point* ``ê = W h_t + b`` ``[..., E]`` in a fixed
target embedding space whose vocabulary rows ``e_k`` ``[|V|, E]`` are unit-normalised and never
trained; decoding is the nearest neighbour of ``ê`` by cosine. Losses (K&T §3, empirical losses
and NLLvMF; equation numbers of the ICLR version not re-checked here, the formulas are):

=======================  =======================================================================
:func:`cosine_loss`      ``1 − cos(ê, e_w)``
:func:`max_margin_loss`  Lazaridou et al. (2015) as K&T use it: ``max(0, γ + cos(ê, e_w') −
                         cos(ê, e_w))``, ``w'`` the most violating word of the whole vocabulary
:func:`vmf_nll`          ``NLLvMF = −log C_m(‖ê‖) − ê·e_w`` with ``C_m(κ) = κ^{m/2−1} /
                         ((2π)^{m/2} I_{m/2−1}(κ))``; ``NLLvMF_reg1`` adds ``λ1 ‖ê‖``,
                         ``NLLvMF_reg2`` is ``−log C_m(‖ê‖) − λ2 ê·e_w`` (K&T: λ1 0.02, λ2 0.1)
=======================  =======================================================================

``log C_m``: the Bessel function ``I_{m/2−1}(κ)`` under- or overflows for m in the hundreds, so
K&T train with an approximation (:func:`log_cmk_approx`) whose derivative is the Ruiz-Antolín &
Segura (2016) bound on the ratio ``−∂/∂κ log C_m(κ) = I_{m/2}(κ) / I_{m/2−1}(κ)``:
``κ / (m/2 − 1 + √((m/2 + 1)² + κ²))``. :func:`log_cmk_exact` is the float64 reference
(``scipy.special.ive``, CPU round trip; for tests and small m). All losses skip positions whose
target is :data:`IGNORE` and average over the rest.

Target space. :func:`frozen_input_embeddings` takes (a) the base LM's own input embeddings, per
BPE token: no new dependency or stage, and the same token vocabulary as the softmax variants,
scoring and ``pipeline/evaluation/longtail.py`` (ranked token ids at whole-word targets), so
:func:`nearest_neighbours` feeds the long-tail metrics as a softmax's top-k does. Paper 004
used (b) word2vec trained per corpus (word level, 50/200 dims); that needs gensim (not a
dependency), a training stage over the training periods only, and a word vocabulary that does not
match our token-level metrics: later, if (a) turns out too weak. Caveat of (a): with the offline
default (GPT-2 trained from scratch) the initial embeddings are random, so the targets must come
from a trained checkpoint (the Baseline of the same training periods) or pretrained ``gpt2``
(paper profile).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

IGNORE = -100      # target id of a position without a target (HF convention, as in nll.py)
KAPPA_MIN = 1e-6   # ‖ê‖ is clamped here: the norm's gradient is undefined at 0
LOSSES = ("vmf", "cosine", "max_margin")


def frozen_input_embeddings(model: nn.Module) -> Tensor:
    """The target space (a) of the module doc: ``model.get_input_embeddings().weight``, detached
    and *copied* ``[|V|, E]`` (GPT-2 ties it to ``lm_head``; a view would move while the body
    trains, and the target space must stay fixed)."""
    return model.get_input_embeddings().weight.detach().clone()


def _check_order(m: int) -> None:
    if m < 2:
        raise ValueError(f"the vMF needs an embedding dimension m >= 2, got {m}")


def log_cmk_approx(kappa: Tensor, m: int) -> Tensor:
    """K&T's approximation of ``log C_m(κ)``: ``−√((ν+1)² + κ²) + (ν−1) log(ν−1 + √((ν+1)² + κ²))
    + c_m`` with ``ν = m/2``. Its derivative is exactly ``−κ / (ν−1 + √((ν+1)² + κ²))`` (the
    bound on ``I_ν/I_{ν−1}`` K&T's backward uses), so autograd gives their gradient. K&T drop the
    constant; ``c_m`` here makes it exact at ``κ = 0`` (``C_m(0) = Γ(m/2) / (2π^{m/2})``), which
    changes no gradient. Against :func:`log_cmk_exact` for κ in [1, 100]: gradient and value within
    1 % (relative) for m >= 16, 2.5 % for m = 4 (``tests/test_continuous.py``)."""
    _check_order(m)
    nu = m / 2
    root = torch.sqrt((nu + 1) ** 2 + kappa * kappa)
    at_zero = -(nu + 1) + (nu - 1) * math.log(2 * nu)        # the same expression at κ = 0
    c = math.lgamma(nu) - math.log(2) - nu * math.log(math.pi) - at_zero
    return -root + (nu - 1) * torch.log(nu - 1 + root) + c


class _LogCmkExact(torch.autograd.Function):
    """``log C_m(κ)`` in float64 via ``ive`` (``log I_v(κ) = log ive(v, κ) + κ``); backward
    ``∂/∂κ log C_m(κ) = −I_{m/2}(κ) / I_{m/2−1}(κ)``
    (a ratio of two ``ive``: the ``e^κ`` cancel)."""

    @staticmethod
    def forward(ctx, kappa: Tensor, m: int) -> Tensor:  # type: ignore[override]
        import numpy as np
        from scipy.special import ive

        k = kappa.detach().cpu().double().numpy()
        v = m / 2 - 1
        lower, upper = ive(v, k), ive(m / 2, k)
        if not (np.all(lower > 0) and np.all(np.isfinite(lower))):
            raise ValueError(f"I_{v}(κ) underflows in float64 for m = {m} and some κ in "
                             f"[{k.min():.3g}, {k.max():.3g}]: use log_cmk_approx")
        value = v * np.log(k) - (m / 2) * math.log(2 * math.pi) - (np.log(lower) + k)
        ctx.save_for_backward(torch.from_numpy(-upper / lower).to(kappa))
        return torch.from_numpy(value).to(kappa)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:  # type: ignore[override]
        (slope,) = ctx.saved_tensors
        return grad * slope, None


def log_cmk_exact(kappa: Tensor, m: int) -> Tensor:
    """Exact ``log C_m(κ) = (m/2−1) log κ − (m/2) log 2π − log I_{m/2−1}(κ)``, float64 on the CPU
    (``scipy.special.ive``), differentiable; raises where ``I`` underflows (large m, small κ)."""
    _check_order(m)
    return _LogCmkExact.apply(kappa, m)


def _kept(pred: Tensor, targets: Tensor, ignore_index: int) -> tuple[Tensor, Tensor]:
    """``pred`` rows ``[N, E]`` and target ids ``[N]`` of the positions that have a target."""
    if pred.shape[:-1] != targets.shape:
        raise ValueError(f"pred {tuple(pred.shape)} does not match targets {tuple(targets.shape)}")
    keep = targets.reshape(-1) != ignore_index
    return pred.reshape(-1, pred.shape[-1])[keep], targets.reshape(-1)[keep]


def _mean(loss: Tensor, pred: Tensor) -> Tensor:
    return loss.mean() if loss.numel() else pred.sum() * 0.0   # no target: 0, still in the graph


def cosine_loss(pred: Tensor, targets: Tensor, targets_unit: Tensor,
                ignore_index: int = IGNORE) -> Tensor:
    """K&T's cosine loss ``1 − cos(ê, e_w)``, mean over positions with a target. ``pred``
    ``[..., E]``, ``targets`` ``[...]`` ids, ``targets_unit`` ``[|V|, E]`` unit rows."""
    p, t = _kept(pred, targets, ignore_index)
    return _mean(1 - F.cosine_similarity(p, targets_unit[t], dim=-1), pred)


def max_margin_loss(pred: Tensor, targets: Tensor, targets_unit: Tensor, margin: float = 0.5,
                    ignore_index: int = IGNORE) -> Tensor:
    """Lazaridou et al. (2015) / K&T: ``max(0, γ + cos(ê, e_w') − cos(ê, e_w))`` with ``w'`` the
    most violating word ``argmax_{w' ≠ w} cos(ê, e_w')`` (one ``[N, |V|]`` product); γ =
    ``margin`` (K&T tune it; 0.5 is only a default)."""
    p, t = _kept(pred, targets, ignore_index)
    cos = F.normalize(p, dim=-1) @ targets_unit.T
    pos = cos.gather(-1, t.unsqueeze(-1)).squeeze(-1)
    neg = cos.scatter(-1, t.unsqueeze(-1), float("-inf")).amax(-1)
    return _mean(F.relu(margin + neg - pos), pred)


def vmf_nll(pred: Tensor, targets: Tensor, targets_unit: Tensor, lambda1: float = 0.0,
            lambda2: float = 1.0, exact: bool = False, ignore_index: int = IGNORE) -> Tensor:
    """K&T's ``NLLvMF(ê; e_w) = −log C_m(‖ê‖) − λ2 ê·e_w + λ1 ‖ê‖``, mean over positions with a
    target. ``λ1 = 0, λ2 = 1``: plain NLLvMF (the vMF's negative log density at ``e_w`` with mean
    direction ``ê/‖ê‖`` and concentration ``κ = ‖ê‖``); ``λ1 > 0``: NLLvMF_reg1; ``λ2 < 1``:
    NLLvMF_reg2. ``m = E``. ``exact``: :func:`log_cmk_exact` instead of K&T's approximation."""
    p, t = _kept(pred, targets, ignore_index)
    m = pred.shape[-1]
    kappa = p.norm(dim=-1).clamp(min=KAPPA_MIN)
    log_c = log_cmk_exact(kappa, m) if exact else log_cmk_approx(kappa, m)
    dot = (p * targets_unit[t]).sum(-1)
    return _mean(-log_c - lambda2 * dot + lambda1 * kappa, pred)


def nearest_neighbours(pred: Tensor, targets_unit: Tensor, k: int = 1) -> Tensor:
    """Ids ``[..., k]`` of the ``k`` target vectors closest to ``pred`` ``[..., E]`` by cosine,
    best first: one ``[N, |V|]`` product (``pred`` normalised, ``targets_unit`` unit rows) and
    ``topk``."""
    if not 1 <= k <= targets_unit.shape[0]:
        raise ValueError(f"k must be in [1, {targets_unit.shape[0]}], got {k}")
    return (F.normalize(pred, dim=-1) @ targets_unit.T).topk(k, dim=-1).indices


def vmf_log_probs(pred: Tensor, targets_unit: Tensor) -> Tensor:
    """vMF-normalised over the vocabulary — NOT a softmax LM's distribution: ``log p(k) = ê·e_k −
    logsumexp_j ê·e_j`` ``[..., |V|]``, the vMF densities ``C_m(‖ê‖) exp(ê·e_k)`` at the |V| unit
    target vectors renormalised to sum to 1 (``C_m`` cancels). A perplexity from it is not
    comparable with the softmax variants' PPL (the model was trained on a density over the
    sphere, not on these |V| probabilities)."""
    return (pred @ targets_unit.T).log_softmax(-1)


class ContinuousHead(nn.Module):
    """``ê = W h + b`` ``[..., E]`` from the LM's last hidden state ``h`` ``[..., D]`` (a linear
    projection, as K&T and paper 004), with the fixed target vectors as a buffer ``targets``
    ``[|V|, E]`` (rows unit-normalised; saved with the state dict, never trained)."""

    def __init__(self, hidden_size: int, target_vectors: Tensor, bias: bool = True) -> None:
        super().__init__()
        if target_vectors.dim() != 2 or min(target_vectors.shape) < 1 or hidden_size < 1:
            raise ValueError(f"need hidden_size >= 1 and target vectors [|V|, E], got "
                             f"{hidden_size} and {tuple(target_vectors.shape)}")
        self.hidden_size = hidden_size
        self.vocab_size, self.embedding_dim = target_vectors.shape
        self.proj = nn.Linear(hidden_size, self.embedding_dim, bias=bias)
        self.register_buffer("targets", F.normalize(target_vectors.detach().float(), dim=-1))

    def forward(self, hidden: Tensor) -> Tensor:
        """``ê`` ``[batch, seq, E]`` (any leading dimensions) for ``hidden`` ``[batch, seq, D]``."""
        if hidden.shape[-1] != self.hidden_size:
            raise ValueError(f"hidden states have size {hidden.shape[-1]}, "
                             f"the head expects {self.hidden_size}")
        return self.proj(hidden)

    def loss(self, hidden: Tensor, targets: Tensor, kind: str = "vmf", **options: float) -> Tensor:
        """``kind`` in :data:`LOSSES` on ``self(hidden)``; ``options`` go to that loss
        (``lambda1``, ``lambda2``, ``exact`` / ``margin`` / ``ignore_index``)."""
        fn = {"vmf": vmf_nll, "cosine": cosine_loss, "max_margin": max_margin_loss}.get(kind)
        if fn is None:
            raise ValueError(f"loss must be one of {LOSSES}, got {kind!r}")
        return fn(self(hidden), targets, self.targets, **options)

    def nearest(self, hidden: Tensor, k: int = 1) -> Tensor:
        """Decoded ids ``[..., k]``: :func:`nearest_neighbours` of ``self(hidden)``."""
        return nearest_neighbours(self(hidden), self.targets, k)

    def log_probs(self, hidden: Tensor) -> Tensor:
        """:func:`vmf_log_probs` of ``self(hidden)`` (vMF-normalised over the vocabulary)."""
        return vmf_log_probs(self(hidden), self.targets)
