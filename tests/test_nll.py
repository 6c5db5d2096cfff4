"""The one next-token NLL: shifted targets, padding, fp32, and the memory-capped chunked loss."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from pipeline.models.nll import (
    IGNORE,
    _ChunkedNLL,
    collate,
    in_top_k,
    in_top_ks,
    mean_nll,
    next_token_targets,
    token_nll,
)

V = 37


def plain_nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The textbook computation the chunked one must equal: fp32 log-softmax of every position."""
    logp = F.log_softmax(logits.float(), dim=-1)
    picked = logp.gather(-1, targets.clamp_min(0).unsqueeze(-1)).squeeze(-1)
    return (-picked).masked_fill(targets == IGNORE, 0.0)


def batch(seed: int = 0, dtype: torch.dtype = torch.float32):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, V, (3, 11), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    mask[2, 3:] = 0
    logits = (3 * torch.randn(3, 11, V, generator=g)).to(dtype).requires_grad_()
    return logits, next_token_targets(ids, mask), ids, mask


def test_collate_pads_right() -> None:
    b = collate([[5, 6, 7], [8]], pad_id=0)
    assert b["input_ids"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert b["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]


def test_targets_are_the_next_token_and_ignore_padding_and_the_last_position() -> None:
    ids = torch.tensor([[5, 6, 7], [8, 9, 0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    assert next_token_targets(ids, mask).tolist() == [[6, 7, IGNORE], [9, IGNORE, IGNORE]]
    labels = ids.masked_fill(mask == 0, IGNORE)   # HF labels with -100 already: same result
    assert next_token_targets(labels).tolist() == [[6, 7, IGNORE], [9, IGNORE, IGNORE]]


@pytest.mark.parametrize("max_elements", [1, V, 5 * V + 3, 10**9])
def test_chunked_nll_equals_plain_values_and_gradients(max_elements: int) -> None:
    """Chunks of 1 row, 1 row, 5 rows and everything at once all equal the plain computation."""
    logits, targets, _, _ = batch()
    got = token_nll(logits, targets, max_elements=max_elements)
    want = plain_nll(logits, targets)
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    weights = torch.rand(targets.shape, generator=torch.Generator().manual_seed(2))
    (g_got,) = torch.autograd.grad((got * weights).sum(), logits)
    (g_want,) = torch.autograd.grad((want * weights).sum(), logits)
    torch.testing.assert_close(g_got, g_want, rtol=1e-6, atol=1e-6)
    assert (g_got[targets == IGNORE] == 0).all()   # no gradient from ignored positions


def test_chunked_backward_passes_gradcheck() -> None:
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(7, 5, dtype=torch.float64, generator=g, requires_grad=True)
    targets = torch.tensor([0, 4, IGNORE, 2, 2, IGNORE, 1])
    # float64 logits are computed in fp32 inside; gradcheck's tolerance must allow for that.
    assert torch.autograd.gradcheck(lambda x: _ChunkedNLL.apply(x, targets, 2), (logits,),
                                    eps=1e-3, atol=1e-3, rtol=1e-3)


def test_bf16_logits_are_reduced_in_fp32() -> None:
    logits, targets, _, _ = batch(dtype=torch.bfloat16)
    got = token_nll(logits, targets, max_elements=V)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, plain_nll(logits, targets), rtol=1e-6, atol=1e-6)
    (grad,) = torch.autograd.grad(got.sum(), logits)
    assert grad.dtype == torch.bfloat16


def test_mean_nll_is_cross_entropy_over_real_targets() -> None:
    logits, targets, _, _ = batch()
    want = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=IGNORE)
    torch.testing.assert_close(mean_nll(logits, targets), want, rtol=1e-6, atol=1e-6)


def test_top_k_membership_equals_torch_topk() -> None:
    logits, targets, _, _ = batch(seed=4)
    top = torch.topk(logits.detach(), 10, dim=-1).indices
    want = (top == targets.clamp_min(0).unsqueeze(-1)).any(-1) & (targets != IGNORE)
    for max_elements in (V, 10**9):
        assert torch.equal(in_top_k(logits.detach(), targets, 10, max_elements), want)
    # k = |V|: every real target is in.
    assert torch.equal(in_top_k(logits.detach(), targets, V), targets != IGNORE)


def test_top_k_membership_counts_ties_for_the_target_as_the_comparison_does() -> None:
    logits = torch.randint(0, 4, (6, 7, V)).float()    # many ties
    targets = torch.randint(0, V, (6, 7))
    targets[0, :3] = IGNORE
    above = (logits > logits.gather(-1, targets.clamp_min(0)[..., None])).sum(-1)
    for k in (1, 3, 10):
        want = (above < k) & (targets != IGNORE)
        assert torch.equal(in_top_k(logits, targets, k), want)
        assert torch.equal(in_top_ks(logits, targets, (k, 1))[0], want)
