"""A year's abstracts from the corpus table: the one way every stage reads them.

The per-year feature stages (frequencies, embeddings), the score stage's extra years (staleness,
``score.years``) and the forecast's reference contexts (the abstracts of the year before a
forecast year) all read one year of ``data/corpus/abstracts.parquet``. Only the asked columns
are read and the year is filtered in Arrow, so a large corpus is never loaded whole. A year the
corpus lacks is the user's to fix, so it is a :class:`pipeline.infra.errors.UserError` that names
the params which make a stage read that year. (The dev and test split files are other files,
read by the score stage itself.)
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import pandas as pd
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.infra.errors import UserError

# The params that decide which years the stages read: the stage graph derives every feature year
# (and so every ``frequencies@<year>``/``embeddings@<year>`` stage) from these.
YEAR_PARAMS = ("split.train_first, split.train_last, split.dev_year, split.test_year, "
               "features.window, score.years, forecast.year, forecast.backtest_years")


def missing_feature_fix(*stages: str) -> str:
    """The fix for a missing per-year feature file: its stages (e.g. ``frequencies@2019``), or
    the params that would put them in the graph."""
    return (f"run `dvc repro {' '.join(stages)}`; if the graph has no such stage, no param asks "
            f"for that year: check {YEAR_PARAMS} in params.yaml, then `make graph`")


def read_year(corpus: str | os.PathLike[str], year: int,
              columns: Sequence[str] = ("key", "year", "abstract"), *,
              purpose: str | None = None) -> pd.DataFrame:
    """The rows of ``year`` (``columns``, corpus order, a fresh RangeIndex).

    ``purpose`` (e.g. ``"forecast 2024"``) opens the error message of a missing year.
    """
    read = list(dict.fromkeys(["year", *columns]))
    table = pq.read_table(corpus, columns=read)
    rows = table.filter(pc.equal(table["year"], year))
    if rows.num_rows == 0:
        what = f"the corpus has no abstracts for {year}"
        raise UserError(f"cannot {purpose}: {what}" if purpose else what, path=corpus,
                        fix=f"use a corpus (data.source) that covers {year}, or change the params "
                            f"that make a stage read it ({YEAR_PARAMS}; then `make graph`)")
    return rows.select(list(columns)).to_pandas().reset_index(drop=True)


def year_abstracts(corpus: str | os.PathLike[str], year: int, *,
                   purpose: str | None = None) -> list[str]:
    """The abstract texts of ``year`` in corpus order (:func:`read_year`)."""
    return read_year(corpus, year, ["abstract"], purpose=purpose)["abstract"].tolist()
