"""A toy stage's declaration, written as a user would add a stage whose paths the plan does not
shape: ``tests/test_variant_seam.py`` copies it into a throw-away project as
``pipeline/interfaces/toy_counts.py`` and ``tests/toy_stage.py`` as ``stages/toy_counts.py``;
nothing else changes. Its paths and its place (after the split) are here, and a param of its
own reaches it through the command line."""

from __future__ import annotations

from pipeline.infra.interface import Input, Output, StageInterface, Value

INTERFACE = StageInterface("toy_counts", (
    Input("--dev", "dev split Parquet"),
    Value("--min-words", "count only abstracts of at least this many words (params "
          "filter.min_words)", type=int, param="filter.min_words"),
    Output("--out", "output JSON: the dev period's abstracts of at least --min-words words",
           kind="metrics", dvc={"cache": False}),
), paths={"dev": "data/splits/dev.parquet", "out": "metrics/toy_counts.json"}, after="split")
