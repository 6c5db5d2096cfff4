"""Same numbers on any machine (issue 16): pinned CPU kernels and portable modules.

The end-to-end tests run the real train and score stages in subprocesses (the pin acts before torch
is imported) under simulated machines: ATen's scalar ``default`` kernels vs its ``avx2`` kernels
(what differs between CPUs) and MKL's branch unset vs ``AVX2``. The weights and every
score/generation file must be the same bytes; the control shows that without the pin they are not.
The thread count is part of the recorded numerics (MKL's SGEMM rounds some shapes differently on 1
and 2 threads; pipeline/infra/numerics.py), so every run uses the recorded THREADS (2).
A real Intel or AVX-512 CPU cannot be simulated here (docs/numerics.md, "Same numbers on any machine").
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch import nn
from transformers import GPT2Config, GPT2LMHeadModel

from pipeline.infra import numerics
from pipeline.models.future_lm import load_future_lm, make_future_lm, save_future_lm, scratch_gpt2
from pipeline.models.portable import (ATTENTION, ComposedLayerNorm, PortableDropout,
                                      is_portable, make_portable, portable_dropout, portable_sdpa)
from pipeline.training.optim import set_dropout
from test_stage_train import STOPWORDS, argv, project  # noqa: F401  (module fixture)

REPO = Path(__file__).resolve().parents[1]
KERNEL_ENV = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "MKL_DYNAMIC", "OMP_DYNAMIC",
              numerics.NO_PIN_ENV)


def run_stages(project: Path, root: Path, env: dict[str, str], threads: int) -> dict[str, str]:
    """Train a small context2 model (dropout 0.1, LSTM, embeddings) and score it (PPL, CPL, CM and
    sampled generations) as a user would, in a fresh process under ``env``; sha256 of each output."""
    full = {k: v for k, v in os.environ.items() if k not in KERNEL_ENV}
    full.update(env)
    out = root / "context2-s0"
    train = argv(project, "context2", out, dropout=0.1, epochs=2, threads=threads)
    subprocess.run([sys.executable, "-m", "stages.train", *train], cwd=REPO, env=full, check=True,
                   capture_output=True)
    scores = root / "scores"
    subprocess.run([sys.executable, "-m", "stages.score", "--model", str(out),
                    "--dev", str(project / "dev.parquet"), "--test", str(project / "test.parquet"),
                    "--tokenizer", str(project / "tokenizer"), "--frequencies", str(project / "freq"),
                    "--embeddings", str(project / "emb"), "--stopwords", str(STOPWORDS),
                    "--batch-size", "3", "--n-generate", "2", "--max-new-tokens", "12",
                    "--threads", str(threads), "--device", "cpu", "--out", str(scores)],
                   cwd=REPO, env=full, check=True, capture_output=True)
    files = [out / "model.safetensors", *sorted(p for p in scores.rglob("*") if p.is_file())]
    assert len(files) > 3
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()[:16] for p in files}


def test_pinned_runs_are_the_same_bytes_across_kernels_and_mkl_branches(project, tmp_path):
    """The user's ATEN_CPU_CAPABILITY / MKL_CBWR are overridden by the pin."""
    scalar = run_stages(project, tmp_path / "a", {"ATEN_CPU_CAPABILITY": "default"},
                        threads=numerics.THREADS)
    avx2 = run_stages(project, tmp_path / "b", {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"},
                      threads=numerics.THREADS)
    print("pinned hashes:", scalar)
    assert scalar == avx2


def test_control_without_the_pin_the_same_runs_differ(project, tmp_path):
    """Shows the test above can fail: unpinned, scalar vs AVX2 kernels give other weights."""
    if numerics.cpu_has_avx2() is not True:
        pytest.skip("needs an AVX2 CPU to run ATen's avx2 kernels")
    scalar = run_stages(project, tmp_path / "a",
                        {numerics.NO_PIN_ENV: "1", "ATEN_CPU_CAPABILITY": "default"},
                        threads=numerics.THREADS)
    avx2 = run_stages(project, tmp_path / "b",
                      {numerics.NO_PIN_ENV: "1", "ATEN_CPU_CAPABILITY": "avx2"},
                      threads=numerics.THREADS)
    print("unpinned hashes:", scalar, avx2)
    assert scalar["context2-s0/model.safetensors"] != avx2["context2-s0/model.safetensors"]


def _bias_lstm_gradient_hash(deterministic: bool) -> str:
    """The bias LSTM's weight gradients (sha256) for 50k words of which half are unobserved: their
    rows share one representative, so the gather's backward adds 25k x 32 values into one row."""
    from pipeline.models.temporal import PeriodLSTM

    torch.use_deterministic_algorithms(deterministic, warn_only=True)
    torch.manual_seed(0)
    lstm = PeriodLSTM(1, 32, dropout=0.0)
    sequences, weights = torch.randn(50_000, 2, 1), torch.randn(50_000, 32)
    observed = torch.arange(50_000) % 2 == 0
    (lstm(sequences, observed) * weights).sum().backward()
    return hashlib.sha256(b"".join(p.grad.numpy().tobytes() for p in lstm.parameters())).hexdigest()


def test_bias_lstm_backward_repeats_bit_for_bit_on_the_recorded_threads():
    """Run-to-run determinism of the LSTM variants (the drift of benchmarks/results/numerics.md
    section 8): on THREADS threads, configure_torch's deterministic mode gives one gradient in ten
    repeats. Without it, index_put_'s parallel atomic adds gave ten different hashes in ten repeats
    on the 2-core machine: the control shows that this shape does reach the racy path."""
    try:
        numerics.configure_torch(numerics.THREADS)
        deterministic = {_bias_lstm_gradient_hash(True) for _ in range(10)}
        racy = {_bias_lstm_gradient_hash(False) for _ in range(10)}
    finally:
        numerics.configure_torch(1)   # conftest's setting (deterministic on, one thread)
    assert len(deterministic) == 1
    if os.cpu_count() and os.cpu_count() > 1:   # atomic adds can only race on two cores
        assert len(racy) > 1, "control: without deterministic mode the repeats should differ"


def test_the_test_process_itself_is_pinned():
    if numerics.cpu_has_avx2() is True and not numerics.pin_disabled():
        assert numerics.check_kernels() == "AVX2"
        assert os.environ["MKL_CBWR"] == "COMPATIBLE"
    assert numerics.pin_kernels() == numerics.pin_kernels()   # idempotent


def test_pin_leaves_a_cpu_without_avx2_alone(tmp_path, monkeypatch):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse sse2 avx\n")
    assert numerics.cpu_has_avx2(str(info)) is False
    info.write_text("processor\t: 0\nflags\t\t: fpu sse sse2 avx avx2 fma\n")
    assert numerics.cpu_has_avx2(str(info)) is True
    code = ("import os, warnings, pipeline.infra.numerics as n\n"
            "n.cpu_has_avx2 = lambda: False\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always'); got = n.pin_kernels(); n.pin_kernels()\n"
            "print('ATEN_CPU_CAPABILITY' in got, os.environ.get('ATEN_CPU_CAPABILITY'), len(w))\n")
    env = {k: v for k, v in os.environ.items() if k not in KERNEL_ENV}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                          text=True, check=True)
    assert done.stdout.split() == ["False", "None", "1"]   # capability untouched, warned once


def test_stages_pin_before_torch_is_imported():
    code = ("import sys, os, stages\n"
            "assert 'torch' not in sys.modules\n"
            "print(os.environ['ATEN_CPU_CAPABILITY'], os.environ['MKL_CBWR'])\n")
    env = {k: v for k, v in os.environ.items() if k not in KERNEL_ENV}
    env["ATEN_CPU_CAPABILITY"] = "default"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                          text=True, check=True)
    if numerics.cpu_has_avx2() is True:
        assert done.stdout.split() == ["avx2", "COMPATIBLE"]


def test_portable_dropout_statistics_scaling_and_eval_identity():
    torch.manual_seed(0)
    x = torch.ones(200_000)
    y = portable_dropout(x, 0.25)
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.75) < 0.005
    assert torch.all(y[kept] == 1 / 0.75)
    assert abs(y.mean().item() - 1.0) < 0.01
    d = PortableDropout(0.25)
    assert isinstance(d, nn.Dropout)
    d.eval()
    assert d(x) is x
    d.train()
    torch.manual_seed(1)
    a = d(x)
    torch.manual_seed(1)
    assert torch.equal(a, d(x))                 # seeded: the same mask
    assert torch.equal(PortableDropout(0.0)(x), x)
    x.requires_grad_(True)
    torch.manual_seed(1)
    d(x).sum().backward()
    assert torch.equal(x.grad, a)               # gradient flows through the kept units, scaled


def test_composed_layernorm_equals_layernorm_with_the_same_keys():
    torch.manual_seed(0)
    ln = nn.LayerNorm(64, eps=1e-5)
    nn.init.normal_(ln.weight)
    nn.init.normal_(ln.bias)
    composed = ComposedLayerNorm(64, eps=1e-5)
    composed.load_state_dict(ln.state_dict())
    assert list(composed.state_dict()) == list(ln.state_dict())
    lm = scratch_gpt2(50, 0, n_layer=1, n_head=2, n_embd=16, n_positions=32, dropout=0.1)
    keys = list(lm.state_dict())
    make_portable(lm, layer_norm=True)
    assert list(lm.state_dict()) == keys
    assert not any(type(m) is nn.LayerNorm for m in lm.modules())
    x = torch.randn(8, 16, 64) * 3 + 1
    torch.testing.assert_close(composed(x), ln(x), atol=1e-6, rtol=1e-6)
    xa, xb = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    composed(xa).square().sum().backward()
    ln(xb).square().sum().backward()
    torch.testing.assert_close(xa.grad, xb.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(composed.weight.grad, ln.weight.grad, atol=1e-3, rtol=1e-5)


def test_future_lms_are_portable_and_save_into_plain_gpt2(tmp_path):
    torch.manual_seed(0)
    lm = scratch_gpt2(50, 0, n_layer=1, n_head=2, n_embd=16, n_positions=32, dropout=0.1)
    keys = list(lm.state_dict())
    model = make_future_lm(lm, "context2", 2, feature_dim=8, dropout=0.1)
    assert is_portable(model) and list(model.lm.state_dict()) == keys
    assert model.lm.config._attn_implementation == ATTENTION
    set_dropout(model, 0.3)                       # still finds every dropout
    assert {m.p for m in model.modules() if isinstance(m, nn.Dropout)} == {0.3}
    save_future_lm(model, tmp_path / "m")
    loaded = load_future_lm(tmp_path / "m")
    assert is_portable(loaded)
    plain = GPT2LMHeadModel(GPT2Config.from_dict(model.lm.config.to_dict()))
    plain.load_state_dict(model.lm.state_dict(), strict=True)
    assert not is_portable(plain)
    x = torch.randint(1, 50, (2, 10))
    with torch.no_grad():
        torch.testing.assert_close(plain.eval()(x).logits, loaded.lm(x).logits,
                                   atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("padded", [False, True])
def test_portable_attention_equals_sdpa_up_to_its_dropout(padded):
    """The written-out attention (CPU training with dropout) is SDPA's computation."""
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=50, n_layer=1, n_head=2, n_embd=16, n_positions=32,
                     attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0, bos_token_id=0,
                     eos_token_id=0, attn_implementation="sdpa")
    ref = GPT2LMHeadModel(cfg)
    port = make_portable(GPT2LMHeadModel(cfg))
    port.load_state_dict(ref.state_dict())
    for m in port.modules():                       # a dropout so small it keeps every unit
        if isinstance(m, nn.Dropout):
            m.p = 1e-12
    x = torch.randint(1, 50, (2, 12))
    mask = torch.ones_like(x)
    if padded:
        mask[1, 9:] = 0
    ref.train(), port.train()
    want = ref(input_ids=x, attention_mask=mask).logits
    got = port(input_ids=x, attention_mask=mask).logits
    rows = slice(None) if not padded else (1, slice(0, 9))
    torch.testing.assert_close(got[rows], want[rows], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got[0], want[0], atol=1e-5, rtol=1e-5)
    q = torch.randn(1, 2, 5, 8)
    out, _ = portable_sdpa(port.transformer.h[0].attn, q, q, q, None, dropout=0.5)
    assert out.shape == (1, 5, 2, 8) and torch.isfinite(out).all()
