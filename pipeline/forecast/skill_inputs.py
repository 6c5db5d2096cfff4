"""The forecast-skill backtest's input: a corpus table's abstracts as words by period.

Any corpus table with ``key``, ``abstract`` and ``date`` (or ``year``) columns — the filter
stage's ``abstracts.parquet`` — in any period kind (:mod:`pipeline.corpus.periods`). Two choices
about which periods enter:

* **consecutive periods only**: the forecasters read a series of consecutive periods, so the
  periods before the corpus's last gap (a period without documents) are left out (the ACL
  export's 1963-1996 are sparse and gapped; its series starts in 1997);
* **the last period may be partial**: an export taken mid-year holds only part of its last
  year's venues. The last period is *complete* when some document is dated in its final month
  (for years: December); otherwise it is no target (it stays readable as past data for nothing:
  no later period follows it). A corpus without month-level dates cannot tell and counts it as
  complete. Documents whose date is coarser than the period kind have no period and are left out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pandas as pd

from pipeline.corpus.periods import PER_YEAR, assign_periods, check_kind, label, ordinal
from pipeline.forecast.words import MIN_COUNT, WordCorpus, word_corpus
from pipeline.infra.errors import UserError


@dataclass(frozen=True)
class SkillInput:
    """The words by period and what was left out: ``undated`` documents without a period of the
    kind, ``before_gap`` documents of periods before the last gap, ``last_complete`` whether the
    last period is a full one (and ``last_note`` why)."""

    corpus: WordCorpus
    kind: str
    undated: int
    before_gap: int
    last_complete: bool
    last_note: str


def _final_month(period: str, kind: str) -> str:
    """``YYYY-MM`` of the last month of ``period``."""
    months = 12 // PER_YEAR[kind]
    first = ordinal(period, kind) * months            # months since year 0 of its first month
    year, month = divmod(first + months - 1, 12)
    return f"{year:04d}-{month + 1:02d}"


def read_skill_input(path: str | os.PathLike[str], kind: str = "year",
                     min_count: int = MIN_COUNT, stopwords: frozenset[str] = frozenset(),
                     drop_stopwords: bool = False) -> SkillInput:
    """The :class:`SkillInput` of the corpus table at ``path`` (module doc)."""
    check_kind(kind, "--period")
    table = pd.read_parquet(path)
    missing = [c for c in ("key", "abstract") if c not in table.columns]
    if missing or not ({"date", "year"} & set(table.columns)):
        raise UserError(f"{path}: the corpus table lacks {missing or ['date']}",
                        fix="pass the filter stage's abstracts.parquet (key, date, abstract)")
    dates = (table["date"] if "date" in table.columns else table["year"]).astype("string")
    periods = assign_periods(dates, kind)
    dated = periods.notna()
    undated = int((~dated).sum())
    table, periods, dates = table[dated], periods[dated].astype(str), dates[dated]
    if table.empty:
        raise UserError(f"{path}: no document has a date of the {kind} kind")
    present = sorted({ordinal(p, kind) for p in periods})
    start = present[0]
    for a, b in zip(present, present[1:]):
        if b != a + 1:
            start = b
    labels = [label(o, kind) for o in range(start, present[-1] + 1)]
    keep = periods.map(lambda p: ordinal(p, kind) >= start)
    before_gap = int((~keep).sum())
    table, periods, dates = table[keep], periods[keep], dates[keep]
    last = labels[-1]
    in_last = dates[periods == last]
    has_months = bool(dates.str.len().ge(7).any())
    final = _final_month(last, kind)
    complete = (not has_months) or bool(in_last.str.slice(0, 7).eq(final).any())
    note = ("no month-level dates: counted as complete" if not has_months else
            f"a document dated {final}" if complete else
            f"partial: its latest document is dated {in_last.dropna().max()}, before {final}")
    groups = {p: frame for p, frame in table.groupby(periods, sort=False)}
    keys = [groups[p]["key"].astype(str).tolist() if p in groups else [] for p in labels]
    texts = [groups[p]["abstract"].astype(str).tolist() if p in groups else [] for p in labels]
    corpus = word_corpus(labels, keys, texts, min_count, stopwords, drop_stopwords)
    return SkillInput(corpus, kind, undated, before_gap, complete, note)
