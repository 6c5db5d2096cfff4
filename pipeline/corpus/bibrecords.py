"""One BibTeX entry -> one paper record (a row of papers.parquet).

Only the fields that end up in papers.parquet are resolved (:func:`pipeline.corpus.bibvalues.
resolve_value`) and LaTeX-decoded (:func:`pipeline.corpus.latex.latex_to_unicode`); an entry
whose key, year, title, abstract or a used field is unusable raises ValueError with the reason
that :mod:`pipeline.corpus.anthology` records as its reject.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pipeline.corpus.bibvalues import MalformedValue, resolve_value
from pipeline.corpus.latex import has_latex, latex_to_unicode

# The BibTeX fields that end up in papers.parquet (only these are resolved and decoded).
_USED_FIELDS = frozenset({"year", "month", "title", "abstract", "booktitle", "journal", "url",
                          "doi", "language", "author"})
_KEY = re.compile(r"[^\s,{}()\"#%'=\\]+")
_YEAR = re.compile(r"\d{4}")
_AUTHOR_SEP = re.compile(r"\s+and\s+")


def entry_record(key: str, entry_type: str, fields: Iterable[tuple[str, str]],
                  macros: dict[str, str]) -> dict[str, object]:
    """Decode one entry from its key, type and raw ``(name, value)`` fields; raises ValueError
    with the reject reason."""
    if not _KEY.fullmatch(key or ""):
        raise ValueError(f"malformed key {key!r}")
    values: dict[str, str] = {}
    for name, raw in fields:
        lowered = name.lower()
        if lowered not in _USED_FIELDS:
            continue  # editor, pages, publisher, ...: not part of the corpus tables
        try:
            values[lowered] = resolve_value(raw, macros)
        except MalformedValue as err:
            raise ValueError(f"malformed field '{name}': {err}") from None

    year = values.get("year", "").strip()
    if not year:
        raise ValueError("missing year")
    if not _YEAR.fullmatch(year):
        raise ValueError(f"invalid year {year!r}")
    abstract = latex_to_unicode(values.get("abstract", ""))
    if not abstract:
        raise ValueError("missing abstract")
    title = latex_to_unicode(values.get("title", ""))
    if not title:
        raise ValueError("missing title")
    get = values.get
    return {
        "key": key,
        "entry_type": entry_type.lower(),
        "year": int(year),
        "month": _optional(get("month")),
        "title": title,
        "abstract": abstract,
        "venue": _optional(get("booktitle")) or _optional(get("journal")) or "",
        "url": _optional(get("url"), decode=False),
        "doi": _optional(get("doi"), decode=False),
        "language": _optional(get("language")),
        "authors": _authors(get("author", "")),
    }


def _optional(value: str | None, decode: bool = True) -> str | None:
    """An optional field: decoded (or only whitespace-folded), None when absent or empty."""
    if value is None:
        return None
    value = latex_to_unicode(value) if decode else " ".join(value.split())
    return value or None


def _authors(value: str) -> str:
    """``A and B`` -> ``A; B``, each name LaTeX-decoded and whitespace-folded.

    Most author lists hold no LaTeX at all: folding the whole list once and splitting it at
    " and " gives the same names as splitting at ``\\s+and\\s+`` and folding each name, without
    a decoder call per name.
    """
    if not has_latex(value):
        return "; ".join(name for name in " ".join(value.split()).split(" and ") if name)
    return "; ".join(latex_to_unicode(name) for name in _AUTHOR_SEP.split(value.strip())
                     if name.strip())
