"""Infrastructure: what every layer needs and nothing project-specific reads back.

Errors a user can fix, atomic deterministic I/O, the device and precision rules, torch.distributed
helpers, feature-file identities, run names, the settings' schema (:mod:`pipeline.infra.schema`)
and the mechanism of a stage's declaration (:mod:`pipeline.infra.interface`; the declarations are
:mod:`pipeline.interfaces`).
May import: nothing else in ``pipeline`` (the bottom layer).
"""
