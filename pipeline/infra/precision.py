"""Numeric precision of training, scoring and generation: a declared setting, because it changes
results (params ``train.precision``, ``score.precision``).

=========  ==================================================================================
``fp32``   every operation in fp32; on CUDA also the matrix products (TF32 off).
``tf32``   fp32 tensors; on CUDA the fp32 matrix products use TF32 tensor cores (inputs rounded
           to a 10-bit mantissa, fp32 accumulation), ~2-3x faster on A100/H100. On a CPU this is
           exactly ``fp32``.
``bf16``   ``torch.autocast`` to bfloat16: matrix products and attention run in bf16, the
           weights stay fp32 (master weights; AdamW's state is fp32), layer norms, softmax and
           the NLL run in fp32 (:mod:`pipeline.models.nll` upcasts the logits chunk by chunk), the
           fused Context² gate computes in fp32 (:mod:`pipeline.models.temporal`); fp32 products that
           autocast leaves run as with ``tf32``. No loss scaling: bf16 has fp32's exponent range.
=========  ==================================================================================

Attention uses PyTorch's fused scaled-dot-product kernel (SDPA) in every precision
(:func:`pipeline.models.future_lm.use_sdpa`); it is the same computation as the eager attention.
bf16 also runs on the CPU (``torch.autocast("cpu")``), which is how the tests cover it; it is
fast only where the CPU has bf16 instructions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, get_args

from pipeline.infra.schema.config import Precision
from pipeline.infra.errors import UserError

if TYPE_CHECKING:  # torch is imported where it is used
    import torch

PRECISIONS: tuple[str, ...] = get_args(Precision)


def check_precision(precision: str, device: torch.device) -> None:
    """A :class:`UserError` for an unknown precision or bf16 on a GPU without bf16 support."""
    import torch

    if precision not in PRECISIONS:
        raise UserError(f"unknown precision {precision!r}", path="train.precision / score.precision",
                        fix=f"use one of {', '.join(PRECISIONS)}")
    if (precision == "bf16" and device.type == "cuda"
            and not torch.cuda.is_bf16_supported(including_emulation=False)):
        raise UserError(f"{torch.cuda.get_device_name(device)} has no bf16 support",
                        path="train.precision / score.precision", fix="use tf32 or fp32")


@contextlib.contextmanager
def matmul_precision(device: torch.device | str, precision: str) -> Iterator[None]:
    """Within this block, CUDA fp32 matrix products use TF32 unless ``precision`` is ``fp32``.

    Enter it around a whole training loop, backward passes included. The switch is process-wide
    state, restored on exit. It never touches the CPU's own reduced-precision modes
    (``torch.set_float32_matmul_precision`` would make oneDNN round fp32 products on the CPU too).
    """
    import torch

    check_precision(precision, torch.device(device))
    matmul = torch.backends.cuda.matmul
    previous = matmul.fp32_precision
    matmul.fp32_precision = "ieee" if precision == "fp32" else "tf32"
    try:
        yield
    finally:
        matmul.fp32_precision = previous


def autocast(device: torch.device | str, precision: str) -> contextlib.AbstractContextManager:
    """bf16 autocast on ``device`` for ``bf16``, nothing otherwise. Forward passes only:
    backward runs outside it, in the dtypes autocast chose for the forward (torch's rule)."""
    import torch

    if precision == "bf16":
        return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


@contextlib.contextmanager
def compute_precision(device: torch.device | str, precision: str) -> Iterator[None]:
    """Inference (scoring, generation) in ``precision``: :func:`matmul_precision` and
    :func:`autocast` together."""
    with matmul_precision(device, precision), autocast(device, precision):
        yield
