"""The file names of a score folder (``data/scores/<variant>-s<seed>/``, docs/design.md "Scores").

Kept apart from :mod:`pipeline.evaluation.evaluate`, which writes the folder with the model
(torch), so that the readers of a score folder (the report, the human evaluation export) name its
files without importing any model code.
"""

from __future__ import annotations

METRICS_FILE = "metrics.json"


def tokens_file(year: int) -> str:
    """Per-abstract NLL sums of ``year``."""
    return f"tokens_{year}.parquet"


def positions_file(year: int) -> str:
    """Per-position target, NLL and top-10 hit of ``year``."""
    return f"positions_{year}.parquet"


def generations_file(year: int) -> str:
    """Generated abstracts of ``year`` with their content METEOR."""
    return f"generations_{year}.parquet"
