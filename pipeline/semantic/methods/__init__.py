"""Semantic-change methods behind one interface: which words changed meaning between
a first and a last group of periods.

* :mod:`.interface` — the contract: a method reads :class:`~.interface.ChangeInputs` (the two
  groups' texts per period, and where a stage has them the per-period frequency counts and
  embeddings files, the targets' LM token ids, the encoder, the learned methods' settings, the
  seed) and scores target words (:class:`~.interface.MethodResult`);
* :mod:`.registry` — the one table of methods, in report order, each row naming its
  module by string (reading the table imports nothing heavy); the semantic_change report and the
  benchmark loop over it, and :func:`~.registry.register` adds a row;
* one module per method: :mod:`.contextual`, :mod:`.temporal_attention`, :mod:`.time_token`,
  :mod:`.sgns`, :mod:`.frequency` (and the optional :mod:`.time_token_unmasked`).
"""
