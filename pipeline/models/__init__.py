"""Models: the future LM, its temporal bias variants, the variant registry, model resolution.

Also what every user of a model shares, since training, evaluation and forecast may not import
each other: the next-token NLL and perplexity arithmetic, encoding abstracts for a model's
context, scoring abstracts (the score stage's PPL and training's dev PPL) and decoding.
May import: ``pipeline.features``, ``pipeline.corpus``, ``pipeline.infra``.
"""
