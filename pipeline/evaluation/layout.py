"""The file names of a score folder (``data/scores/<variant>-s<seed>/``, docs/formats.md "Scores").

Kept apart from :mod:`pipeline.evaluation.evaluate`, which writes the folder with the model
(torch), so that the readers of a score folder (the report, the human evaluation export) name its
files without importing any model code. Files are named by the period's label
(:mod:`pipeline.corpus.periods`): ``positions_2021.parquet`` for a year, ``positions_2021H1``
for a half-year; for years exactly the names they had before periods.
"""

from __future__ import annotations

METRICS_FILE = "metrics.json"


def tokens_file(period: str | int) -> str:
    """Per-abstract NLL sums of ``period`` (a label)."""
    return f"tokens_{period}.parquet"


def positions_file(period: str | int) -> str:
    """Per-position target, NLL and top-10 hit of ``period`` (a label)."""
    return f"positions_{period}.parquet"


def generations_file(period: str | int) -> str:
    """Generated abstracts of ``period`` (a label) with their content METEOR."""
    return f"generations_{period}.parquet"
