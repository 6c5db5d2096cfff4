"""Temporal attention (paper 003 eq. 2) in tiny random-init GPT-2 / BERT: identity time term = the
plain model, gradients, time dependence, causality, KV cache, special time points."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel

from pipeline.models.temporal_attention import (
    TemporalBertSelfAttention,
    TemporalGPT2Attention,
    TimeEmbedding,
    add_temporal_attention,
    temporal_times,
)

IMPLS = ("eager", "sdpa")
D, H, DK, N, VOCAB, PAD, MASK = 32, 2, 16, 20, 100, 0, 3


def gpt2(impl: str) -> GPT2LMHeadModel:
    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_head=H, n_embd=D, vocab_size=VOCAB, n_positions=64, initializer_range=0.2,
                        bos_token_id=1, eos_token_id=2)
    config._attn_implementation = impl
    return GPT2LMHeadModel(config).eval()


def bert(impl: str) -> BertForMaskedLM:
    torch.manual_seed(0)
    config = BertConfig(num_hidden_layers=2, num_attention_heads=H, hidden_size=D, intermediate_size=64,
                        vocab_size=VOCAB, max_position_embeddings=64, pad_token_id=PAD,
                        initializer_range=0.2)
    config._attn_implementation = impl
    return BertForMaskedLM(config).eval()


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Two rows of 16 real tokens in 20: the first padded right, the second left."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, VOCAB, (2, N), generator=g)
    mask = torch.ones(2, N, dtype=torch.long)
    mask[0, 16:] = 0
    mask[1, :4] = 0
    return ids.masked_fill(mask == 0, PAD), mask


def identity_times(model: torch.nn.Module, emb: TimeEmbedding, mask: torch.Tensor) -> torch.Tensor:
    """Per-token periods 0..15 (shuffled) over each row's 16 real tokens, and W_T, Xᵗ such that
    every head's T has rows 4·e_p: Tᵀ T = 16 I, ‖T‖_F = 16, so Tᵀ T / ‖T‖ = I."""
    with torch.no_grad():
        emb.embedding.weight.zero_()
        emb.embedding.weight[:DK, :DK] = torch.eye(DK)
        for m in model.modules():
            if isinstance(m, (TemporalGPT2Attention, TemporalBertSelfAttention)):
                m.time.weight.zero_()
                for h in range(H):
                    m.time.weight[h * DK:(h + 1) * DK, :DK] = 4 * torch.eye(DK)
    periods = torch.zeros(2, N, dtype=torch.long)
    for row in range(2):
        periods[row, mask[row] == 1] = torch.randperm(DK, generator=torch.Generator().manual_seed(row))
    return emb.ids(periods, attention_mask=mask)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("arch", ("gpt2", "bert"))
def test_identity_time_term_equals_plain_model(arch: str, impl: str) -> None:
    plain = gpt2(impl) if arch == "gpt2" else bert(impl)
    model = copy.deepcopy(plain)
    # GPT-2's causal prefixes are shorter than d_k, so only the whole-sequence scope can be I.
    emb = add_temporal_attention(model, n_periods=DK, scope="sequence" if arch == "gpt2" else "visible")
    ids, mask = batch()
    times = identity_times(model, emb, mask)
    with torch.no_grad(), temporal_times(model, times):
        got = model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    with torch.no_grad():
        want = plain(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    real = mask.bool()
    torch.testing.assert_close(got.logits[real], want.logits[real])
    torch.testing.assert_close(got.hidden_states[-1][real], want.hidden_states[-1][real])
    # and it is not the identity any more once the time embeddings change
    with torch.no_grad(), temporal_times(model, times):
        model.time_embedding.embedding.weight.normal_(generator=torch.Generator().manual_seed(4))
        other = model(input_ids=ids, attention_mask=mask).logits
    assert (other[real] - want.logits[real]).abs().max() > 1e-3


@pytest.mark.parametrize("arch", ("gpt2", "bert"))
def test_gradients_reach_w_t_and_time_embeddings(arch: str) -> None:
    model = gpt2("eager") if arch == "gpt2" else bert("eager")
    emb = add_temporal_attention(model, n_periods=3)
    ids, mask = batch()
    with temporal_times(model, emb.ids(torch.tensor([0, 2]), attention_mask=mask)):
        model(input_ids=ids, attention_mask=mask, labels=ids).loss.backward()
    layers = [m for m in model.modules() if hasattr(m, "time_scope")]
    assert len(layers) == 2
    for m in layers:
        assert m.time.weight.grad is not None and m.time.weight.grad.abs().sum() > 0
    grad = emb.embedding.weight.grad
    assert grad is not None and grad[0].abs().sum() > 0 and grad[2].abs().sum() > 0
    assert grad[1].abs().sum() == 0  # period 1 is not in the batch
    assert model.time_embedding is emb and "time_embedding.embedding.weight" in dict(model.named_parameters())


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("arch", ("gpt2", "bert"))
def test_outputs_depend_on_time(arch: str, impl: str) -> None:
    model = gpt2(impl) if arch == "gpt2" else bert(impl)
    emb = add_temporal_attention(model, n_periods=4)
    ids, mask = batch()
    out = {}
    for period in (1, 2):
        with torch.no_grad(), temporal_times(model, emb.ids(torch.tensor([period, period]), attention_mask=mask)):
            out[period] = model(input_ids=ids, attention_mask=mask).logits
    real = mask.bool()
    assert (out[1][real] - out[2][real]).abs().max() > 1e-3
    with pytest.raises(RuntimeError, match="no time ids"):
        model(input_ids=ids, attention_mask=mask)


def test_eager_and_sdpa_agree() -> None:
    ids, mask = batch()
    logits = []
    for impl in IMPLS:
        model = gpt2(impl)
        torch.manual_seed(5)
        emb = add_temporal_attention(model, n_periods=4)
        with torch.no_grad(), temporal_times(model, emb.ids(torch.tensor([0, 3]), attention_mask=mask)):
            logits.append(model(input_ids=ids, attention_mask=mask).logits)
    torch.testing.assert_close(logits[0][mask.bool()], logits[1][mask.bool()])


@pytest.mark.parametrize("impl", IMPLS)
def test_gpt2_stays_causal(impl: str) -> None:
    model = gpt2(impl)
    emb = add_temporal_attention(model, n_periods=4)
    ids = torch.randint(5, VOCAB, (2, N), generator=torch.Generator().manual_seed(2))
    times = emb.ids(torch.tensor([[1] * N, [2] * N]))
    j = 11
    changed_ids = ids.clone()
    changed_ids[:, j] = (ids[:, j] + 1) % VOCAB
    changed_times = times.clone()
    changed_times[:, j:] = 3  # the default scope: a query's T holds only the keys it sees
    with torch.no_grad():
        with temporal_times(model, times):
            base = model(input_ids=ids).logits
        with temporal_times(model, times):
            by_token = model(input_ids=changed_ids).logits
        with temporal_times(model, changed_times):
            by_time = model(input_ids=ids).logits
    for changed in (by_token, by_time):
        torch.testing.assert_close(changed[:, :j], base[:, :j])
        assert (changed[:, j:] - base[:, j:]).abs().amax(dim=-1).min() > 0


@pytest.mark.parametrize("impl", IMPLS)
def test_gpt2_kv_cache_matches_full_forward(impl: str) -> None:
    model = gpt2(impl)
    emb = add_temporal_attention(model, n_periods=4)
    ids = torch.randint(5, VOCAB, (2, N), generator=torch.Generator().manual_seed(3))
    with torch.no_grad(), temporal_times(model, torch.tensor([0, 3])):  # one period per sequence
        full = model(input_ids=ids).logits
        first = model(input_ids=ids[:, :12], use_cache=True)
        second = model(input_ids=ids[:, 12:], past_key_values=first.past_key_values)
    torch.testing.assert_close(torch.cat([first.logits, second.logits], dim=1), full)


def test_special_time_points() -> None:
    emb = TimeEmbedding(n_periods=5, dim=D)
    ids, mask = batch()
    ids[0, 2] = MASK
    times = emb.ids(torch.tensor([4, 1]), attention_mask=mask, input_ids=ids, mask_token_id=MASK)
    assert (times[mask == 0] == emb.pad_id).all() and times[0, 2] == emb.mask_id == 6
    assert (times[0, :16][torch.arange(16) != 2] == 4).all() and (times[1, 4:] == 1).all()
    with pytest.raises(ValueError):
        emb.ids(torch.tensor([5, 0]))

    model = bert("eager")
    emb = add_temporal_attention(model, n_periods=5)
    times = emb.ids(torch.tensor([4, 1]), attention_mask=mask, input_ids=ids, mask_token_id=MASK)

    def run(row: int, with_mask: bool) -> torch.Tensor:
        with torch.no_grad(), temporal_times(model, times):
            before = model(input_ids=ids, attention_mask=mask if with_mask else None).logits
            saved = emb.embedding.weight[row].clone()
            emb.embedding.weight[row] += 1.0
            after = model(input_ids=ids, attention_mask=mask if with_mask else None).logits
            emb.embedding.weight[row] = saved
        return (after - before)[mask.bool()].abs().max()

    assert run(emb.mask_id, with_mask=True) > 1e-4  # [MASK] tokens are keys: their time point counts
    assert run(emb.pad_id, with_mask=True) == 0  # masked pads are not in T
    assert run(emb.pad_id, with_mask=False) > 1e-4  # unmasked pads (the paper's setting) are


def test_rejects_models_without_self_attention() -> None:
    with pytest.raises(ValueError, match="no GPT2Attention"):
        add_temporal_attention(torch.nn.Linear(2, 2), n_periods=2)


def test_attention_weights_follow_eq_2() -> None:
    """BERT layer 0, eager: softmax(Q Tᵀ T Kᵀ / (‖T‖_F √d_k)) over the real tokens, T = Xᵗ W_T."""
    model = bert("eager")
    emb = add_temporal_attention(model, n_periods=4)
    ids, mask = batch()
    periods = torch.randint(0, 4, (2, N), generator=torch.Generator().manual_seed(6))
    times = emb.ids(periods, attention_mask=mask)
    with torch.no_grad(), temporal_times(model, times):
        out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True, output_attentions=True)
        layer = model.bert.encoder.layer[0].attention.self
        x, xt = out.hidden_states[0], emb(times)
        for row in range(2):
            real = mask[row].bool()
            for h in range(H):
                cols = slice(h * DK, (h + 1) * DK)
                q, k = layer.query(x[row, real])[:, cols], layer.key(x[row, real])[:, cols]
                t = xt[row, real] @ layer.time.weight[cols].T
                scores = q @ t.T @ t @ k.T / t.norm() / DK**0.5
                torch.testing.assert_close(out.attentions[0][row, h][real][:, real], scores.softmax(-1))
