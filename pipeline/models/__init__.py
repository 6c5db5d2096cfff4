"""Models: the future LM, its temporal bias variants, the variant registry, model resolution.

Also what every user of a model shares: the next-token NLL and perplexity arithmetic, encoding
abstracts for a model's context, and decoding (generation).
May import: ``pipeline.features``, ``pipeline.corpus``, ``pipeline.infra``.
"""
