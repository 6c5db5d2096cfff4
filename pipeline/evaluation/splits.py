"""The dev and test split files as the scoring stages read them: one period each."""

from __future__ import annotations

import os

import pandas as pd

from pipeline.corpus.periods import in_time_order
from pipeline.infra.errors import UserError
from pipeline.infra.io import read_parquet

COLUMNS = ["key", "period", "abstract"]


def read_split(path: str | os.PathLike[str], role: str) -> tuple[str, pd.DataFrame]:
    """The period label and the rows (``COLUMNS``, file order) of the ``role`` (dev or test)
    split, which must hold exactly one period."""
    df = read_parquet(path, columns=COLUMNS)
    df["period"] = df["period"].astype(str)
    periods = in_time_order(df["period"].unique())
    if len(periods) != 1:
        raise UserError(f"the {role} split must hold the abstracts of exactly one period, found "
                        f"{periods or 'no rows'}", path=path,
                        fix=f"check split.{role} and rerun `dvc repro split`")
    return periods[0], df
