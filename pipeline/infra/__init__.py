"""Infrastructure: what every layer needs and nothing project-specific reads back.

Errors a user can fix, atomic deterministic I/O, the device and precision rules, torch.distributed
helpers, feature-file identities, run names, the typed configuration schema and each stage's
declared interface (:mod:`pipeline.infra.interface`, :mod:`pipeline.infra.interfaces`).
May import: nothing else in ``pipeline`` (the bottom layer).
"""
