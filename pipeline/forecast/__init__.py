"""Forecast: a model's prediction of the next period's vocabulary, and backtests of it.

May import: ``pipeline.models`` and the layers below it; not training, evaluation or semantic.
"""
