"""Contextual / temporal temperature (paper 002 eq. 5-7): range, τ ≡ 1 = the base softmax, gradients,
eq. 7's loss scaling and CT-MoS against hand formulas, shapes and errors."""

from __future__ import annotations

import math

import pytest
import torch

from pipeline.features.history import PeriodHistory
from pipeline.models.temperature import (
    ContextualTemperature,
    TemporalTemperature,
    apply_temperature,
    bounded_temperature,
    ct_mos_log_probs,
    loss_scale,
    scaled_nll,
    temperature_nll,
)

B, S, D, V, R, M = 2, 3, 8, 11, 4, 3
NORMS = ("softmax", "sigmoid")


def history(seed: int = 0, window: int = 3) -> PeriodHistory:
    g = torch.Generator().manual_seed(seed)
    return PeriodHistory(period="2020", periods=tuple(str(y) for y in range(2020 - window, 2020)),
                         log_freq=-8 - 3 * torch.rand(V, window, generator=g))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.5), (0.2, 3.0)])
def test_tau_lies_in_the_eq5_range(norm: str, alpha: float, beta: float) -> None:
    torch.manual_seed(0)
    ct = ContextualTemperature(D, V, R, alpha=alpha, beta=beta, norm=norm)
    with torch.no_grad():
        ct.w_tau2.normal_()                                    # far from the init, wide spread
    with torch.no_grad():
        tau = ct(10 * torch.randn(B, S, D))
    lo, hi = ct.bounds
    assert (lo, hi) == (alpha / beta, (1 + alpha) / beta)
    assert tau.shape == (B, S, V)
    assert bool((tau >= lo).all()) and bool((tau <= hi).all())
    assert float(tau.max() - tau.min()) > 0.01 * (hi - lo)     # not a constant


@pytest.mark.parametrize("norm", NORMS)
def test_extreme_pre_activations_reach_both_ends(norm: str) -> None:
    mu = torch.tensor([[60.0, -60.0, -60.0, -60.0]])
    tau = bounded_temperature(mu, 1.0, 0.5, norm)
    assert tau[0, 0].item() == pytest.approx(4.0, abs=1e-6)   # (1 + α) / β
    assert torch.allclose(tau[0, 1:], torch.full((3,), 2.0), atol=1e-6)   # α / β


def test_paper_softmax_shares_a_fixed_budget_and_starts_near_two() -> None:
    torch.manual_seed(1)
    ct = ContextualTemperature(D, V, R)                        # paper: softmax, (α, β) = (1, 1/2)
    tau = ct(torch.randn(B, S, D))
    assert torch.allclose(tau.sum(-1), torch.full((B, S), (1 + V * 1.0) / 0.5))
    assert torch.allclose(tau, torch.full_like(tau, (1 / V + 1) / 0.5), atol=1e-2)   # init ≈ μ = 0
    sig = ContextualTemperature(D, V, R, norm="sigmoid")
    assert torch.allclose(sig(torch.randn(B, S, D)), torch.full((B, S, V), 3.0), atol=5e-2)


@pytest.mark.parametrize("norm,alpha,beta,vocab", [("sigmoid", 0.5, 1.0, V), ("softmax", 0.75, 1.0, 4)])
def test_tau_identically_one_reproduces_the_base_softmax_exactly(norm, alpha, beta, vocab) -> None:
    # μ = 0: sigmoid(0) = 1/2 and softmax(0) = 1/4 are exact in binary, so (s + α)/β is exactly 1.
    ct = ContextualTemperature(D, vocab, R, alpha=alpha, beta=beta, norm=norm)
    with torch.no_grad():
        ct.w_tau2.zero_()
    hidden, logits = torch.randn(B, S, D), 5 * torch.randn(B, S, vocab)
    tau = ct(hidden)
    assert torch.equal(tau, torch.ones_like(tau))
    scaled = ct.scale_logits(logits, hidden)
    assert torch.equal(scaled, logits)
    assert torch.equal(scaled.softmax(-1), logits.softmax(-1))
    assert torch.equal(scaled.log_softmax(-1), logits.log_softmax(-1))


def test_dividing_by_ones_is_bit_identical() -> None:
    logits = 7 * torch.randn(B, S, V)
    assert torch.equal(apply_temperature(logits, torch.ones(B, S, V)).softmax(-1), logits.softmax(-1))


@pytest.mark.parametrize("norm", NORMS)
def test_gradients_reach_both_factors_from_the_default_init(norm: str) -> None:
    torch.manual_seed(2)
    ct = ContextualTemperature(D, V, R, norm=norm)
    logits, targets = torch.randn(B, S, V), torch.randint(V, (B, S))
    tau = ct(torch.randn(B, S, D))
    scaled_nll(apply_temperature(logits, tau).log_softmax(-1), targets, tau).backward()
    for p in (ct.w_tau1, ct.w_tau2):
        assert p.grad is not None and float(p.grad.abs().sum()) > 0


@pytest.mark.parametrize("norm", NORMS)
def test_temporal_temperature_gradients_reach_u_and_the_lstm(norm: str) -> None:
    torch.manual_seed(3)
    tt = TemporalTemperature(D, V, R, lstm_hidden=5, norm=norm)
    hist = history()
    u = tt.word_terms(hist)
    assert u.shape == (V,)
    u.retain_grad()
    logits, targets = torch.randn(B, S, V), torch.randint(V, (B, S))
    tau = tt(torch.randn(B, S, D), u)
    lo, hi = tt.bounds
    assert tau.shape == (B, S, V) and bool((tau >= lo).all()) and bool((tau <= hi).all())
    scaled_nll(apply_temperature(logits, tau).log_softmax(-1), targets, tau).backward()
    assert u.grad is not None and float(u.grad.abs().sum()) > 0
    for p in (tt.w_tau1, tt.w_tau2, tt.A.weight, *tt.lstm.parameters()):
        assert p.grad is not None and float(p.grad.abs().sum()) > 0


def test_temporal_term_adds_to_the_pre_activation() -> None:
    torch.manual_seed(4)
    tt = TemporalTemperature(D, V, R, norm="sigmoid")
    hidden, u = torch.randn(B, S, D), torch.randn(V)
    expected = (torch.sigmoid(hidden @ tt.w_tau1 @ tt.w_tau2 + u) + 1.0) / 0.5
    assert torch.allclose(tt(hidden, u), expected)
    # u_k > 0 raises word k's temperature, u_k < 0 lowers it (sigmoid: word by word)
    k = torch.zeros(V)
    k[0], k[1] = 3.0, -3.0
    base, moved = tt(hidden, torch.zeros(V)), tt(hidden, k)
    assert bool((moved[..., 0] > base[..., 0]).all()) and bool((moved[..., 1] < base[..., 1]).all())
    assert torch.equal(moved[..., 2:], base[..., 2:])


def test_temporal_word_terms_match_frequency_bias_recipe() -> None:
    torch.manual_seed(5)
    tt = TemporalTemperature(D, V, R, lstm_hidden=5)
    hist = history()
    out, _ = tt.lstm.lstm(hist.log_freq.unsqueeze(-1))          # nn.LSTM over each word's periods
    assert torch.allclose(tt.word_terms(hist), tt.A(out[:, -1]).squeeze(-1), atol=1e-6)


def test_loss_scaling_against_a_hand_formula() -> None:
    logits = torch.tensor([[[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]]])           # [1, 2, 3]
    tau = torch.tensor([[[2.0, 3.0, 4.0], [2.5, 2.0, 3.5]]])
    targets = torch.tensor([[1, 2]])
    log_p = apply_temperature(logits, tau).log_softmax(-1)

    def hand(scale) -> float:
        total = 0.0
        for t in range(2):
            z = [logits[0, t, k].item() / tau[0, t, k].item() for k in range(3)]
            h = -(z[targets[0, t]] - math.log(sum(math.exp(x) for x in z)))
            total += scale([tau[0, t, k].item() for k in range(3)]) * h
        return total / 2

    assert scaled_nll(log_p, targets, tau, "sum").item() == pytest.approx(hand(sum), rel=1e-6)
    assert scaled_nll(log_p, targets, tau, "mean").item() == pytest.approx(
        hand(lambda ts: sum(ts) / 3), rel=1e-6)
    assert scaled_nll(log_p, targets, tau, "none").item() == pytest.approx(hand(lambda ts: 1), rel=1e-6)
    # ignored positions drop out of the sum and of the count
    masked = torch.tensor([[1, -100]])
    first = hand(sum) * 2 - (sum(tau[0, 1].tolist()) * -log_p[0, 1, 2].item())
    assert scaled_nll(log_p, masked, tau, "sum").item() == pytest.approx(first, rel=1e-6)
    assert torch.equal(loss_scale(tau, "sum"), tau.sum(-1)) and loss_scale(tau, "none") is None


def test_ct_mos_against_a_direct_formula_and_m1_is_plain_softmax() -> None:
    torch.manual_seed(6)
    z, prior = torch.randn(B, S, M, V), torch.randn(B, S, M)
    tau = bounded_temperature(torch.randn(B, S, V), 1.0, 0.5, "sigmoid")
    pi = prior.softmax(-1)
    direct = sum(pi[..., m, None] * (z[..., m, :] / tau).softmax(-1) for m in range(M))
    log_p = ct_mos_log_probs(z, prior, tau)
    assert log_p.shape == (B, S, V)
    assert torch.allclose(log_p.exp(), direct, atol=1e-6)
    assert torch.allclose(log_p.exp().sum(-1), torch.ones(B, S))
    one = ct_mos_log_probs(z[..., :1, :], prior[..., :1], tau)
    assert torch.allclose(one, (z[..., 0, :] / tau).log_softmax(-1), atol=1e-6)


def reference_loss(logits, mu, targets, alpha, beta, norm, mode):
    """The straightforward composition under autograd: eq. 5, ``log_softmax(z / τ)``, eq. 7."""
    tau = bounded_temperature(mu, alpha, beta, norm)
    return scaled_nll(apply_temperature(logits, tau).log_softmax(-1), targets, tau, mode)


def fast_loss(logits, mu, targets, alpha, beta, norm, mode):
    """:func:`temperature_nll` and :func:`scaled_nll`'s masked mean (the heads' objective)."""
    nll = temperature_nll(logits, mu, targets, alpha, beta, norm, mode)
    keep = targets != -100
    return torch.where(keep, nll, torch.zeros_like(nll)).sum() / keep.sum().clamp(min=1)


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().contiguous().view(torch.int32)   # tells -0.0 from 0.0, NaN payloads apart


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("mode", ["mean", "sum", "none"])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.5), (0.5, 1.0), (0.7, 0.3), (0.2, 3.0), (0.0, 0.25)])
def test_temperature_nll_equals_the_reference_bit_for_bit(alpha, beta, norm, mode, threads) -> None:
    """The fast path (one autograd node, analytic backward, in-place passes, β = 2^-j folded)
    gives the very floats of the reference: loss, ∂z and ∂μ, with ignored positions, a vocabulary
    wider than a vector (body + tail) and logits/pre-activations far from the init."""
    g = torch.Generator().manual_seed(7)
    vocab = 301
    logits, mu = 6 * torch.randn(3, 5, vocab, generator=g), 4 * torch.randn(3, 5, vocab, generator=g)
    targets = torch.randint(vocab, (3, 5), generator=g)
    targets[0, -2:] = -100
    targets[2, 0] = -100
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        results = []
        for loss_fn in (reference_loss, fast_loss):
            z, m = logits.clone().requires_grad_(), mu.clone().requires_grad_()
            loss = loss_fn(z, m, targets, alpha, beta, norm, mode)
            (1.7 * loss).backward()
            results.append((loss, z.grad, m.grad))
    finally:
        torch.set_num_threads(before)
    for ref, fast in zip(*results):
        assert torch.equal(bits(ref), bits(fast))


def test_temperature_nll_gradient_matches_finite_differences() -> None:
    """Independent of the reference: float64 central differences of the same formula (the fast
    path runs in fp32; its gradient agrees to fp32 precision)."""
    g = torch.Generator().manual_seed(8)
    logits, mu = torch.randn(2, 3, 7, generator=g), torch.randn(2, 3, 7, generator=g)
    targets = torch.tensor([[1, 6, -100], [0, 3, 2]])
    z, m = logits.clone().requires_grad_(), mu.clone().requires_grad_()
    fast_loss(z, m, targets, 1.0, 0.5, "softmax", "mean").backward()
    z64, m64 = logits.double().requires_grad_(), mu.double().requires_grad_()
    reference_loss(z64, m64, targets, 1.0, 0.5, "softmax", "mean").backward()
    assert torch.allclose(z.grad.double(), z64.grad, rtol=1e-4, atol=1e-6)
    assert torch.allclose(m.grad.double(), m64.grad, rtol=1e-4, atol=1e-8)
    assert torch.autograd.gradcheck(
        lambda a, b: reference_loss(a, b, targets, 1.0, 0.5, "softmax", "mean"), (z64, m64))


def test_temperature_nll_refuses_what_it_cannot_compute() -> None:
    z, m, t = torch.randn(2, 5), torch.randn(2, 5), torch.tensor([1, 2])
    with pytest.raises(ValueError, match="float32"):
        temperature_nll(z.double(), m.double(), t, 1.0, 0.5)
    with pytest.raises(ValueError, match="need logits"):
        temperature_nll(z, m[:, :4], t, 1.0, 0.5)
    with pytest.raises(ValueError, match="norm must be one of"):
        temperature_nll(z, m, t, 1.0, 0.5, norm="tanh")
    with pytest.raises(ValueError, match="loss scale must be one of"):
        temperature_nll(z, m, t, 1.0, 0.5, mode="max")
    zg = z.clone().requires_grad_()
    loss = temperature_nll(zg, m, t, 1.0, 0.5).sum()
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="runs once"):   # it reuses its saved buffers
        loss.backward()


def test_clear_errors() -> None:
    ct = ContextualTemperature(D, V, R)
    with pytest.raises(ValueError, match="hidden states have size 5"):
        ct(torch.randn(B, S, 5))
    with pytest.raises(ValueError, match="norm must be one of"):
        ContextualTemperature(D, V, R, norm="tanh")
    with pytest.raises(ValueError, match="beta > 0"):
        ContextualTemperature(D, V, R, beta=0.0)
    with pytest.raises(ValueError, match="rank must be >= 1"):
        ContextualTemperature(D, V, 0)
    with pytest.raises(ValueError, match="entries per position"):
        apply_temperature(torch.randn(B, S, V), torch.ones(B, S, V + 1))
    tt = TemporalTemperature(D, V, R)
    with pytest.raises(ValueError, match=r"u must have shape \(11,\)"):
        tt(torch.randn(B, S, D), torch.zeros(V + 1))
    with pytest.raises(ValueError, match="history has 4 words"):
        tt.word_terms(PeriodHistory(period="2", periods=("1",), log_freq=torch.zeros(4, 1)))
    with pytest.raises(ValueError, match="loss scale must be one of"):
        scaled_nll(torch.zeros(1, 3), torch.zeros(1, dtype=torch.long), torch.ones(1, 3), "max")
    with pytest.raises(ValueError, match="need log_probs"):
        scaled_nll(torch.zeros(1, 3), torch.zeros(2, dtype=torch.long), torch.ones(1, 3))
    with pytest.raises(ValueError, match="prior_logits"):
        ct_mos_log_probs(torch.zeros(B, M, V), torch.zeros(B, M + 1), torch.ones(B, V))
