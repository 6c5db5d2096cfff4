"""Features: what the temporal models read about each period, indexed by LM token.

The LM tokenizer, per-period frequencies, encoder-to-LM alignment, per-period contextual
embeddings, history windows (which periods a period's history holds) and their dense tensors.
Periods are labels (``2020``, ``2020H2``; ``pipeline.corpus.periods``).
May import: ``pipeline.corpus``, ``pipeline.infra``.
"""
