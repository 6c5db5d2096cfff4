"""The fast GPU path, tested on the CPU: bf16 autocast really runs the matrix
products in bf16, keeps fp32 master weights and an fp32 NLL, scores within a stated tolerance of
fp32, and the fused Context² gate computes in fp32; TF32 is a CUDA-only switch that is restored;
attention is SDPA and equals eager attention."""

from __future__ import annotations

import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from pipeline.infra.errors import UserError
from pipeline.models.future_lm import load_future_lm, make_future_lm, save_future_lm, scratch_gpt2, use_sdpa
from pipeline.features.history import PeriodHistory
from pipeline.infra.precision import PRECISIONS, autocast, check_precision, compute_precision, matmul_precision
from pipeline.models.scoring import score_abstracts
from pipeline.infra.schema.config import TrainConfig
from pipeline.training.checkpoints import Checkpoints
from pipeline.training.loop import train
from tests.variant_settings import sized

V, D_ENC, PAD = 96, 6, 0
CPU = torch.device("cpu")

# bf16 keeps 8 significant bits: logits of magnitude ~10 are rounded by up to ~0.03. Stated
# tolerance for scoring: the corpus perplexity within 1 % of fp32's, each token's NLL within 0.1.
PPL_RTOL, NLL_ATOL = 0.01, 0.1


def history() -> PeriodHistory:
    g = torch.Generator().manual_seed(0)
    return PeriodHistory("2020", ("2018", "2019"), -6 - 4 * torch.rand(V, 2, generator=g),
                       torch.randn(V, 2, D_ENC, generator=g), torch.rand(V, 2, generator=g) > 0.3)


def model(variant: str, dropout: float = 0.0):
    torch.manual_seed(0)
    lm = scratch_gpt2(V, PAD, n_layer=2, n_head=2, n_embd=32, n_positions=64, dropout=dropout)
    m = make_future_lm(lm, variant, 2, settings=sized(variant, 8), feature_dim=D_ENC,
                       dropout=dropout)
    with torch.no_grad():   # sharper logits than at random init (|z| up to ~10), as after training
        lm.lm_head.weight.mul_(20.0)
        if variant == "context2":
            m.bias.A.mul_(3.0)
    return m.eval()


def sequences(n: int = 6) -> list[list[int]]:
    g = torch.Generator().manual_seed(2)
    return [[PAD, *torch.randint(1, V, (20 + 3 * i,), generator=g).tolist(), PAD] for i in range(n)]


@pytest.mark.parametrize("variant", ["baseline", "frequency", "context2"])
def test_bf16_scoring_is_within_the_stated_tolerance_of_fp32(variant: str) -> None:
    m, h = model(variant), history()
    seqs = sequences()
    fp32 = score_abstracts(m, seqs, None, h, batch_size=3, pad_id=PAD, positions=True)
    with compute_precision(CPU, "bf16"):
        bf16 = score_abstracts(m, seqs, None, h, batch_size=3, pad_id=PAD, positions=True)
    ppl32 = fp32.tokens["nll_sum"].sum() / fp32.tokens["n_tokens"].sum()
    ppl16 = bf16.tokens["nll_sum"].sum() / bf16.tokens["n_tokens"].sum()
    assert abs(torch.tensor(ppl16 - ppl32).exp().item() - 1) < PPL_RTOL
    diff = (bf16.positions["nll"] - fp32.positions["nll"]).abs()
    assert diff.max() < NLL_ATOL
    assert diff.max() > 0     # it really ran in another precision (this test can fail)


def test_autocast_runs_the_products_in_bf16_and_keeps_fp32_weights() -> None:
    m, h = model("frequency").train(), history()
    seen: dict[str, torch.dtype] = {}
    m.lm.lm_head.register_forward_hook(lambda mod, args, out: seen.update(head=out.dtype))
    m.lm.transformer.h[0].attn.c_attn.register_forward_hook(
        lambda mod, args, out: seen.update(attn=out.dtype))
    x = torch.tensor(sequences(2)[0][:16]).unsqueeze(0)
    with autocast(CPU, "bf16"):
        out = m(x, history=h, labels=x)
    assert seen == {"head": torch.bfloat16, "attn": torch.bfloat16}
    assert out.logits.dtype == torch.bfloat16 and out.loss.dtype == torch.float32  # NLL in fp32
    out.loss.backward()
    assert all(p.dtype == torch.float32 for p in m.parameters())                   # master weights
    assert all(p.grad is None or p.grad.dtype == torch.float32 for p in m.parameters())
    with autocast(CPU, "fp32"):
        m(x, history=h)
    assert seen["head"] == torch.float32


def test_training_runs_its_forward_passes_in_the_configured_precision(tmp_path) -> None:
    m, h = model("context2").train(), history()
    dtypes: set[torch.dtype] = set()
    m.lm.lm_head.register_forward_hook(lambda mod, args, out: dtypes.add(out.dtype))
    data = {"2020": sequences(4)}
    config = TrainConfig(epochs=1, batch_size=2, grad_accum=2, lr_lm=1e-3, lr_new=1e-3,
                         patience=0, precision="bf16")
    state = train(m, data, {"2020": sequences(2)}, {"2020": h}, config, pad_id=PAD, device="cpu",
                  checkpoints=Checkpoints(tmp_path / "ck", "k"), live_dir=tmp_path / "live")
    assert dtypes == {torch.bfloat16}      # training steps and the dev perplexity
    assert state.step == 1 and all(p.dtype == torch.float32 for p in m.parameters())


def test_context2_gate_is_computed_in_fp32_under_autocast() -> None:
    """Eq. 10 on bf16 logits: the result is the exact sum rounded once to bf16. Computed in bf16
    (as before this fix), g_k = H_kᵀ C A alone would carry ~3-digit errors through the gate."""
    m = model("context2")
    bias, h = m.bias, history()
    E = m.lm.get_output_embeddings().weight.detach()
    torch.manual_seed(1)
    H = 3 * torch.randn(4, 7, 32)
    z = (5 * torch.randn(4, 7, V)).to(torch.bfloat16)
    with torch.no_grad(), autocast(CPU, "bf16"):
        terms = bias.word_terms(h, E)
        out = bias.add_bias(terms, H, z)
    with torch.no_grad():
        t64 = terms.double()
        g = H.double() @ (bias.C.double() @ bias.A.double())
        exact = z.double() + bias.alpha.double() * torch.sigmoid(g[..., None] * t64[0]) * t64[1]
    assert out.dtype == torch.bfloat16
    # one bf16 rounding of the exact value: at most half a bf16 ulp (2^-8 relative)
    assert ((out.double() - exact).abs() <= exact.abs() * 2.0 ** -8 + 1e-6).all()
    assert terms.dtype == torch.float32


def test_tf32_is_a_cuda_switch_restored_on_exit() -> None:
    matmul = torch.backends.cuda.matmul
    before, cpu_before = matmul.fp32_precision, torch.backends.mkldnn.matmul.fp32_precision
    for precision, inside in (("fp32", "ieee"), ("tf32", "tf32"), ("bf16", "tf32")):
        with matmul_precision(CPU, precision):
            assert matmul.fp32_precision == inside
            # the CPU's own fp32 products are never rounded
            assert torch.backends.mkldnn.matmul.fp32_precision == cpu_before
        assert matmul.fp32_precision == before
    a = torch.randn(64, 64, dtype=torch.float32)
    with compute_precision(CPU, "tf32"):
        tf32 = a @ a
    assert torch.equal(tf32, a @ a)        # on a CPU, tf32 is exactly fp32


def test_unknown_precision_is_a_user_error() -> None:
    assert PRECISIONS == ("fp32", "tf32", "bf16")
    with pytest.raises(UserError, match="unknown precision"):
        check_precision("fp16", CPU)
    with pytest.raises(UserError), compute_precision(CPU, "half"):
        pass


def test_attention_is_sdpa_and_equals_eager(tmp_path) -> None:
    m = model("frequency")
    # SDPA, registered with a vendor-neutral dropout for CPU training (pipeline.models.portable)
    assert m.lm.config._attn_implementation == "futurelm_sdpa"
    save_future_lm(m, tmp_path / "m")
    assert load_future_lm(tmp_path / "m").lm.config._attn_implementation == "futurelm_sdpa"
    torch.manual_seed(0)
    eager = GPT2LMHeadModel(GPT2Config(vocab_size=V, n_layer=1, n_head=2, n_embd=16,
                                       n_positions=32, attn_implementation="eager")).eval()
    x = torch.randint(1, V, (2, 12))
    mask = torch.ones_like(x)
    mask[1, 9:] = 0                         # right padding, as in training batches
    want = eager(input_ids=x, attention_mask=mask).logits
    got = use_sdpa(eager)(input_ids=x, attention_mask=mask).logits
    assert eager.config._attn_implementation == "sdpa"
    torch.testing.assert_close(got[0], want[0])
    torch.testing.assert_close(got[1, :9], want[1, :9])
