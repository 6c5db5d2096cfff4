"""Reports: Markdown tables, verdicts and figures from the outputs of evaluation and forecast.

May import: every layer below it (evaluation, forecast, models, features, corpus, infra); not
``pipeline.graph``.
"""
