"""Semantic-change methods behind one interface (issue 30): which words changed meaning between
a first and a last group of periods.

* :mod:`.interface` — the contract: a method reads :class:`~.interface.ChangeInputs` (the two
  groups' texts per period, and where a stage has them the per-period frequency counts and
  embeddings files, the targets' LM token ids, the encoder, the learned methods' settings, the
  seed) and scores target words (:class:`~.interface.MethodResult`);
* :mod:`.method_registry` — the one table of methods, in report order, each row naming its
  module by string (reading the table imports nothing heavy); the semantic_change report and the
  benchmark loop over it, and :func:`~.method_registry.register` adds a row;
* one module per method: :mod:`.contextual_method`, :mod:`.temporal_attention_method`,
  :mod:`.time_token_method`, :mod:`.sgns_method`, :mod:`.frequency_method`.
"""
