"""Period-based train / dev / test splits and the periods of history they need.

The future LM for period i conditions on the documents of periods i-m .. i-1 (the history window
m, paper Section 3). So training on periods ``train_first .. train_last`` and evaluating on ``dev``
and ``test`` needs documents in every period from ``train_first - m`` to ``test - 1``, and the
stages that score or forecast other periods need theirs too. An empty period there would silently
give a model an empty history (or a feature stage nothing to count), so it stops the split stage,
before any training, naming every empty period and a coarser ``split.period`` to try. A period
with documents but fewer than ``min_documents`` only warns: its features are noisy, not wrong.

A document's period comes from its ``date`` (:func:`pipeline.corpus.periods.assign_periods`);
a corpus table without dates (written before they existed) has ``year``, which serves years only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from pipeline.corpus.periods import (
    KINDS,
    NOUN,
    assign_periods,
    check_kind,
    in_time_order,
    ordinal,
    param_label,
    shift,
    span,
)
from pipeline.infra.errors import UserError

SPLIT_COLUMNS = ["key", "period", "title", "abstract"]
REJECT_COLUMNS = ["key", "date", "reason"]


class SplitError(UserError, ValueError):
    """The split periods are inconsistent or the corpus lacks a needed period."""


def coarser(kind: str) -> str | None:
    """The next coarser period kind (``month`` -> ``quarter``), ``None`` for years."""
    i = KINDS.index(check_kind(kind))
    return KINDS[i - 1] if i > 0 else None


@dataclass(frozen=True)
class SplitPeriods:
    """The split's periods as labels of ``kind``; build with :meth:`from_params` to validate."""

    kind: str
    train_first: str
    train_last: str
    dev: str
    test: str
    window: int  # history length m, in periods

    @classmethod
    def from_params(cls, kind: str, train_first: object, train_last: object, dev: object,
                    test: object, window: int) -> SplitPeriods:
        """Labels checked against ``kind`` (a :class:`UserError` naming the key), the history
        window (>= 1 period) and the order ``train_first <= train_last < dev < test``: the one
        statement of these rules, for the split stage and for the stage graph (``make graph``)."""
        check_kind(kind)
        labels = {key: param_label(value, kind, f"split.{key}") for key, value in
                  (("train_first", train_first), ("train_last", train_last), ("dev", dev),
                   ("test", test))}
        if window < 1:
            raise SplitError(f"features.window (the history window m) must be >= 1 period, got "
                             f"{window}", path="params.yaml: features.window",
                             fix="use the number of history periods m (paper: 2)")
        o = {key: ordinal(label) for key, label in labels.items()}
        broken = [f"split.{a} {labels[a]} is after split.{b} {labels[b]}" if a == "train_first"
                  else f"split.{a} {labels[a]} is not before split.{b} {labels[b]}"
                  for a, b in (("train_first", "train_last"), ("train_last", "dev"),
                               ("dev", "test"))
                  if (o[a] > o[b] if a == "train_first" else o[a] >= o[b])]
        if broken:
            raise SplitError(
                "split periods must satisfy train_first <= train_last < dev < test, got train "
                f"{labels['train_first']}-{labels['train_last']}, dev {labels['dev']}, test "
                f"{labels['test']}: {'; '.join(broken)}", path="params.yaml: split",
                fix="order the periods as train_first <= train_last < dev < test")
        return cls(kind, window=window, **labels)

    @property
    def train_periods(self) -> list[str]:
        return span(self.train_first, self.train_last)

    @property
    def history_periods(self) -> list[str]:
        """Periods whose documents some split's history uses: train_first-m .. test-1."""
        return span(shift(self.train_first, -self.window), shift(self.test, -1))

    def split_of(self, label: str) -> str:
        """``train``/``dev``/``test``, ``history`` (only a history period) or ``unused``."""
        o = ordinal(label)
        if ordinal(self.train_first) <= o <= ordinal(self.train_last):
            return "train"
        if label == self.dev:
            return "dev"
        if label == self.test:
            return "test"
        if ordinal(self.train_first) - self.window <= o < ordinal(self.test):
            return "history"
        return "unused"


def document_periods(abstracts: pd.DataFrame, kind: str) -> pd.Series:
    """Each row's period label (``None`` where its date is coarser than ``kind`` or missing):
    from ``date``, or from ``year`` for a table without dates (years only)."""
    if "date" in abstracts.columns:
        return assign_periods(abstracts["date"], kind)
    if kind != "year":
        raise SplitError(f"the corpus table has no `date` column, so it has no {NOUN[kind]}s",
                         path="params.yaml: split.period",
                         fix="rerun the parse and filter stages, which write dates, or use "
                             "split.period: year")
    return abstracts["year"].astype(int).astype(str).astype(object)


def period_rejects(abstracts: pd.DataFrame, periods: pd.Series, kind: str) -> pd.DataFrame:
    """The rows without a period (REJECT_COLUMNS), each with why."""
    missing = periods.isna()
    rows = abstracts.loc[missing]
    dates = rows["date"].tolist() if "date" in rows.columns else [None] * len(rows)
    dates = [str(d) if pd.notna(d) else None for d in dates]
    reason = [f"date coarser than split.period: {kind}" if d else "no date" for d in dates]
    return pd.DataFrame({"key": rows["key"].astype(str).tolist(), "date": dates,
                         "reason": reason}, columns=REJECT_COLUMNS)


def check_periods(periods: pd.Series, split: SplitPeriods, needs: Iterable[str] = (),
                  min_documents: int = 0) -> list[str]:
    """Raise :class:`SplitError` naming every needed period without documents; return a
    warning (none or one) naming each needed period with fewer than ``min_documents``.

    Needed: the split's history (train_first-m .. test-1), dev and test, and ``needs`` (the
    periods other stages read: scored, forecast and report periods, from the stage graph).
    """
    counts = periods.dropna().value_counts()
    needed = in_time_order([*split.history_periods, split.dev, split.test,
                            *(param_label(n, split.kind, "split stage --needs") for n in needs)])
    empty = [p for p in needed if p not in counts.index]
    noun = NOUN[split.kind]
    if empty:
        have = in_time_order(counts.index)
        corpus = f"{have[0]}..{have[-1]}" if have else "none"
        roles = ", ".join(f"{p} ({split.split_of(p)})" if split.split_of(p) != "unused" else p
                          for p in empty)
        bigger = coarser(split.kind)
        fix = (f"use a coarser period, split.period: {bigger}, or choose periods the corpus "
               f"covers (params.yaml: split, features.window, score.periods, forecast.*)"
               if bigger else "choose years the corpus covers (params.yaml: split, "
               "features.window, score.periods, forecast.*) or use a larger corpus (data.source)")
        raise SplitError(f"{_count(len(empty), noun)} the run reads {_have(len(empty))} no "
                         f"documents: {roles}; the corpus has {noun}s {corpus} ({len(have)} "
                         f"non-empty); with a history window of {split.window}, "
                         f"{needed[0]}..{needed[-1]} are read",
                         path="params.yaml: split.period, split, features.window", fix=fix)
    thin = [f"{p} ({int(counts[p])})" for p in needed if int(counts[p]) < min_documents]
    if not thin:
        return []
    return [f"{_count(len(thin), noun)} the run reads {_have(len(thin))} fewer than "
            f"split.min_documents = {min_documents} documents, so "
            f"{'its' if len(thin) == 1 else 'their'} frequencies and scores are noisy: "
            f"{', '.join(thin)}"]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("s" if n != 1 else "")


def _have(n: int) -> str:
    return "has" if n == 1 else "have"


def make_splits(abstracts: pd.DataFrame, periods: pd.Series,
                split: SplitPeriods) -> dict[str, pd.DataFrame]:
    """``{"train", "dev", "test"}`` -> rows of that split (SPLIT_COLUMNS), corpus order.
    ``periods`` is :func:`document_periods` of ``abstracts``."""
    frame = abstracts.assign(period=periods.astype(object))
    known = periods.notna()
    # one ordinal per distinct label, not per row (a large corpus has few periods)
    o = periods.map({p: ordinal(p) for p in periods[known].unique()}).fillna(-1)
    masks = {
        "train": known & o.between(ordinal(split.train_first), ordinal(split.train_last)),
        "dev": periods == split.dev,
        "test": periods == split.test,
    }
    return {name: frame.loc[mask.fillna(False).astype(bool), SPLIT_COLUMNS].reset_index(drop=True)
            for name, mask in masks.items()}


def period_counts(periods: pd.Series, split: SplitPeriods,
                  needs: Iterable[str] = ()) -> pd.DataFrame:
    """Documents per period in time order with each period's role (the paper's Figure 3):
    period, abstracts, split. A period that is in none of the splits' roles but in ``needs``
    (scored for staleness, a forecast's history, ...) is ``read``."""
    counts = periods.dropna().value_counts()
    order = in_time_order(counts.index)
    needed = {str(p) for p in needs}
    roles = [split.split_of(p) for p in order]
    return pd.DataFrame({
        "period": order,
        "abstracts": [int(counts[p]) for p in order],
        "split": [("read" if role == "unused" and p in needed else role)
                  for p, role in zip(order, roles)],
    })
