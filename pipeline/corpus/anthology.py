"""ACL Anthology BibTeX export (``anthology+abstracts.bib.gz``) -> one record per paper.

bibtexparser 2.x defines how the file splits into blocks (v1 needs ~210 s for the 54k-entry
export), but its tokenizer walks every brace, quote, comma and newline in Python (~8 s), so
entries in the export's plain layout are read by a few regular expressions instead
(:mod:`pipeline.corpus.bibfast`), and bibtexparser only parses what lies outside that layout
(comments, ``@string``, damaged entries, stray text); the two readings agree exactly (tested
against a bibtexparser-only parse in tests/test_fuzz_bib.py). Its middlewares are skipped
because the LaTeX one takes ~6 minutes. Instead field values are resolved by
:mod:`pipeline.corpus.bibvalues` (quotes, braces, ``#`` concatenation, month macros such as
``oct # "-" # nov``) and turned into records by :mod:`pipeline.corpus.bibrecords`, which decodes
LaTeX with :func:`pipeline.corpus.latex.latex_to_unicode`. This module is the driver: it reads
the file, splits it into chunks, and turns each chunk's blocks into papers and rejects.

Nothing is dropped silently: an entry that cannot be parsed (truncated, unbalanced, a malformed
field), lacks a year, title or abstract, repeats an earlier key, or holds bytes that are not UTF-8
becomes a *reject* with a reason, its 1-based line and its raw text. Text outside any entry is not
thrown away as a BibTeX comment either (only ``%`` comment lines are): right after an entry it
means an unbalanced ``}`` ended that entry early, so the entry becomes a reject with the text
appended to its raw; elsewhere it is a reject of its own. Quoted values must have balanced braces
(``"a {b c"`` is a reject, not ``a b c``). A file without a single entry is a
:class:`BibFileError`. Large inputs are split at entry boundaries and parsed in several processes;
the result is identical for any number of workers.
"""

from __future__ import annotations

import dataclasses
import gzip
import logging
import re
import zlib
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import bibtexparser
import pandas as pd
from bibtexparser import model

from pipeline.corpus.bibfast import (
    NewlineCounter,
    SimpleEntry,
    Stretch,
    pieces,
    stretch_blocks,
)
from pipeline.corpus.bibfile import (
    EXPORT_FIX,
    BibFileError,
    has_entries,
    no_entries_error,
)
from pipeline.corpus.bibrecords import entry_record
from pipeline.corpus.bibvalues import MONTHS, safe_resolve
from pipeline.corpus.dates import month_number
from pipeline.corpus.periods import date_from_year_month

# `date` is derived from year and month (pipeline.corpus.dates.bibtex_date): the papers contract
# every reader writes (key, year, date, title, abstract), plus the export's own fields.
PAPER_COLUMNS = ["key", "entry_type", "year", "month", "date", "title", "abstract", "venue", "url",
                 "doi", "language", "authors"]
REJECT_COLUMNS = ["key", "line", "reason", "raw"]

_ENTRY_HEAD = re.compile(r"@\s*(\w+)\s*[{(]\s*([^,\s]*)")
_ENTRY_START = re.compile(r"^@", re.MULTILINE)
_STRING_DEF = re.compile(r"^@\s*string\b", re.MULTILINE | re.IGNORECASE)
# read_bib_text decodes with surrogateescape: each byte that is not UTF-8 becomes one of these.
_BAD_BYTE = re.compile("[\udc80-\udcff]")


@dataclass(frozen=True)
class ParseResult:
    papers: pd.DataFrame   # PAPER_COLUMNS, official file order
    rejects: pd.DataFrame  # REJECT_COLUMNS, file order


def read_bib_text(path: str | Path) -> str:
    """Read a ``.bib`` or ``.bib.gz`` file as text, with a clear error when it is corrupt or empty.

    Bytes that are not UTF-8 do not fail the file: they are decoded with ``surrogateescape``
    (one lone surrogate per bad byte, line numbers unchanged) and :func:`parse_bibtex` turns the
    entries holding them into rejects.
    """
    path = Path(path)
    if not path.exists():
        raise BibFileError(f"{path} does not exist: run the `download` stage (dvc repro download)",
                           path=path, fix="dvc repro download")
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:
            raise BibFileError(f"{path} is not a valid gzip file ({err}); it is probably "
                               "truncated or corrupt: download it again "
                               "(dvc repro -f download)", path=path, fix=EXPORT_FIX) from err
    if not has_entries(data):
        raise no_entries_error(path)
    return data.decode("utf-8", errors="surrogateescape")


def _reject(key: str | None, line: int | None, reason: str, raw: str) -> dict[str, object]:
    return {"key": None if key is None else _printable(key), "line": line, "reason": reason,
            "raw": _printable(raw)}


def _failed_reason(block: model.ParsingFailedBlock) -> str:
    error = block.error
    if isinstance(error, bibtexparser.splitter.BlockAbortedException):
        why = error.abort_reason
        # Both messages mean the entry never closed; the wording depends on what follows it
        # (another entry or the end of the input), so normalise it to keep chunking invisible.
        if "Unexpected block start" in why or "end of file" in why:
            return "truncated entry: a field value or the entry is never closed"
        return f"malformed entry: {why.strip().splitlines()[0]}"
    return f"malformed entry: {error}"


@dataclass(frozen=True)
class _Block:
    """One parsed block of a chunk: a decoded paper, or a reject reason."""
    line: int
    key: str | None
    is_entry: bool  # a well-formed entry (it claims its key, even if rejected for content)
    record: dict[str, object] | None
    reason: str | None
    raw: str


def _printable(text: str) -> str:
    """``text`` with each undecodable byte written as ``\\xNN`` (Parquet needs valid UTF-8)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _bad_byte_reason(raw: str, line: int) -> str | None:
    match = _BAD_BYTE.search(raw)
    if match is None:
        return None
    at = line + raw.count("\n", 0, match.start())
    return f"not valid UTF-8: byte 0x{ord(match.group()) - 0xDC00:02x} at line {at}"


def _stray_line(text: str) -> int | None:
    """Index of the first line of ``text`` (outside entries) that is neither blank nor a ``%``
    comment, or None when there is none."""
    for index, line in enumerate(text.split("\n")):
        stripped = line.strip()
        if stripped and not stripped.startswith("%"):
            return index
    return None


def _parse_chunk(args: tuple[str, int], fast: bool = True) -> list[_Block]:
    """Parse one chunk of a BibTeX file; ``line_offset`` = lines before the chunk.

    Entries in the export's plain layout are read by :mod:`pipeline.corpus.bibfast` (regular
    expressions over the whole entry instead of bibtexparser's mark-by-mark Python loop); every
    other stretch of the chunk (comments, ``@string``, damaged entries, stray text) goes through
    bibtexparser exactly as before. ``fast=False`` sends the whole chunk through bibtexparser:
    the reference the fast path is tested against (tests/test_fuzz_bib.py).
    """
    text, line_offset = args
    logging.getLogger("bibtexparser").setLevel(logging.CRITICAL)  # failures become rejects
    chunk_pieces = pieces(text) if fast else [Stretch(0, len(text), "")]
    stretches = {piece.start: stretch_blocks(text, piece) for piece in chunk_pieces
                 if isinstance(piece, Stretch)}
    macros = dict(MONTHS)
    strings: dict[str, str] = {}  # the first definition of a key wins, as in bibtexparser
    for blocks in stretches.values():
        for block in blocks:
            if isinstance(block, model.String):
                strings.setdefault(block.key, block.value)
    macros.update({key.lower(): safe_resolve(value) for key, value in strings.items()})
    check_bytes = _BAD_BYTE.search(text) is not None
    lines = _LineIndex(text, line_offset)
    newlines = NewlineCounter(text)
    out: list[_Block] = []
    after_entry = False  # the previous block was an entry (nothing but whitespace in between)
    for piece in chunk_pieces:
        first_line = newlines.before(piece.start) + 1 + line_offset
        if isinstance(piece, SimpleEntry):
            out.append(_entry_block(first_line, piece.key, piece.entry_type, piece.fields,
                                    text[piece.start:piece.end], macros))
            after_entry = True
            continue
        for block in stretches[piece.start]:
            line = (block.start_line or 0) + first_line
            if isinstance(block, model.ImplicitComment):
                stray = _stray_line(block.raw)
                if stray is not None and after_entry:
                    out[-1] = _stray_block(out[-1], lines.span(out[-1], block.raw), line + stray)
                elif stray is not None:
                    out.append(_stray_block(None, block.raw, line + stray))
                after_entry = False
                continue
            after_entry = isinstance(block, (model.Entry, model.ParsingFailedBlock,
                                             model.DuplicateBlockKeyBlock))
            if isinstance(block, model.DuplicateBlockKeyBlock):
                # Duplicates are decided in parse_bibtex over all chunks: unwrap the entry here.
                block = block.ignore_error_block
            if isinstance(block, model.ParsingFailedBlock):
                head = _ENTRY_HEAD.match(block.raw or "")
                out.append(_Block(line, head.group(2) if head else None, False, None,
                                  _failed_reason(block), block.raw or ""))
            elif isinstance(block, model.Entry):
                out.append(_entry_block(line, block.key, block.entry_type,
                                        ((f.key, f.value) for f in block.fields), block.raw,
                                        macros))
    if check_bytes:  # an entry holding bytes that are not UTF-8 is a reject, whatever else
        out = [b if (bad := _bad_byte_reason(b.raw, b.line)) is None
               else dataclasses.replace(b, record=None, reason=bad) for b in out]
    return out


def _entry_block(line: int, key: str, entry_type: str, fields: Iterable[tuple[str, str]],
                 raw: str, macros: dict[str, str]) -> _Block:
    """A well-formed entry as a paper, or as a reject when its content is not usable."""
    try:
        record = entry_record(key, entry_type, fields, macros)
    except ValueError as err:
        return _Block(line, key, True, None, str(err), raw)
    return _Block(line, key, True, record, None, raw)


class _LineIndex:
    """Exact text of a chunk from an entry's ``@`` to the end of the stray text after it.

    bibtexparser drops the whitespace between blocks, so concatenating their raw texts would not
    give back the input; the line offsets (computed once, only when a stray occurs) locate it.
    """

    def __init__(self, text: str, line_offset: int) -> None:
        self.text, self.line_offset = text, line_offset
        self.starts: list[int] | None = None

    def span(self, entry: _Block, stray_raw: str) -> str:
        if self.starts is None:
            self.starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        begin = self.text.find(entry.raw, self.starts[entry.line - 1 - self.line_offset])
        end = self.text.find(stray_raw, begin + len(entry.raw)) + len(stray_raw)
        return self.text[begin:end]


def _stray_block(previous: _Block | None, text: str, line: int) -> _Block:
    """A reject for text outside entries. Right after an entry it takes that entry's place:
    ``text`` then runs from the entry's ``@`` to the end of the stray text."""
    if previous is None:
        return _Block(line, None, False, None, f"text outside any entry (line {line}; not a "
                      "'%' comment): an entry without its '@', or an unbalanced '}'", text)
    reason = previous.reason or (
        f"text after the entry's closing '}}' (line {line}): an unbalanced '}}' inside a field "
        "ended the entry early")
    return dataclasses.replace(previous, record=None, reason=reason, raw=text)


def split_entries(text: str, n_chunks: int,
                  min_chunk_chars: int = 500_000) -> list[tuple[str, int]]:
    """Split ``text`` at lines starting with ``@`` into about ``n_chunks`` pieces.

    Returns ``(chunk, lines_before_chunk)`` pairs. bibtexparser itself treats a line-initial ``@``
    as the start of a block, so cutting there never changes how an entry parses. Texts shorter
    than ``n_chunks * min_chunk_chars`` stay whole (starting processes would cost more).
    """
    if n_chunks <= 1 or len(text) < n_chunks * min_chunk_chars or _STRING_DEF.search(text):
        return [(text, 0)]  # @string macros must be visible to every entry: keep one chunk
    chunks: list[tuple[str, int]] = []
    start, line = 0, 0
    for k in range(1, n_chunks):
        match = _ENTRY_START.search(text, max(k * len(text) // n_chunks, start + 1))
        if match is None:
            break
        chunks.append((text[start:match.start()], line))
        line += text.count("\n", start, match.start())
        start = match.start()
    chunks.append((text[start:], line))
    return chunks


def parse_bibtex(text: str, workers: int = 1, min_chunk_chars: int = 500_000,
                 source: str | Path = "<text>") -> ParseResult:
    """Parse BibTeX text into papers and rejects (see module docstring).

    The result is the same for every ``workers`` and ``min_chunk_chars`` (see split_entries).
    Raises :class:`BibFileError` naming ``source`` when the text holds no entry at all.
    """
    chunks = split_entries(text, workers, min_chunk_chars)
    if len(chunks) == 1:
        results = [_parse_chunk(chunks[0])]
    else:
        with ProcessPoolExecutor(max_workers=min(workers, len(chunks))) as pool:
            results = list(pool.map(_parse_chunk, chunks))
    if not any(b.raw.startswith("@") for chunk in results for b in chunk):
        raise no_entries_error(source)  # only comments or stray text: not an export
    papers: list[dict[str, object]] = []
    rejects: list[dict[str, object]] = []
    first_line: dict[str, int] = {}
    for block in (b for chunk in results for b in chunk):
        if block.is_entry and block.key in first_line:
            reason = f"duplicate key (first at line {first_line[block.key]})"
            rejects.append(_reject(block.key, block.line, reason, block.raw))
            continue
        if block.is_entry:
            first_line[str(block.key)] = block.line
        if block.record is not None:
            papers.append(block.record)
        else:
            rejects.append(_reject(block.key, block.line, str(block.reason), block.raw))
    return ParseResult(papers=_papers_frame(papers), rejects=_rejects_frame(rejects))


def _papers_frame(records: list[dict[str, object]]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(records, columns=PAPER_COLUMNS)
    frame["year"] = frame["year"].astype("int32")
    # one month_number call per distinct month text ("oct # "-" # nov" occurs 555 times)
    months = {m: month_number(m) for m in frame["month"].dropna().unique()}
    frame["date"] = [date_from_year_month(y, months.get(m) if isinstance(m, str) else None)
                     for y, m in zip(frame["year"].tolist(), frame["month"].tolist())]
    return frame


def _rejects_frame(records: list[dict[str, object]]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(records, columns=REJECT_COLUMNS)
    frame["line"] = frame["line"].astype("Int64")
    return frame.sort_values("line", kind="stable", ignore_index=True)


def parse_file(path: str | Path, workers: int = 1) -> ParseResult:
    """Read and parse an Anthology export (``.bib`` or ``.bib.gz``)."""
    return parse_bibtex(read_bib_text(path), workers=workers, source=path)
