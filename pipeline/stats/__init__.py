"""Statistics every verdict rests on: resampling by the right unit, family-wise adjustment, and the
one verdict record (:mod:`pipeline.stats.verdict`). Torch-free; numpy and scipy only."""
