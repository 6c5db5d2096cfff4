"""Same numbers on any x86-64 CPU with AVX2: pin the CPU kernels before torch is imported.

PyTorch picks its ATen kernels by CPU capability (scalar ``default`` / ``avx2`` / ``avx512``) and MKL
picks its SGEMM code path by CPU and vendor; both change the bits of weight init (``torch.randn``),
of every training step and of every logit. :func:`pin_kernels` fixes both through environment
variables, which torch and MKL read only once, so it must run **before** ``import torch``
(``stages/__init__.py`` and ``tests/conftest.py`` call it first thing):

* ``ATEN_CPU_CAPABILITY=avx2`` (overriding any value the user set): AVX2 kernels also on AVX-512
  CPUs. Only when the CPU has AVX2 (``/proc/cpuinfo``): elsewhere avx2 would die with SIGILL, so the
  capability is left alone and a warning says results will not match the committed ones.
* ``MKL_CBWR=COMPATIBLE``: MKL's vendor-neutral branch. ``MKL_CBWR=AVX2`` is silently ignored on
  AMD CPUs, so COMPATIBLE is the only value that gives Intel and AMD the same SGEMM (~2x slower
  SGEMM; benchmarks/results/numerics.md).
* ``ONEDNN_MAX_CPU_ISA=AVX2`` (insurance: fp32 never reaches oneDNN today), ``OMP_DYNAMIC=FALSE``
  (OpenMP's default, made explicit). Not ``MKL_DYNAMIC=FALSE``: on a loaded 2-core machine it made
  2-thread steps 20x slower (benchmarks/results/numerics.md), and with the recorded single thread
  MKL has no thread count to vary.

The thread count is part of the recorded numerics: MKL's SGEMM splits some shapes (e.g. 511 x 128
x 384) differently over 1 and 2 threads and rounds differently, so results are the same bytes only
for the same intra-op thread count. It is therefore fixed, :data:`THREADS` = 2 on every machine
(not a runtime setting): the bytes of two threads, which use both cores of the 2-core machines
the default run is sized for and cost ~1.15x a native single-thread step instead of ~2x for a
pinned single thread (benchmarks/results/numerics.md, section 6). On one core the two threads
share it (slower, same bytes); on more cores the stages use two of them.

Run-to-run determinism on two threads needs one more switch, :func:`configure_torch`'s
``torch.use_deterministic_algorithms(True)``: without it ``index_put_(accumulate=True)`` — the
backward of the bias LSTMs' gather of compact rows (``out[position]``,
:func:`pipeline.models.temporal.compact_rows`) — adds into float rows with parallel atomic adds
once it has ≥ 32,768 elements and > 1 thread, so the same Frequency training on the same machine
drifted from step 7 on (dev PPL 391.42 vs 395.05 in two idle runs; benchmarks/results/numerics.md,
section 8). Deterministic mode takes the sorted serial path; it cost no measurable step time.

The rest of the recipe is code in :mod:`pipeline.models.portable` (vendor-neutral dropout;
a composed LayerNorm, opt-in, since SGEMM keeps threads in the numerics anyway). :func:`check_kernels`, after torch is imported, verifies the pin took
effect (it does not when torch was imported first) and warns otherwise.

**numpy and pyarrow** (the forecast, the verdicts' float64 work) dispatch per CPU too: numpy's
OpenBLAS picks its kernels by core type (SkylakeX on AVX-512 CPUs, Haswell/Zen on AVX2 ones), and
numpy's own loops (exp, log, sums, sorts) have AVX-512 versions. A fresh clone on an AVX2-only
Zen 3 moved the forecast's bootstrap bounds in the 14th-16th digit against an AVX-512 machine's.
So the pin also sets ``OPENBLAS_CORETYPE=Haswell`` (numpy's and scipy's OpenBLAS: the
same kernel and blocking on every AVX2 CPU), ``NPY_DISABLE_CPU_FEATURES`` = numpy's dispatch
targets above AVX2 (:data:`NUMPY_ABOVE_AVX2`; ``tests/test_numerics.py`` fails when a numpy
upgrade adds one) and ``ARROW_USER_SIMD_LEVEL=AVX2``. Both libraries read them when they load, so
they too must be set before ``import numpy`` — ``pin_kernels`` runs before either.

**portable or native** (params ``numerics.kernels``, :data:`KERNELS`): MKL's COMPATIBLE branch is
an SSE2 SGEMM, ~1.7x a native training step at two threads (benchmarks/results/numerics.md,
section 9, which also records the routes tried to get portable bytes at native speed). ``native``
drops it for MKL's fastest branch on this CPU (``MKL_CBWR`` unset) and keeps everything else
(AVX2 ATen kernels, the numpy pins, two threads): the bytes are then those of this CPU's vendor and
generation, not the committed ones. :func:`configure_torch` selects it; MKL reads ``MKL_CBWR`` at
its first call, and :func:`mkl_branch` (MKL's own ``mkl_cbwr_get``) verifies the branch took.

``FUTURELM_NO_PIN=1`` disables the pin. It exists for ``tests/test_numerics.py``'s control (which
shows that without the pin the bytes do differ); do not set it for real runs.
"""

from __future__ import annotations

import os
import platform
import sys
import warnings

CAPABILITY = "avx2"
KERNELS = ("portable", "native")   # params numerics.kernels (module doc)
THREADS = 2   # intra-op threads of every torch stage: part of the recorded numerics (module doc)
PINNED_ENV = {
    "MKL_CBWR": "COMPATIBLE",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "OMP_DYNAMIC": "FALSE",
    # cuBLAS needs a fixed workspace under deterministic algorithms (configure_torch); CPU: unused
    "CUBLAS_WORKSPACE_CONFIG": ":4096:8",
}
# numpy 2.4's dispatch targets above X86_V3 (AVX2 + FMA): disabled so that every AVX2 CPU runs the
# same numpy loops (module doc). numpy accepts names of features this CPU lacks.
NUMPY_ABOVE_AVX2 = ("X86_V4", "AVX512_ICL", "AVX512_SPR")
# Only where the CPU has AVX2: a Haswell OpenBLAS kernel on an older CPU dies with SIGILL.
AVX2_ENV = {
    "ATEN_CPU_CAPABILITY": CAPABILITY,
    "OPENBLAS_CORETYPE": "Haswell",
    "NPY_DISABLE_CPU_FEATURES": " ".join(NUMPY_ABOVE_AVX2),
    "ARROW_USER_SIMD_LEVEL": "AVX2",
}
NO_PIN_ENV = "FUTURELM_NO_PIN"
# MKL's branch codes (mkl_cbwr.h): what mkl_cbwr_get(MKL_CBWR_BRANCH) returns
MKL_BRANCHES = {1: "OFF", 2: "AUTO", 3: "COMPATIBLE"}

_pinned: dict[str, str] | None = None
_warned: set[str] = set()


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def cpu_has_avx2(cpuinfo: str = "/proc/cpuinfo") -> bool | None:
    """Whether this CPU has AVX2: ``True``/``False`` from ``/proc/cpuinfo``'s flags, ``None`` when
    that cannot be told cheaply (no ``/proc``, e.g. macOS). Never imports torch."""
    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686", "x86"):
        return False
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return "avx2" in line.split(":", 1)[-1].split()
    except OSError:
        return None
    return None


def pin_disabled() -> bool:
    return os.environ.get(NO_PIN_ENV, "") not in ("", "0")


def pin_kernels() -> dict[str, str]:
    """Set the environment that pins torch's and MKL's CPU kernels (module doc) and return what
    was set. Idempotent; call it before anything imports torch."""
    global _pinned
    if _pinned is not None:
        return dict(_pinned)
    if pin_disabled():
        _pinned = {}
        return {}
    pinned = dict(PINNED_ENV)
    avx2 = cpu_has_avx2()
    if avx2:
        pinned.update(AVX2_ENV)
    else:
        _warn_once("no-avx2", "this CPU " + ("has no AVX2" if avx2 is False else
                   "could not be checked for AVX2") + ": torch's CPU kernels are left unpinned, "
                   "so trained weights, scores and generations will not match the committed ones "
                   "bit for bit")
    late = [m for m in ("torch", "numpy", "pyarrow") if m in sys.modules]
    if late:
        _warn_once("late", f"pin_kernels() ran after {' and '.join(late)} was imported: the CPU "
                   "kernels may already be chosen (import stages or call it before them)")
    os.environ.update(pinned)
    _pinned = pinned
    return dict(pinned)


def configure_torch(threads: int = THREADS, kernels: str = "portable") -> None:
    """Every torch stage's numerics after ``import torch``: ``threads`` intra-op threads (0 leaves
    torch's default; anything but :data:`THREADS` gives other bytes), deterministic algorithms
    (module doc: the atomic-add ``index_put_`` of the LSTM variants' backward) and MKL's branch,
    ``kernels`` (:data:`KERNELS`, params ``numerics.kernels``). ``warn_only``: an op with no
    deterministic kernel (some CUDA ones) warns instead of stopping a run."""
    import torch

    if kernels not in KERNELS:
        raise ValueError(f"numerics.kernels must be one of {KERNELS}, not {kernels!r}")
    if kernels == "native":
        os.environ.pop("MKL_CBWR", None)   # read by MKL at its first call (module doc)
        if _pinned is not None:
            _pinned.pop("MKL_CBWR", None)   # not a pin any more: check_kernels must not warn
    branch = mkl_branch()
    expected = "OFF" if kernels == "native" or pin_disabled() else "COMPATIBLE"
    if branch is not None and branch != expected:
        _warn_once(f"branch-{kernels}", f"numerics.kernels={kernels} asks for MKL's {expected} "
                   f"branch but MKL already runs {branch} (it was called before configure_torch): "
                   "results follow the branch in use")
    if threads > 0:
        torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True, warn_only=True)


def mkl_branch() -> str | None:
    """MKL's code path in this process (``OFF``: its fastest for this CPU, ``COMPATIBLE``: the
    vendor-neutral SSE2 one, ``AUTO``), from MKL's ``mkl_cbwr_get``, which torch's CPU library
    exports; ``None`` where torch has no MKL (not x86, some builds). Calling it fixes the branch
    for the process, as MKL's first call does."""
    import ctypes

    import torch

    if not torch.backends.mkl.is_available():
        return None
    try:
        lib = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
        get = lib.mkl_serv_cbwr_get
    except (OSError, AttributeError):
        return None
    get.restype, get.argtypes = ctypes.c_int, [ctypes.c_int]
    code = get(1)   # MKL_CBWR_BRANCH
    return MKL_BRANCHES.get(code, str(code))


def check_kernels() -> str:
    """After ``import torch``: the ATen capability in use; warns when the pin did not take effect
    (torch imported before :func:`pin_kernels`, or ``ATEN_CPU_CAPABILITY`` changed since)."""
    import torch

    capability = torch.backends.cpu.get_cpu_capability()
    if pin_disabled():
        return capability
    if _pinned is None:
        _warn_once("unpinned", "pin_kernels() was never called: torch runs on its native CPU "
                   f"kernels ({capability}); results may differ from other machines")
    elif "ATEN_CPU_CAPABILITY" in _pinned and capability != CAPABILITY.upper():
        _warn_once("mismatch", f"torch runs {capability} CPU kernels instead of the pinned "
                   f"{CAPABILITY.upper()} (was torch imported before pin_kernels()?): results "
                   "may differ from other machines")
    for var, value in (_pinned or {}).items():
        if os.environ.get(var) != value:
            _warn_once(f"env-{var}", f"{var} changed to {os.environ.get(var)!r} after "
                       f"pin_kernels() set {value!r}: results may differ from other machines")
    return capability
