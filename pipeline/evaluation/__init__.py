"""Evaluation: scoring trained models on known periods (PPL, CPL, CM) and the statistics on top.

NLL scoring, generation metrics (content METEOR), frequency buckets, staleness,
the unigram reference and the human-evaluation kit. Semantic change is its own sibling layer,
:mod:`pipeline.semantic`.
May import: ``pipeline.models`` and the layers below it; not training, forecast or semantic.
"""
