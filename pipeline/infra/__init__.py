"""Infrastructure: what every layer needs and nothing project-specific reads back.

Errors a user can fix, atomic deterministic I/O, the device and precision rules, torch.distributed
helpers, feature-file identities, run names and the typed configuration schema.
May import: nothing else in ``pipeline`` (the bottom layer).
"""
