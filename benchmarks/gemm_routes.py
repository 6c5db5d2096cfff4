"""A route to portable bytes at native speed, tried: torch's matrix products through
OpenBLAS's Haswell kernels instead of MKL's COMPATIBLE branch.

    .venv/bin/python -m benchmarks.gemm_routes [--rounds 20] [--passes 2]

numpy's own OpenBLAS (DYNAMIC_ARCH) is called through ctypes with its core type pinned
(``OPENBLAS_CORETYPE=Haswell``: the same kernel and blocking on every AVX2 CPU), and registered as
the CPU kernel of ``aten::mm``, ``addmm``, ``bmm``, ``baddbmm``, ``mv`` and ``addmv`` (torch.library),
so every matrix product of a training step, autograd's included, leaves MKL (MKL_VERBOSE shows no
call left). OpenBLAS splits a product over threads by rows and columns only, so its bytes do not
depend on its thread count (checked below on the model's shapes). Configurations, each in its own
process, interleaved: ``native`` (MKL's fastest branch), ``portable`` (MKL COMPATIBLE: what the
stages run), ``openblas`` with T torch threads and B OpenBLAS threads. Work: a Baseline and a
Context² training step (benchmarks.step_time, default preset). Results: benchmarks/results/numerics.md
section 9. Not used by the pipeline.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import statistics
import subprocess
import sys

CONFIGS = {"native": (2, 0), "portable": (2, 0), "openblas T1 B1": (1, 1),
           "openblas T2 B1": (2, 1), "openblas T1 B2": (1, 2), "openblas T2 B2": (2, 2)}
ROW, NOTRANS, TRANS = 101, 111, 112


def openblas_gemm():
    """The override's kernels on numpy's OpenBLAS (64-bit ints, ``scipy_`` symbol prefix)."""
    import numpy
    import torch

    path = glob.glob(os.path.join(os.path.dirname(numpy.__file__), "..", "numpy.libs",
                                  "libscipy_openblas64_*.so"))[0]
    lib = ctypes.CDLL(path)
    sgemm = lib.scipy_cblas_sgemm64_
    i64, f32, ptr = ctypes.c_int64, ctypes.c_float, ctypes.c_void_p
    sgemm.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, i64, i64, i64, f32, ptr, i64,
                      ptr, i64, f32, ptr, i64]

    def layout(a):
        rows, cols = a.shape
        s0, s1 = a.stride()
        if (s1 == 1 or cols == 1) and s0 >= max(1, cols):
            return a, NOTRANS, max(s0, 1, cols)
        if (s0 == 1 or rows == 1) and s1 >= max(1, rows):
            return a, TRANS, max(s1, 1, rows)
        return layout(a.contiguous())

    def gemm(out, a, b, alpha=1.0, beta=0.0):
        m, k, n = a.shape[0], a.shape[1], b.shape[1]
        if m and n and not k:
            return out.mul_(beta) if beta else out.zero_()
        if m and n:
            (a, ta, lda), (b, tb, ldb) = layout(a), layout(b)
            sgemm(ROW, ta, tb, m, n, k, alpha, a.data_ptr(), lda, b.data_ptr(), ldb, beta,
                  out.data_ptr(), max(out.stride(0), 1, n))
        return out

    def start(inp, shape, beta):
        out = torch.empty(shape)
        if beta:
            out.copy_(inp.expand(shape))
        return out

    def mm(a, b):
        return gemm(torch.empty(a.shape[0], b.shape[1]), a, b)

    def addmm(inp, a, b, *, beta=1, alpha=1):
        return gemm(start(inp, (a.shape[0], b.shape[1]), beta), a, b, alpha, beta or 0.0)

    def bmm(a, b):
        out = torch.empty(a.shape[0], a.shape[1], b.shape[2])
        for i in range(a.shape[0]):
            gemm(out[i], a[i], b[i])
        return out

    def baddbmm(inp, a, b, *, beta=1, alpha=1):
        out = start(inp, (a.shape[0], a.shape[1], b.shape[2]), beta)
        for i in range(a.shape[0]):
            gemm(out[i], a[i], b[i], alpha, beta or 0.0)
        return out

    def mv(a, v):
        out = torch.empty(a.shape[0])
        gemm(out.view(-1, 1), a, v.unsqueeze(1))
        return out

    def addmv(inp, a, v, *, beta=1, alpha=1):
        out = start(inp, (a.shape[0],), beta)
        gemm(out.view(-1, 1), a, v.unsqueeze(1), alpha, beta or 0.0)
        return out

    return lib, gemm, {"mm": mm, "addmm": addmm, "bmm": bmm, "baddbmm": baddbmm, "mv": mv,
                       "addmv": addmv}


def worker(config: str, rounds: int) -> None:
    import warnings

    import torch

    from benchmarks import step_time
    from pipeline.infra.numerics import configure_torch

    torch_threads, blas_threads = CONFIGS[config]
    configure_torch(torch_threads, "native" if config == "native" else "portable")
    invariant = None
    if config.startswith("openblas"):
        lib, gemm, kernels = openblas_gemm()
        warnings.filterwarnings("ignore", message=".*Overriding a previously registered kernel")
        library = torch.library.Library("aten", "IMPL")
        for name, fn in kernels.items():
            library.impl(name, fn, "CPU")
        bits = []
        for threads in (1, 2):   # OpenBLAS's bytes at 1 and 2 of its threads, the model's shapes
            lib.scipy_openblas_set_num_threads64_(threads)
            g = torch.Generator().manual_seed(0)
            bits.append([torch.mm(torch.randn(m, k, generator=g), torch.randn(k, n, generator=g))
                         for m, k, n in ((511, 128, 384), (1023, 512, 128), (512, 128, 4096))])
        invariant = all(torch.equal(x, y) for x, y in zip(*bits))
        lib.scipy_openblas_set_num_threads64_(blas_threads)
    times = step_time.time_steps(step_time.PRESETS["default"], ("baseline", "context2"), rounds, 3,
                                 1.0, torch.device("cpu"))
    print(json.dumps({"times": times, "thread_invariant": invariant}))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.gemm_routes", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--passes", type=int, default=2)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.worker, args.rounds)
        return
    times = {c: {"baseline": [], "context2": []} for c in CONFIGS}
    invariant = {}
    for _ in range(args.passes):
        for config in CONFIGS:
            env = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"}
            out = subprocess.run([sys.executable, "-m", "benchmarks.gemm_routes", "--worker", config,
                                  "--rounds", str(args.rounds)], env=env, check=True,
                                 capture_output=True, text=True).stdout
            got = json.loads(out.strip().splitlines()[-1])
            invariant[config] = got["thread_invariant"]
            for v in times[config]:
                times[config][v] += got["times"][v]
    native = {v: statistics.median(t) for v, t in times["native"].items()}
    print("| route | torch threads | OpenBLAS threads | Baseline step ms (/ native) | "
          "Context² step ms (/ native) | OpenBLAS bytes 1 = 2 threads |")
    print("|---|---:|---:|---:|---:|---|")
    for config, (torch_threads, blas_threads) in CONFIGS.items():
        cells = [f"{statistics.median(t) * 1e3:.1f} ({statistics.median(t) / native[v]:.2f}x)"
                 for v, t in times[config].items()]
        print(f"| {config.split()[0]} | {torch_threads} | {blas_threads or '-'} | "
              + " | ".join(cells) + f" | {'' if invariant[config] is None else invariant[config]} |")


if __name__ == "__main__":
    main()
