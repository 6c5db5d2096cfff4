"""ACL Anthology BibTeX export (``anthology+abstracts.bib.gz``) -> one record per paper.

bibtexparser 2.x defines how the file splits into blocks (v1 needs ~210 s for the 54k-entry
export), but its tokenizer walks every brace, quote, comma and newline in Python (~8 s), so
entries in the export's plain layout are read by a few regular expressions instead, and
bibtexparser only parses what lies outside that layout (comments, ``@string``, damaged entries,
stray text); the two readings agree exactly (see the "Fast path" section below, tested against a
bibtexparser-only parse in tests/test_fuzz_bib.py). Its middlewares are skipped because the LaTeX
one takes ~6 minutes. Instead this module resolves field values itself (quotes, braces, ``#``
concatenation, month macros such as ``oct # "-" # nov``) and decodes LaTeX with
:func:`pipeline.corpus.latex.latex_to_unicode`.

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

import bisect
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

from pipeline.corpus.bibfile import (
    EXPORT_FIX,
    BibFileError,
    has_entries,
    no_entries_error,
)
from pipeline.corpus.latex import has_latex, latex_to_unicode

PAPER_COLUMNS = ["key", "entry_type", "year", "month", "title", "abstract", "venue", "url", "doi",
                 "language", "authors"]
REJECT_COLUMNS = ["key", "line", "reason", "raw"]

# Standard BibTeX month macros (plain BibTeX expands them to these names).
MONTHS = {m[:3].lower(): m for m in ("January", "February", "March", "April", "May", "June",
                                     "July", "August", "September", "October", "November",
                                     "December")}

# The BibTeX fields that end up in papers.parquet (only these are resolved and decoded).
_USED_FIELDS = frozenset({"year", "month", "title", "abstract", "booktitle", "journal", "url",
                          "doi", "language", "author"})
_KEY = re.compile(r"[^\s,{}()\"#%'=\\]+")
_YEAR = re.compile(r"\d{4}")
_AUTHOR_SEP = re.compile(r"\s+and\s+")
_ENTRY_HEAD = re.compile(r"@\s*(\w+)\s*[{(]\s*([^,\s]*)")
_ENTRY_START = re.compile(r"^@", re.MULTILINE)
_STRING_DEF = re.compile(r"^@\s*string\b", re.MULTILINE | re.IGNORECASE)
_DELIMS = re.compile(r'[{}"]')
_MACRO = re.compile(r"[^\s#{}\"]+")
# read_bib_text decodes with surrogateescape: each byte that is not UTF-8 becomes one of these.
_BAD_BYTE = re.compile("[\udc80-\udcff]")


def _braced_pattern(depth: int) -> str:
    """Regular expression source for ``{...}`` with balanced braces nested up to ``depth`` deep.

    A brace right after a backslash is a character, not a delimiter (as in :func:`_closing` and
    in bibtexparser's marks); the quantifiers are possessive so that ``\\}`` is never re-read as
    a closing brace by backtracking.
    """
    pattern = r"\{(?:[^{}\\]++|\\[{}]?+)*+\}"
    for _ in range(depth - 1):
        pattern = r"\{(?:[^{}\\]++|\\[{}]?+|" + pattern + r")*+\}"
    return pattern


# Deeper nesting is legal, but rare enough to take the slow paths.
_MAX_DEPTH = 6
_BRACED = _braced_pattern(_MAX_DEPTH)
# One quoted or braced value with balanced braces: what resolve_value returns without its
# outer delimiters (a '"' inside braces is a character, one outside them ends the value).
_BALANCED_QUOTED = re.compile(r'"(?:[^{}\\"]++|\\[{}]?+|' + _BRACED + r')*+"')
_BALANCED_BRACED = re.compile(_BRACED)


class MalformedValue(ValueError):
    """A field value that is not valid BibTeX (unbalanced quotes/braces, stray text)."""


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


def resolve_value(raw: str, macros: dict[str, str] | None = None) -> str:
    """Resolve a raw BibTeX value: ``"..."``, ``{...}``, numbers, macros and ``#`` concatenation.

    The outermost delimiters are removed; inner braces are kept (LaTeX decoding removes them).
    Unknown macros resolve to their own name. Raises :class:`MalformedValue` on bad syntax.
    """
    opener = raw[:1]
    if ((opener == '"' and _BALANCED_QUOTED.fullmatch(raw))
            or (opener == "{" and _BALANCED_BRACED.fullmatch(raw))):
        return raw[1:-1]  # fast path: the usual single value, its braces balanced
    macros = MONTHS if macros is None else macros
    parts: list[str] = []
    pos, end = 0, len(raw)
    while True:
        while pos < end and raw[pos].isspace():
            pos += 1
        if pos >= end:
            raise MalformedValue("empty value" if not parts else "dangling '#'")
        opener = raw[pos]
        if opener in "\"{":
            close = _closing(raw, pos)
            parts.append(raw[pos + 1:close])
            pos = close + 1
        else:
            match = _MACRO.match(raw, pos)
            if match is None:
                raise MalformedValue(f"unexpected {raw[pos]!r}")
            token = match.group()
            parts.append(token if token.isdigit() else macros.get(token.lower(), token))
            pos = match.end()
        while pos < end and raw[pos].isspace():
            pos += 1
        if pos >= end:
            return "".join(parts)
        if raw[pos] != "#":
            raise MalformedValue(f"stray text after a value: {raw[pos:pos + 30]!r}")
        pos += 1


def _closing(raw: str, start: int) -> int:
    """Index of the delimiter closing the quote or brace opened at ``raw[start]``."""
    quoted = raw[start] == '"'
    depth = 0 if quoted else 1
    for match in _DELIMS.finditer(raw, start + 1):
        char = match.group()
        if raw[match.start() - 1] == "\\" and char in "{}":
            continue  # \{ and \} are escaped characters, not grouping
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth < 0:
                raise MalformedValue("unbalanced '}'" + (" inside a quoted value" if quoted else ""))
            if depth == 0 and not quoted:
                return match.start()
        elif quoted and depth == 0:
            return match.start()
    if quoted and depth > 0:
        raise MalformedValue("unbalanced '{' inside a quoted value")
    raise MalformedValue("unterminated quote" if quoted else "unbalanced '{'")


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


def _entry_record(key: str, entry_type: str, fields: Iterable[tuple[str, str]],
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

    Entries in the export's plain layout are read by :func:`_simple_entry` (regular expressions
    over the whole entry instead of bibtexparser's mark-by-mark Python loop); every other
    stretch of the chunk (comments, ``@string``, damaged entries, stray text) goes through
    bibtexparser exactly as before. ``fast=False`` sends the whole chunk through bibtexparser:
    the reference the fast path is tested against (tests/test_fuzz_bib.py).
    """
    text, line_offset = args
    logging.getLogger("bibtexparser").setLevel(logging.CRITICAL)  # failures become rejects
    pieces = _pieces(text) if fast else [_Stretch(0, len(text), "")]
    stretches = {piece.start: _stretch_blocks(text, piece) for piece in pieces
                 if isinstance(piece, _Stretch)}
    macros = dict(MONTHS)
    strings: dict[str, str] = {}  # the first definition of a key wins, as in bibtexparser
    for blocks in stretches.values():
        for block in blocks:
            if isinstance(block, model.String):
                strings.setdefault(block.key, block.value)
    macros.update({key.lower(): _safe_resolve(value) for key, value in strings.items()})
    check_bytes = _BAD_BYTE.search(text) is not None
    lines = _LineIndex(text, line_offset)
    newlines = _NewlineCounter(text)
    out: list[_Block] = []
    after_entry = False  # the previous block was an entry (nothing but whitespace in between)
    for piece in pieces:
        first_line = newlines.before(piece.start) + 1 + line_offset
        if isinstance(piece, _SimpleEntry):
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
        record = _entry_record(key, entry_type, fields, macros)
    except ValueError as err:
        return _Block(line, key, True, None, str(err), raw)
    return _Block(line, key, True, record, None, raw)


# --- Fast path: entries in the export's plain layout, read without bibtexparser -------------
#
# bibtexparser walks every "mark" ({ } " , = newline) in Python (4.6M of them in the export:
# ~8 s). An entry in the plain layout
#     @type{key,
#         name = "value" | {value with {nested} braces} | macro,
#         ...
#     }
# followed by nothing but whitespace up to the next line-initial "@" is read here with a few
# regular expressions instead. The layout is deliberately narrow: only entries on which
# bibtexparser provably yields the same key, type, fields, raw text and line are accepted; any
# other entry (and whatever follows it up to the next plain one) is handed to bibtexparser.
# That split is exact because bibtexparser starts a new block at every line-initial
# ``@type{``, whatever state it is in, so the stretch between two plain entries parses the same
# on its own (with the next entry's ``@type{`` appended so that its end looks the same).

# bibtexparser treats these block types specially (by prefix): never on the fast path.
_SPECIAL_BLOCKS = ("comment", "preamble", "string")
# Line-initial "@" (a MULTILINE "^@" is ~10x slower: "^" is tried at every position).
_LINE_AT = re.compile(r"\n@")
# A quoted value: a '"' right after a backslash is a character (as for bibtexparser), and the
# closing quote must not follow a '{' (bibtexparser reads {"} inside quotes as a character).
_QUOTED = r'"(?:[^"\\]++|\\"?+)*+(?<![\\{])"'
# A value: quoted, braced or a bare word (number or macro), '#'-concatenated.
_PART = "(?:" + _QUOTED + "|" + _BRACED + r"|\w++)"
_VALUE = _PART + r"(?:\s*+#\s*+" + _PART + r")*+"
_NAME = r"[A-Za-z_][\w\-]*+"
_FIELD = r"\s*+" + _NAME + r"\s*+=\s*+" + _VALUE + r"\s*+"
# The whole entry in one match (C speed), then its fields in one findall.
_SIMPLE_ENTRY = re.compile(r"@([A-Za-z]+)\{([^\s,{}()\"#%'=\\@]+),(?:" + _FIELD + ",)*+(?:"
                           + _FIELD + r")?+\s*+\}")
_SIMPLE_FIELD = re.compile(r"\s*+(" + _NAME + r")\s*+=\s*+(" + _VALUE + r")\s*+[,}]")
_SPACES = re.compile(r"\s*+")


@dataclass(frozen=True, slots=True)
class _SimpleEntry:
    """A plain-layout entry: ``text[start:end]`` from its ``@`` to its closing ``}``."""
    start: int
    end: int
    entry_type: str  # lower case, as bibtexparser gives it
    key: str
    fields: list[tuple[str, str]]  # (name, raw value) in file order


@dataclass(frozen=True, slots=True)
class _Stretch:
    """``text[start:end]``, parsed by bibtexparser. ``sentinel`` is the next plain entry's
    ``@type{`` (closed by ``}``), or "" at the end of the chunk: appended to the stretch, it ends
    an unterminated block exactly as the real next entry does; its own block is dropped."""
    start: int
    end: int
    sentinel: str


def _unsafe_positions(text: str) -> list[int]:
    """Sorted positions where bibtexparser would not read a plain entry as the regular
    expressions do: an indented ``@`` at the start of a line (it ends the entry early) and a
    newline right after a backslash (it does not count that line). One pass over the text."""
    found = []
    at = text.find("@")
    while at != -1:
        if at and text[at - 1] != "\n":  # line-initial "@"s are entry starts (or end them)
            line_start = text.rfind("\n", 0, at) + 1
            if text[line_start:at].isspace():
                found.append(at)
        at = text.find("@", at + 1)
    escaped = text.find("\\\n")
    while escaped != -1:
        found.append(escaped)
        escaped = text.find("\\\n", escaped + 1)
    return sorted(found)


def _simple_entry(text: str, start: int, stop: int, unsafe: list[int]) -> _SimpleEntry | None:
    """The plain-layout entry at ``text[start]`` if it is one and only whitespace follows it up
    to ``stop`` (the next line-initial ``@`` or the end), else None."""
    entry = _SIMPLE_ENTRY.match(text, start, stop)
    if entry is None or entry.group(1).lower().startswith(_SPECIAL_BLOCKS):
        return None
    end = entry.end()
    first_unsafe = bisect.bisect_left(unsafe, start)
    if ((first_unsafe < len(unsafe) and unsafe[first_unsafe] < end)
            or _SPACES.match(text, end, stop).end() != stop):  # type: ignore[union-attr]
        return None
    fields = _SIMPLE_FIELD.findall(text, entry.end(2) + 1, end)
    if len({name for name, _ in fields}) != len(fields):
        return None  # a repeated field: bibtexparser's DuplicateFieldKeyBlock
    return _SimpleEntry(start, end, entry.group(1).lower(), entry.group(2), fields)


def _pieces(text: str) -> list[_SimpleEntry | _Stretch]:
    """``text`` as plain entries and the stretches between them, in order (blank gaps left out)."""
    starts = [match.start() + 1 for match in _LINE_AT.finditer(text)]
    if text.startswith("@"):
        starts.insert(0, 0)
    unsafe = _unsafe_positions(text)
    pieces: list[_SimpleEntry | _Stretch] = []
    done = 0  # text[:done] is covered
    for index, start in enumerate(starts):
        stop = starts[index + 1] if index + 1 < len(starts) else len(text)
        entry = _simple_entry(text, start, stop, unsafe)
        if entry is None:
            continue
        if not _blank(text, done, start):
            sentinel = text[start:text.index("{", start) + 1] + "}"
            pieces.append(_Stretch(done, start, sentinel))
        pieces.append(entry)
        done = stop
    if not _blank(text, done, len(text)):
        pieces.append(_Stretch(done, len(text), ""))
    return pieces


def _blank(text: str, start: int, end: int) -> bool:
    return _SPACES.match(text, start, end).end() == end  # type: ignore[union-attr]


def _stretch_blocks(text: str, stretch: _Stretch) -> list[model.Block]:
    """bibtexparser's blocks for a stretch (start lines relative to the stretch)."""
    library = bibtexparser.parse_string(text[stretch.start:stretch.end] + stretch.sentinel,
                                        parse_stack=[])
    return library.blocks[:-1] if stretch.sentinel else library.blocks


class _NewlineCounter:
    """Line numbers as bibtexparser counts them: newlines before a position, except a newline
    right after a backslash (not a "mark" for its tokenizer). Positions must not decrease."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.count = text, 0, 0

    def before(self, pos: int) -> int:
        self.count += (self.text.count("\n", self.pos, pos)
                       - self.text.count("\\\n", max(self.pos - 1, 0), pos))
        self.pos = pos
        return self.count


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


def _safe_resolve(raw: str) -> str:
    try:
        return resolve_value(raw, {})
    except MalformedValue:
        return raw


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
    return frame


def _rejects_frame(records: list[dict[str, object]]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(records, columns=REJECT_COLUMNS)
    frame["line"] = frame["line"].astype("Int64")
    return frame.sort_values("line", kind="stable", ignore_index=True)


def parse_file(path: str | Path, workers: int = 1) -> ParseResult:
    """Read and parse an Anthology export (``.bib`` or ``.bib.gz``)."""
    return parse_bibtex(read_bib_text(path), workers=workers, source=path)
