"""Thin command-line entry points, one per DVC stage: `python -m stages.<name> --help`."""

# Before anything imports torch: pin the CPU kernels so results are the same on any x86-64 CPU
# with AVX2 (pipeline/infra/numerics.py). pipeline.infra.numerics imports neither torch nor numpy.
from pipeline.infra.numerics import pin_kernels

pin_kernels()
