"""Evaluation: scoring trained models on known periods (PPL, CPL, CM) and the statistics on top.

NLL scoring, generation metrics (content METEOR), frequency buckets, staleness,
the unigram reference and the human-evaluation kit; and semantic change: the methods behind one
interface and their registry (``change_methods/``), the report's targets (``change_targets``),
the analysis and the benchmark that run every method (``semantic_change``,
``semantic_benchmark``) and the statistics of their scores (``semantic_scores``).
May import: ``pipeline.models`` and the layers below it; not training or forecast.
"""
