"""Benchmarks (`python -m benchmarks.<name>`): pinned to the same CPU kernels as every stage
(pipeline/infra/numerics.py) before anything imports torch; FUTURELM_NO_PIN=1 leaves them native."""

from pipeline.infra.numerics import pin_kernels

pin_kernels()
