"""The one schema of every setting and its default: the typed dataclasses of training, scoring
and decoding (:mod:`pipeline.infra.schema.config`) and of every other ``params.yaml`` section
(:mod:`pipeline.infra.schema.params`). Each class default is the default run's value;
``params.yaml`` is rendered from them and ``profiles/`` overlay them. A stage's options are built
from these classes, so an option, its type, its default and its help are written once, here.
Imports nothing else in ``pipeline``.
"""
