"""Continuous output layer (paper 004; Kumar & Tsvetkov 2019): vMF NLL against a float64 scipy /
mpmath formula, K&T's approximation against it, cosine and max-margin losses on hand-picked
vectors, nearest neighbours against a brute-force loop, ignore index, shapes, frozen targets."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.special import ive

from pipeline.models.continuous import (
    IGNORE,
    ContinuousHead,
    cosine_loss,
    frozen_input_embeddings,
    log_cmk_approx,
    log_cmk_exact,
    max_margin_loss,
    nearest_neighbours,
    vmf_log_probs,
    vmf_nll,
)

B, T, D, E, V = 2, 5, 12, 8, 17
KAPPAS = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]


def log_cmk_reference(kappa: float, m: int) -> float:
    """``log C_m(κ) = (m/2−1) log κ − (m/2) log 2π − log I_{m/2−1}(κ)`` straight from ``ive``."""
    v = m / 2 - 1
    return v * math.log(kappa) - m / 2 * math.log(2 * math.pi) - (math.log(ive(v, kappa)) + kappa)


def unit_rows(n: int, e: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    rows = torch.randn(n, e, generator=g, dtype=torch.float64)
    return torch.nn.functional.normalize(rows, dim=-1)


@pytest.mark.parametrize("m", [2, 4, 16, 128])
def test_exact_log_cmk_matches_the_scipy_formula_and_mpmath(m: int) -> None:
    mpmath = pytest.importorskip("mpmath")
    kappa = torch.tensor(KAPPAS, dtype=torch.float64)
    got = log_cmk_exact(kappa, m)
    want = [log_cmk_reference(k, m) for k in KAPPAS]
    assert torch.allclose(got, torch.tensor(want, dtype=torch.float64), rtol=1e-12, atol=1e-10)
    mpmath.mp.dps = 40                                       # an independent Bessel function
    for k, g in zip(KAPPAS, got.tolist()):
        ref = ((m / 2 - 1) * mpmath.log(k) - m / 2 * mpmath.log(2 * mpmath.pi)
               - mpmath.log(mpmath.besseli(m / 2 - 1, k)))
        assert g == pytest.approx(float(ref), rel=1e-10, abs=1e-10)


def test_exact_log_cmk_gradient_is_the_bessel_ratio() -> None:
    kappa = torch.tensor([0.5, 3.0, 40.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda k: log_cmk_exact(k, 32), (kappa,))
    log_cmk_exact(kappa, 32).sum().backward()
    want = -ive(16, kappa.detach().numpy()) / ive(15, kappa.detach().numpy())
    assert np.allclose(kappa.grad.numpy(), want, rtol=1e-12)


def test_exact_log_cmk_refuses_an_underflow() -> None:
    with pytest.raises(ValueError, match="underflows"):
        log_cmk_exact(torch.tensor([1e-3], dtype=torch.float64), 768)


def test_log_c_at_zero_is_the_inverse_sphere_area() -> None:
    for m in (2, 3, 16, 768):                     # C_m(0) = Γ(m/2) / (2 π^{m/2}), anchor of c_m
        want = math.lgamma(m / 2) - math.log(2) - m / 2 * math.log(math.pi)
        assert float(log_cmk_approx(torch.tensor(0.0, dtype=torch.float64), m)) == \
            pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("m,tol", [(4, 0.025), (16, 0.01), (32, 0.01), (64, 0.01), (128, 0.01)])
def test_approximation_is_close_to_exact_value_and_gradient(m: int, tol: float) -> None:
    kappa = torch.tensor(KAPPAS, dtype=torch.float64, requires_grad=True)
    approx = log_cmk_approx(kappa, m)
    (g_approx,) = torch.autograd.grad(approx.sum(), kappa)
    exact = torch.tensor([log_cmk_reference(k, m) for k in KAPPAS], dtype=torch.float64)
    g_exact = -ive(m / 2, np.array(KAPPAS)) / ive(m / 2 - 1, np.array(KAPPAS))
    assert ((approx.detach() - exact).abs() / exact.abs()).max() < tol
    assert np.max(np.abs(g_approx.numpy() / g_exact - 1)) < tol
    # the gradient is exactly K&T's bound κ / (m/2 − 1 + √((m/2 + 1)² + κ²))
    nu, k = m / 2, np.array(KAPPAS)
    bound = k / (nu - 1 + np.sqrt((nu + 1) ** 2 + k ** 2))
    assert np.allclose(g_approx.numpy(), -bound, rtol=1e-12)


def test_approximation_is_finite_where_exact_cannot_be_computed() -> None:
    kappa = torch.tensor([1e-6, 1.0, 1e3, 1e5])
    out = log_cmk_approx(kappa, 768)
    assert torch.isfinite(out).all()
    assert (out[1:] < out[:-1]).all()             # log C_m decreases in κ (the ratio is > 0)


@pytest.mark.parametrize("m", [16, 128])
@pytest.mark.parametrize("lambda1,lambda2", [(0.0, 1.0), (0.02, 1.0), (0.0, 0.1)])
def test_vmf_nll_against_the_direct_formula(m: int, lambda1: float, lambda2: float) -> None:
    targets_unit = unit_rows(V, m)
    g = torch.Generator().manual_seed(1)
    norms = torch.tensor([1.0, 3.0, 10.0, 30.0, 100.0, 7.0], dtype=torch.float64)
    pred = torch.nn.functional.normalize(torch.randn(6, m, generator=g, dtype=torch.float64),
                                         dim=-1) * norms[:, None]
    ids = torch.tensor([0, 3, IGNORE, 16, 5, IGNORE])
    got = vmf_nll(pred, ids, targets_unit, lambda1, lambda2, exact=True)
    rows = [-log_cmk_reference(float(norms[i]), m) - lambda2 * float(pred[i] @ targets_unit[ids[i]])
            + lambda1 * float(norms[i]) for i in range(6) if ids[i] != IGNORE]
    assert float(got) == pytest.approx(sum(rows) / len(rows), rel=1e-10)
    approx = vmf_nll(pred, ids, targets_unit, lambda1, lambda2)
    assert float(approx) == pytest.approx(float(got), rel=0.01)


def test_cosine_loss_on_hand_picked_vectors() -> None:
    targets_unit = torch.eye(3)
    pred = torch.tensor([[2.0, 0.0, 0.0],      # same direction: 0
                         [0.0, -5.0, 0.0],     # opposite: 2
                         [1.0, 1.0, 0.0]])     # 45°: 1 − 1/√2
    ids = torch.tensor([0, 1, 1])
    assert float(cosine_loss(pred, ids, targets_unit)) == pytest.approx((0 + 2 + 1 - 2 ** -0.5) / 3)


def test_max_margin_takes_the_most_violating_negative() -> None:
    targets_unit = torch.eye(3)
    pred = torch.tensor([[3.0, 4.0, 0.0],      # cos to e0 0.6, most violating e1 0.8
                         [0.0, 0.0, 1.0]])     # target e2 at cos 1, negatives at 0
    ids = torch.tensor([0, 2])
    got = max_margin_loss(pred, ids, targets_unit, margin=0.5)
    assert float(got) == pytest.approx((max(0, 0.5 + 0.8 - 0.6) + max(0, 0.5 + 0 - 1)) / 2)
    assert float(max_margin_loss(pred[1:], ids[1:], targets_unit, margin=1.5)) == pytest.approx(0.5)


def test_nearest_neighbours_equals_a_brute_force_loop() -> None:
    torch.manual_seed(0)
    targets_unit = unit_rows(50, E).float()
    pred = torch.randn(B, T, E)
    got = nearest_neighbours(pred, targets_unit, k=4)
    assert got.shape == (B, T, 4)
    for b in range(B):
        for t in range(T):
            p = pred[b, t]
            cos = [float(p @ targets_unit[j]) / float(p.norm()) for j in range(50)]
            assert got[b, t].tolist() == sorted(range(50), key=lambda j: -cos[j])[:4]
    with pytest.raises(ValueError, match="k must be"):
        nearest_neighbours(pred, targets_unit, k=51)


@pytest.mark.parametrize("kind", ["vmf", "cosine", "max_margin"])
def test_ignored_positions_change_nothing_and_all_ignored_is_zero(kind: str) -> None:
    torch.manual_seed(0)
    head = ContinuousHead(D, torch.randn(V, E))
    hidden = torch.randn(B, T, D)
    ids = torch.randint(0, V, (B, T))
    ids[0, -1] = ids[1, 2] = IGNORE
    full = head.loss(hidden, ids, kind)
    keep = ids != IGNORE
    assert head.loss(hidden[keep], ids[keep], kind).item() == pytest.approx(full.item(), rel=1e-6)
    other = ids.clone()
    other[0, -1] = other[1, 2] = 3                         # a target where it was ignored
    assert head.loss(hidden, other, kind).item() != pytest.approx(full.item(), rel=1e-6)
    none = head.loss(hidden, torch.full((B, T), IGNORE), kind)
    assert none.item() == 0.0
    none.backward()                            # still a graph: the training loop can step


def test_gradient_reaches_the_head_and_not_the_target_buffer() -> None:
    torch.manual_seed(0)
    head = ContinuousHead(D, torch.randn(V, E))
    assert [n for n, _ in head.named_parameters()] == ["proj.weight", "proj.bias"]
    assert not head.targets.requires_grad and "targets" in head.state_dict()
    assert torch.allclose(head.targets.norm(dim=-1), torch.ones(V))
    before = head.targets.clone()
    hidden = torch.randn(B, T, D, requires_grad=True)
    head.loss(hidden, torch.randint(0, V, (B, T)), "vmf", lambda1=0.02).backward()
    assert head.proj.weight.grad is not None and head.proj.weight.grad.abs().sum() > 0
    assert hidden.grad is not None and hidden.grad.abs().sum() > 0   # and on into the LM body
    opt = torch.optim.AdamW(head.parameters(), lr=0.1)
    opt.step()
    assert torch.equal(head.targets, before)


def test_shapes_and_vmf_log_probs() -> None:
    torch.manual_seed(0)
    head = ContinuousHead(D, torch.randn(V, E), bias=False)
    hidden = torch.randn(B, T, D)
    pred = head(hidden)
    assert pred.shape == (B, T, E)
    assert head.nearest(hidden, k=3).shape == (B, T, 3)
    lp = head.log_probs(hidden)
    assert lp.shape == (B, T, V)
    assert torch.allclose(lp.logsumexp(-1), torch.zeros(B, T), atol=1e-6)
    # exp(ê·e_k) / Σ_j exp(ê·e_j): the vMF density at e_k renormalised over the vocabulary
    dots = pred @ head.targets.T
    assert torch.allclose(lp, dots - dots.logsumexp(-1, keepdim=True))
    assert torch.equal(vmf_log_probs(pred, head.targets), lp)
    assert torch.equal(lp.argmax(-1), head.nearest(hidden)[..., 0])   # argmax ê·e_k = nearest
    with pytest.raises(ValueError, match="hidden states"):
        head(torch.randn(B, T, D + 1))
    with pytest.raises(ValueError, match="loss must be"):
        head.loss(hidden, torch.zeros(B, T, dtype=torch.long), "l2")
    with pytest.raises(ValueError, match="does not match"):
        head.loss(hidden, torch.zeros(B, T + 1, dtype=torch.long))


def test_frozen_input_embeddings_of_a_tiny_gpt2_are_a_fixed_copy() -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    lm = GPT2LMHeadModel(GPT2Config(vocab_size=V, n_layer=1, n_embd=32, n_head=2, n_positions=16))
    emb = frozen_input_embeddings(lm)
    wte = lm.get_input_embeddings().weight
    assert emb.shape == (V, 32) and not emb.requires_grad and torch.equal(emb, wte.detach())
    head = ContinuousHead(32, emb)
    assert torch.allclose(head.targets, torch.nn.functional.normalize(wte.detach(), dim=-1))
    before = head.targets.clone()
    ids = torch.randint(0, V, (B, T))
    hidden = lm.transformer(input_ids=ids).last_hidden_state
    opt = torch.optim.AdamW(list(lm.parameters()) + list(head.parameters()), lr=0.1)
    head.loss(hidden, torch.nn.functional.pad(ids[:, 1:], (0, 1), value=IGNORE)).backward()
    opt.step()
    assert not torch.equal(wte.detach(), emb)          # the body's (tied) embeddings moved ...
    assert torch.equal(head.targets, before)           # ... the target space did not
