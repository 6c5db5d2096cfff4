"""Thin command-line entry points, one per DVC stage: `python -m stages.<name> --help`."""

# Before anything imports torch: pin the CPU kernels so results are the same on any x86-64 CPU
# with AVX2 (pipeline/infra/numerics.py). pipeline.infra.numerics imports neither torch nor numpy.
from pipeline.infra.numerics import pin_kernels

pin_kernels()

# Under `make repro` a warm server runs the stage instead of this fresh interpreter
# (pipeline/infra/preload.py); without one (plain `dvc repro`, tests) this returns at once.
if __import__("os").environ.get("FUTURELM_PRELOAD"):
    import sys as _sys

    from pipeline.infra.preload import delegate

    delegate(_sys.orig_argv)
