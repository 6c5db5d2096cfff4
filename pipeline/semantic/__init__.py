"""Semantic change (paper 003): which words changed meaning between a first and a last group of
periods, by several methods, and how well each finds change where it is known.

* :mod:`.methods` — the methods behind one interface and their registry (the one table of
  methods; its rows name their modules by string);
* :mod:`.change` — the ``semantic_change`` stage's analysis: the report's targets
  (:mod:`.targets`), every method on them, the scores table and the correlations with a truth;
* :mod:`.benchmark` — the ``semantic_benchmark`` stage: pseudo-words of known change (or a
  SemEval-2020 Task 1 folder), every method on them, correlated with the truth;
* :mod:`.scores` — the statistics of the scores (top-k, truth correlations, agreement, metrics);
* what the methods compute with: :mod:`.vectors` (cosine distance, Procrustes),
  :mod:`.word_vectors` (an encoder's occurrence vectors), :mod:`.temporal_mlm` (the
  temporal-attention and time-token MLMs), :mod:`.sgns` (skip-gram per group).

May import: ``pipeline.models`` and the layers below it; not training, evaluation or forecast
(independent siblings).
"""
