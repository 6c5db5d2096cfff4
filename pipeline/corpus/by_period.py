"""One period's documents from the corpus table: the one way every stage reads them.

The per-period feature stages (frequencies, embeddings), the score stage's extra periods
(staleness, ``score.periods``) and the forecast's reference contexts (the documents of the period
before a forecast period) all read one period of ``data/corpus/abstracts.parquet``. Only the asked
columns are read and the period is filtered in Arrow on the ``date`` column, so a large corpus is
never loaded whole. The period's kind comes from the label itself (``2020H2`` is a half-year,
:mod:`pipeline.corpus.periods`), so no caller passes ``split.period`` around.

A row belongs to a period when its normalised date (``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD``) falls
in it; a row whose date is coarser than the kind (a bare year under quarters) belongs to none (the
split stage has already rejected it, with its reason). A corpus table written before dates existed
has only ``year``: it serves year periods alone. A period the corpus lacks is the user's to fix,
so it is a :class:`pipeline.infra.errors.UserError` naming the params that make a stage read it.
(The dev and test split files are other files, read by the score stage itself.)
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.corpus.periods import PER_YEAR, kind_of, ordinal
from pipeline.infra.errors import UserError

# The params that decide which periods the stages read: the stage graph derives every feature
# period (and so every ``frequencies@<label>``/``embeddings@<label>`` stage) from these.
PERIOD_PARAMS = ("split.period, split.train_first, split.train_last, split.dev, split.test, "
                 "features.window, score.periods, forecast.period, forecast.backtest_periods")


def missing_feature_fix(*stages: str) -> str:
    """The fix for a missing per-period feature file: its stages (e.g. ``frequencies@2019``), or
    the params that would put them in the graph."""
    return (f"run `dvc repro {' '.join(stages)}`; if the graph has no such stage, no param asks "
            f"for that period: check {PERIOD_PARAMS} in params.yaml, then `make graph`")


def _in_period(table: pa.Table, label: str, corpus: str | os.PathLike[str]) -> pa.Array:
    """Boolean mask of the rows of ``table`` (holding ``date`` or ``year``) in period ``label``."""
    kind = kind_of(label)
    if "date" not in table.column_names:
        if kind != "year":
            raise UserError(f"the corpus table has no `date` column, so it has no {kind} periods",
                            path=corpus, fix="rerun the parse and filter stages (`dvc repro "
                                             "filter`), which write dates, or use "
                                             "split.period: year")
        return pc.fill_null(pc.equal(table["year"], int(label)), False)
    date = table["date"].cast(pa.string())
    if kind == "year":
        return pc.fill_null(pc.equal(pc.utf8_slice_codeunits(date, 0, 4), label), False)
    per = PER_YEAR[kind]
    year, part = divmod(ordinal(label), per)
    first, last = part * 12 // per + 1, (part + 1) * 12 // per  # the period's months, 1-12
    month = pc.utf8_slice_codeunits(date, 0, 7)
    inside = pc.and_(pc.greater_equal(month, f"{year:04d}-{first:02d}"),
                     pc.less_equal(month, f"{year:04d}-{last:02d}"))
    return pc.fill_null(pc.and_(pc.greater_equal(pc.utf8_length(date), 7), inside), False)


def read_period(corpus: str | os.PathLike[str], label: str,
                columns: Sequence[str] = ("key", "abstract"), *,
                purpose: str | None = None) -> pd.DataFrame:
    """The rows of period ``label`` (``columns``, corpus order, a fresh RangeIndex).

    A ``"period"`` column, when asked for, holds ``label`` itself. ``purpose`` (e.g.
    ``"forecast 2024H1"``) opens the error message of an empty period.
    """
    label = str(label)
    kind_of(label)  # a ValueError for what is no label, before any I/O
    names = pq.read_schema(corpus).names
    when = ["date"] if "date" in names else ["year"]
    stored = [c for c in columns if c != "period"]
    table = pq.read_table(corpus, columns=list(dict.fromkeys([*when, *stored])))
    rows = table.filter(_in_period(table, label, corpus))
    if rows.num_rows == 0:
        what = f"the corpus has no documents in {label}"
        raise UserError(f"cannot {purpose}: {what}" if purpose else what, path=corpus,
                        fix=f"use a corpus (data.source) that covers {label}, or change the params "
                            f"that make a stage read it ({PERIOD_PARAMS}; then `make graph`)")
    frame = rows.select(stored).to_pandas().reset_index(drop=True)
    if "period" in columns:
        frame["period"] = label
    return frame[list(columns)]


def period_abstracts(corpus: str | os.PathLike[str], label: str, *,
                     purpose: str | None = None) -> list[str]:
    """The abstract texts of period ``label`` in corpus order (:func:`read_period`)."""
    return read_period(corpus, label, ["abstract"], purpose=purpose)["abstract"].tolist()
