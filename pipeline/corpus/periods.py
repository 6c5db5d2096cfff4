"""Time periods: years, half-years, quarters or months, named by labels, ordered by ordinals.

A corpus is cut into periods of one kind (``split.period``). Each period has a **label**, which
names it everywhere a user sees a time (params, stage names, file names, reports, plots):

=========  ===========  =============================================
kind       label        ordinal (consecutive integers within a kind)
=========  ===========  =============================================
year       ``2020``     2020
half       ``2020H2``   2020 * 2 + 1        (H1 = 0, H2 = 1)
quarter    ``2020Q3``   2020 * 4 + 2        (Q1 = 0 .. Q4 = 3)
month      ``2020-07``  2020 * 12 + 6       (January = 0)
=========  ===========  =============================================

and an **ordinal**, an integer that is consecutive within a kind, so the paper's history window
(period ``i`` is predicted from periods ``i-m .. i-1``, Section 3) is plain integer arithmetic,
and periods sort in time, not alphabetically. For years the ordinal *is* the year and the label
its decimal string, so the default (years) names every file and number exactly as before.

A document's period comes from its ``date`` (``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``, as the
readers normalise it): a date coarser than the period kind (a bare year under quarters) has no
period (:func:`period_of`, :func:`assign_periods` return ``None``), and the split stage rejects
that document with its reason. No I/O, no torch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import pandas as pd

from pipeline.infra.errors import UserError

#: Periods per year of each kind; the keys are the values ``split.period`` accepts.
PER_YEAR = {"year": 1, "half": 2, "quarter": 4, "month": 12}
KINDS = tuple(PER_YEAR)
#: How a report names one period of each kind ("each half-year", "the test quarter").
NOUN = {"year": "year", "half": "half-year", "quarter": "quarter", "month": "month"}

_LABEL = {
    "year": re.compile(r"(\d{4})"),
    "half": re.compile(r"(\d{4})H([12])"),
    "quarter": re.compile(r"(\d{4})Q([1-4])"),
    "month": re.compile(r"(\d{4})-(0[1-9]|1[0-2])"),
}
_EXAMPLE = {"year": "2020", "half": "2020H2", "quarter": "2020Q3", "month": "2020-07"}
_DATE = re.compile(r"(\d{4})(?:-(\d{2}))?(?:-\d{2})?")


def check_kind(kind: str, key: str = "split.period") -> str:
    """``kind`` if it is a period kind, else a :class:`UserError` naming ``key``."""
    if kind not in PER_YEAR:
        raise UserError(f"unknown period kind {kind!r}", path=f"params.yaml: {key}",
                        fix=f"use one of {', '.join(KINDS)}")
    return kind


def kind_of(label: str | int) -> str:
    """The kind of a label (``"2020H2"`` -> ``"half"``); ValueError when it is no label."""
    text = str(label)
    for kind, pattern in _LABEL.items():
        if pattern.fullmatch(text):
            return kind
    raise ValueError(f"{text!r} is not a period label (e.g. 2020, 2020H2, 2020Q3, 2020-07)")


def ordinal(label: str | int, kind: str | None = None) -> int:
    """The ordinal of ``label`` (module table). With ``kind``, the label must be of that kind."""
    text = str(label)
    found = kind_of(text)
    if kind is not None and found != kind:
        raise ValueError(f"{text!r} is a {found} label, expected a {kind} label such as "
                         f"{_EXAMPLE[kind]}")
    match = _LABEL[found].fullmatch(text)
    assert match is not None
    year = int(match.group(1))
    part = int(match.group(2)) - 1 if found != "year" else 0
    return year * PER_YEAR[found] + part


def label(ordinal_: int, kind: str) -> str:
    """The label of ``ordinal_`` in ``kind`` (inverse of :func:`ordinal`)."""
    year, part = divmod(int(ordinal_), PER_YEAR[check_kind(kind)])
    if kind == "year":
        return f"{year}"
    if kind == "half":
        return f"{year}H{part + 1}"
    if kind == "quarter":
        return f"{year}Q{part + 1}"
    return f"{year}-{part + 1:02d}"


def param_label(value: object, kind: str, key: str) -> str:
    """A period param (``split.dev`` and the like) as a label of ``kind``, or a
    :class:`UserError` naming ``key`` and an example. YAML reads ``2020`` as an int: accepted."""
    text = str(value).strip()
    try:
        ordinal(text, kind)
    except ValueError as err:
        raise UserError(f"{key} = {value!r}: {err}", path=f"params.yaml: {key}",
                        fix=f"with split.period: {kind}, write periods like {_EXAMPLE[kind]}"
                            " (or change split.period)") from None
    return text


def shift(label_: str | int, n: int) -> str:
    """The label ``n`` periods after (``n`` < 0: before) ``label_``, same kind."""
    kind = kind_of(label_)
    return label(ordinal(label_) + n, kind)


def span(first: str | int, last: str | int) -> list[str]:
    """Labels from ``first`` to ``last`` inclusive (same kind), in time order."""
    kind = kind_of(first)
    return [label(o, kind) for o in range(ordinal(first), ordinal(last, kind) + 1)]


def in_time_order(labels: Iterable[str | int]) -> list[str]:
    """Distinct labels sorted in time (``2020-10`` after ``2020-09``, ``2020H2`` after ``2020H1``)."""
    return sorted({str(x) for x in labels}, key=ordinal)


def period_of(date: str | None, kind: str) -> str | None:
    """The period label of a normalised ``date`` in ``kind``; ``None`` when the date is missing or
    coarser than ``kind`` (a bare year under half/quarter/month)."""
    if date is None or (isinstance(date, float) and date != date):  # None or NaN
        return None
    match = _DATE.fullmatch(str(date))
    if match is None:
        raise ValueError(f"{date!r} is not a normalised date (YYYY, YYYY-MM or YYYY-MM-DD)")
    year, month = int(match.group(1)), match.group(2)
    if kind == "year":
        return f"{year}"
    if month is None:
        return None
    return label(year * PER_YEAR[kind] + (int(month) - 1) * PER_YEAR[kind] // 12, kind)


def assign_periods(dates: pd.Series, kind: str) -> pd.Series:
    """:func:`period_of` over a column of normalised dates, vectorised: a string Series of
    labels, missing (``None``) where the date is coarser than ``kind``."""
    check_kind(kind)
    text = dates.astype("string")
    year = pd.to_numeric(text.str.slice(0, 4), errors="raise").astype("Int64")
    if kind == "year":
        return year.astype("string")
    month = pd.to_numeric(text.str.slice(5, 7).replace("", pd.NA), errors="raise").astype("Int64")
    ordinals = year * PER_YEAR[kind] + (month - 1) * PER_YEAR[kind] // 12
    names = {o: label(int(o), kind) for o in ordinals.dropna().unique()}  # per period, not row
    return pd.Series([None if pd.isna(o) else names[o] for o in ordinals],
                     index=dates.index, dtype="object")


def date_from_year_month(year: int, month: int | None) -> str:
    """The normalised date of a year and an optional month 1-12."""
    return f"{int(year):04d}" if month is None else f"{int(year):04d}-{int(month):02d}"


def ordinals(labels: Sequence[str | int]) -> list[int]:
    """:func:`ordinal` of each label."""
    return [ordinal(x) for x in labels]
