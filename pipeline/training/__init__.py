"""Training: one run (a variant and a seed) from split files and features to a saved model.

May import: ``pipeline.models`` and the layers below it; not evaluation, forecast or semantic
(independent siblings).
"""
