"""Reports: Markdown tables, verdicts and figures from the outputs of evaluation, forecast and
semantic change.

May import: every layer below it (evaluation, forecast, semantic, models, features, corpus,
infra); not ``pipeline.graph``.
"""
