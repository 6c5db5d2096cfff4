"""Features: what the temporal models read about each year, indexed by LM token.

The LM tokenizer, per-year frequencies, encoder-to-LM alignment, per-year contextual embeddings,
history windows (which years a year's history holds) and their dense tensors.
May import: ``pipeline.corpus``, ``pipeline.infra``.
"""
