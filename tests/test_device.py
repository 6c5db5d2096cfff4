"""Device and dtype selection with CUDA availability faked either way (no GPU needed).

The rules: ``auto`` means CUDA when torch sees one, else the CPU; an explicit device always wins;
the encoder's ``auto`` dtype is fp32 on the CPU and bf16 on CUDA (fp16 where bf16 is not
supported). The real GPU path is tests/test_embeddings.py::test_cuda_path_is_chosen_when_available,
skipped with its reason where there is no GPU.
"""

from __future__ import annotations

import pytest
import torch

from pipeline.features import embeddings as em
from pipeline.infra.device import pick_device
from stages._lib.runtime import load_runtime


@pytest.fixture
def cuda(monkeypatch: pytest.MonkeyPatch):
    """``cuda(available, bf16=True)`` makes torch report (no) CUDA device, with(out) bf16."""
    def fake(available: bool, bf16: bool = True) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: available)
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16)
    return fake


def test_auto_picks_cuda_when_torch_sees_one(cuda) -> None:
    cuda(True)
    assert pick_device("auto") == torch.device("cuda")
    cuda(False)
    assert pick_device("auto") == torch.device("cpu")


@pytest.mark.parametrize("available", [True, False])
def test_an_explicit_device_always_wins(cuda, available: bool) -> None:
    cuda(available)
    assert pick_device("cpu") == torch.device("cpu")
    assert pick_device("cuda:1") == torch.device("cuda", 1)


def test_encoder_auto_dtype_is_bf16_on_cuda_fp16_without_bf16_fp32_on_cpu(cuda) -> None:
    cuda(True, bf16=True)
    assert em.pick_dtype("auto", pick_device("auto")) == torch.bfloat16
    cuda(True, bf16=False)
    assert em.pick_dtype("auto", pick_device("auto")) == torch.float16
    # the CPU stays fp32 even on a machine with a GPU
    assert em.pick_dtype("auto", pick_device("cpu")) == torch.float32
    assert em.pick_dtype("fp32", pick_device("auto")) == torch.float32
    cuda(False)
    assert em.pick_dtype("auto", pick_device("auto")) == torch.float32


def test_runtime_device_reaches_the_rule(cuda, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """FUTURELM_DEVICE (or runtime.yaml) is what a stage passes to pick_device."""
    cuda(True)
    runtime = tmp_path / "runtime.yaml"
    runtime.write_text("device: cpu\n")
    monkeypatch.setenv("FUTURELM_RUNTIME", str(runtime))
    monkeypatch.delenv("FUTURELM_DEVICE", raising=False)
    assert pick_device(load_runtime().device) == torch.device("cpu")
    monkeypatch.setenv("FUTURELM_DEVICE", "auto")
    assert pick_device(load_runtime().device) == torch.device("cuda")
