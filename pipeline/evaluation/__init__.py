"""Evaluation: scoring trained models on known periods (PPL, CPL, CM) and the statistics on top.

NLL scoring, generation metrics (content METEOR), significance, frequency buckets, staleness,
the unigram reference and the human-evaluation kit.
May import: ``pipeline.models`` and the layers below it; not training or forecast.
"""
