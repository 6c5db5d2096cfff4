"""A time-free control corpus: the dates of some years' documents shuffled among them.

A model that reads time (a recency shift, a history module) should gain nothing over its
time-free control when the corpus holds no time: with the training documents' dates permuted,
every training year is a random sample of the pooled training years, of the same size as the real
year. Run on such a corpus, a gain that stays is a gain of the method, not of time.

Rule: the rows whose ``year`` lies in ``first..last`` keep their text and take the date columns
(``year``, ``month``, ``date``, where present) of another such row, by one permutation drawn from
``numpy.random.default_rng(seed)`` over those rows in corpus order. Every year keeps its number
of documents; rows outside the years, and every other column, stay as they are.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.infra.errors import UserError

DATE_COLUMNS = ("year", "month", "date")


def permute_dates(abstracts: pd.DataFrame, first: int, last: int, seed: int) -> pd.DataFrame:
    """``abstracts`` with the date columns of the rows of years ``first..last`` permuted among
    those rows (module doc); a copy, the same rows in the same order."""
    if first > last:
        raise UserError(f"the permuted years run from {first} to {last}: the first is after the "
                        "last", path="params.yaml: filter.permute_first, filter.permute_last",
                        fix="give the first year, then the last (e.g. 2003 and 2019)")
    years = pd.to_numeric(abstracts["year"], errors="coerce")
    rows = np.flatnonzero(years.between(first, last).to_numpy())
    if len(rows) < 2:
        raise UserError(f"{len(rows)} document(s) dated {first}-{last}: nothing to permute",
                        path="params.yaml: filter.permute_first, filter.permute_last",
                        fix="name years the corpus holds, or null to keep the real dates")
    order = np.random.default_rng(seed).permutation(len(rows))
    out = abstracts.copy()
    for column in (c for c in DATE_COLUMNS if c in out.columns):
        values = out[column].to_numpy(copy=True)
        values[rows] = values[rows[order]]
        out[column] = pd.Series(values, index=out.index, dtype=out[column].dtype)
    return out
