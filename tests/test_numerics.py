"""Same numbers on any machine: pinned CPU kernels and portable modules.

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


def run_stages(project: Path, root: Path, env: dict[str, str], threads: int,
               score: bool = True) -> dict[str, str]:
    """Train a small context2 model (dropout 0.1, LSTM, embeddings) and (``score``) score it (PPL,
    CPL, CM and sampled generations) as a user would, each in a fresh process under ``env``;
    sha256 of each output."""
    full = {k: v for k, v in os.environ.items() if k not in KERNEL_ENV}
    full.update(env)
    out = root / "context2-s0"
    train = argv(project, "context2", out, dropout=0.1, epochs=2, threads=threads)
    subprocess.run([sys.executable, "-m", "stages.train", *train], cwd=REPO, env=full, check=True,
                   capture_output=True)
    if not score:
        return {"context2-s0/model.safetensors": _sha(out / "model.safetensors")}
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
    return {str(p.relative_to(root)): _sha(p) for p in files}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


@pytest.mark.slow
def test_pinned_runs_are_the_same_bytes_across_kernels_and_mkl_branches(project, tmp_path):
    """The user's ATEN_CPU_CAPABILITY / MKL_CBWR are overridden by the pin."""
    scalar = run_stages(project, tmp_path / "a", {"ATEN_CPU_CAPABILITY": "default"},
                        threads=numerics.THREADS)
    avx2 = run_stages(project, tmp_path / "b", {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"},
                      threads=numerics.THREADS)
    print("pinned hashes:", scalar)
    assert scalar == avx2


@pytest.mark.slow
def test_control_without_the_pin_the_same_runs_differ(project, tmp_path):
    """Shows the test above can fail: unpinned, scalar vs AVX2 kernels give other weights
    (trained weights only: the scores of other weights differ anyway)."""
    if numerics.cpu_has_avx2() is not True:
        pytest.skip("needs an AVX2 CPU to run ATen's avx2 kernels")
    scalar = run_stages(project, tmp_path / "a",
                        {numerics.NO_PIN_ENV: "1", "ATEN_CPU_CAPABILITY": "default"},
                        threads=numerics.THREADS, score=False)
    avx2 = run_stages(project, tmp_path / "b",
                      {numerics.NO_PIN_ENV: "1", "ATEN_CPU_CAPABILITY": "avx2"},
                      threads=numerics.THREADS, score=False)
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


@pytest.mark.slow
def test_bias_lstm_backward_repeats_bit_for_bit_on_the_recorded_threads():
    """Run-to-run determinism of the LSTM variants (the drift of benchmarks/results/numerics.md
    section 8): on THREADS threads, configure_torch's deterministic mode gives one gradient in ten
    repeats. Without it, index_put_'s parallel atomic adds gave ten different hashes in ten repeats
    on the idle 2-core machine: the control shows that this shape does reach the racy path. With
    the other test worker busy on the second core the two threads seldom overlap (once ten equal
    hashes in ten), so the control draws until two differ, up to 200 times."""
    try:
        numerics.configure_torch(numerics.THREADS)
        deterministic = {_bias_lstm_gradient_hash(True) for _ in range(10)}
        racy: set[str] = set()
        for _ in range(200):
            racy.add(_bias_lstm_gradient_hash(False))
            if len(racy) > 1:
                break
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


def _probe(code: str, env: dict[str, str] | None = None, *args: str) -> str:
    """Run ``code`` in a fresh interpreter that imports ``stages`` first (the pin), as every stage
    does; its stdout."""
    full = {k: v for k, v in os.environ.items() if k not in KERNEL_ENV}
    full.update(env or {})
    return subprocess.run([sys.executable, "-c", "import stages\n" + code, *args], cwd=REPO,
                          env=full, capture_output=True, text=True, check=True).stdout.strip()


GEMM_PROBE = (
    "import sys, hashlib, torch\n"
    "from pipeline.infra.numerics import configure_torch, mkl_branch\n"
    "configure_torch(2, sys.argv[1])\n"
    "g = torch.Generator().manual_seed(0)\n"
    "a, b = torch.randn(511, 128, generator=g), torch.randn(128, 384, generator=g)\n"
    "print(mkl_branch(), hashlib.sha256((a @ b).numpy().tobytes()).hexdigest()[:16])\n")


@pytest.mark.slow
@pytest.mark.skipif(not torch.backends.mkl.is_available(), reason="torch without MKL (not x86)")
def test_numerics_kernels_select_mkls_branch_for_the_stage():
    """params numerics.kernels reaches MKL: portable runs its vendor-neutral COMPATIBLE branch,
    native its fastest one for this CPU (OFF), whatever MKL_CBWR the user set, and the two give
    other bits for the same product."""
    portable = _probe(GEMM_PROBE, {"MKL_CBWR": "AUTO"}, "portable").split()
    native = _probe(GEMM_PROBE, {"MKL_CBWR": "COMPATIBLE"}, "native").split()
    assert portable[0] == "COMPATIBLE" and native[0] == "OFF"
    assert portable[1] != native[1]
    assert _probe(GEMM_PROBE, {}, "portable").split() == portable   # repeatable


NUMPY_PROBE = (
    "import ctypes, glob, hashlib, os, numpy as np\n"
    "from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__\n"
    "lib = glob.glob(os.path.join(os.path.dirname(np.__file__), '..', 'numpy.libs', '*openblas*.so'))\n"
    "ob = ctypes.CDLL(lib[0]); core = ob.scipy_openblas_get_corename64_\n"
    "core.restype = ctypes.c_char_p\n"
    "rng = np.random.default_rng(0)\n"
    "a, b = rng.standard_normal((300, 200)), rng.standard_normal((200, 150))\n"
    "x = np.exp(a @ b / 20).sum(axis=1)\n"
    "on = [t for t in __cpu_dispatch__ if __cpu_features__.get(t)]\n"
    "print(core().decode(), ','.join(on), hashlib.sha256(x.tobytes()).hexdigest()[:16])\n")


@pytest.mark.slow
@pytest.mark.skipif(numerics.cpu_has_avx2() is not True, reason="the numpy pins apply on AVX2 CPUs")
def test_numpy_runs_the_same_blas_kernel_and_loops_whatever_the_cpu_offers():
    """The forecast's float64 work: numpy's OpenBLAS is pinned to its Haswell kernels
    and numpy's loops to AVX2, overriding what a user (or another CPU) would pick. Simulated here
    by asking for other OpenBLAS cores (an older one; Zen, this CPU's own) and by taking AVX2 away
    from numpy; the control without the pin shows those choices change the bytes."""
    pinned = {_probe(NUMPY_PROBE, env) for env in (
        {}, {"OPENBLAS_CORETYPE": "Sandybridge"}, {"OPENBLAS_CORETYPE": "Zen"},
        {"NPY_DISABLE_CPU_FEATURES": "X86_V3"})}
    assert len(pinned) == 1
    core, dispatched, _ = pinned.pop().split()
    assert core == "Haswell"
    assert not set(dispatched.split(",")) & set(numerics.NUMPY_ABOVE_AVX2)
    free = {_probe(NUMPY_PROBE, {numerics.NO_PIN_ENV: "1", "OPENBLAS_CORETYPE": c})
            for c in ("Sandybridge", "Haswell")}
    assert len(free) == 2, "control: OpenBLAS's core type should change the bytes"


def test_the_numpy_pin_names_every_dispatch_target_above_avx2():
    """A numpy upgrade that adds a dispatch target beyond AVX2 (X86_V3) must extend
    numerics.NUMPY_ABOVE_AVX2, or AVX-512 CPUs would run other loops again."""
    from numpy._core._multiarray_umath import __cpu_dispatch__

    below = {"X86_V2", "X86_V3", "SSE", "SSE2", "SSE3", "SSSE3", "SSE41", "SSE42", "POPCNT", "AVX",
             "F16C", "FMA3", "AVX2"}
    assert set(__cpu_dispatch__) - below <= set(numerics.NUMPY_ABOVE_AVX2)
