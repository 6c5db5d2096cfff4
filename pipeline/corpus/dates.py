"""A corpus's dates -> the normalised ``YYYY`` | ``YYYY-MM`` | ``YYYY-MM-DD`` the periods read.

Readers accept what real exports hold: a bare year (``2019``, also as a JSON number), a month
(``2019-03``), a day (``2019-03-02``), an ISO date-time (``2019-03-02T10:00:00+00:00``) or a
Parquet date or timestamp; the time part is dropped (a period is never finer than a month).
Anything else — month 13, 30 February,
free text — raises :class:`ValueError` whose message is the reject reason, naming the value, so a
bad date is never silently coarsened or dropped.

BibTeX keeps ``year`` and ``month`` apart, and ``month`` is free text in real exports
(``October-November``, ``27–30 January``, ``7``): :func:`month_number` takes the first month it
finds there; a month it cannot read leaves the date at the year (the entry is still valid).
"""

from __future__ import annotations

import datetime
import re

from pipeline.corpus.periods import date_from_year_month

_DATE = re.compile(r"(\d{4})(?:-(\d{1,2})(?:-(\d{1,2})(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                   r"(?:Z|[+-]\d{2}:?\d{2})?)?)?)?")
_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
# The first month name (or its abbreviation) or month number in free text.
_MONTH_IN_TEXT = re.compile(r"(?<![A-Za-z])(" + "|".join(_MONTH_NAMES) + r")[a-z]*\.?(?![a-z])"
                            r"|(?<![\d])(\d{1,2})(?![\d])", re.IGNORECASE)


def normalise_date(value: object) -> str:
    """``value`` as ``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD``; ValueError (the reject reason)
    when it is not one of the accepted forms or names no real month or day."""
    if isinstance(value, datetime.date):  # a Parquet date or timestamp column
        value = value.isoformat()
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"date {value!r} does not parse (expected YYYY, YYYY-MM, YYYY-MM-DD "
                         "or an ISO date-time)")
    text = str(value).strip()
    match = _DATE.fullmatch(text)
    if match is None:
        raise ValueError(f"date {text!r} does not parse (expected YYYY, YYYY-MM, YYYY-MM-DD or "
                         "an ISO date-time)")
    year, month, day = match.groups()
    if month is None:
        return year
    if not 1 <= int(month) <= 12:
        raise ValueError(f"date {text!r} does not parse: month {int(month)} is not 1-12")
    if day is None:
        return f"{year}-{int(month):02d}"
    try:
        datetime.date(int(year), int(month), int(day))
    except ValueError:
        raise ValueError(f"date {text!r} does not parse: day {int(day)} is not in "
                         f"{year}-{int(month):02d}") from None
    return f"{year}-{int(month):02d}-{int(day):02d}"


def month_number(text: object) -> int | None:
    """The first month named in BibTeX's free-text ``month`` (name, abbreviation or 1-12), or
    None when there is none: ``October-November`` -> 10, ``27–30 January`` -> 1, ``7`` -> 7.

    Numbers that are not 1-12 (days such as ``27``) are skipped, so a day before the month name
    does not count as the month.
    """
    if not isinstance(text, str) or not text:  # None, or NaN from a pandas column
        return None
    for match in _MONTH_IN_TEXT.finditer(text):
        name, number = match.groups()
        if name is not None:
            return _MONTH_NAMES.index(name[:3].lower()) + 1
        if 1 <= int(number) <= 12 and not _has_month_name(text):
            return int(number)
    return None


def _has_month_name(text: str) -> bool:
    return any(m.group(1) for m in _MONTH_IN_TEXT.finditer(text))


def bibtex_date(year: int, month: object) -> str:
    """A BibTeX entry's date: ``YYYY-MM`` when ``month`` names a month, else ``YYYY``."""
    return date_from_year_month(year, month_number(month))
