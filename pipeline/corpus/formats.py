"""Which kind of corpus file this is, read from its content, not its name.

``data.source`` may be a BibTeX export (the ACL Anthology's), CSV, TSV or JSON Lines — each
optionally gzipped — or Parquet. A suffix says little (``corpus.txt`` may be TSV, a server may
send HTML under any name), so :func:`detect` looks at the bytes: the gzip magic, Parquet's
``PAR1``, a JSON object per line, a line starting ``@type{``, a delimiter that splits the first
lines into the same number of fields. A file that is none of them is a :class:`FormatError` that
says what was found ("gzip-compressed text whose first line is ...", "an HTML page", "binary
data") and lists the formats accepted: the download stage raises it, so a wrong file stops the
first stage instead of parsing to an empty corpus. The parse stage calls :func:`detect` again on
the copy (it reads only the first MiB), so no stage has to trust a file name.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from pipeline.infra.errors import UserError

Format = Literal["bibtex", "csv", "tsv", "jsonl", "parquet"]
ACCEPTED = ("BibTeX (.bib), CSV, TSV, JSON Lines (each optionally gzipped) or Parquet")
HEAD_BYTES = 1 << 20   # how much of the (decompressed) start detection reads
_SNIFF_LINES = 20
_ENTRY_AT_LINE_START = re.compile(rb"^[ \t]*@[ \t]*[A-Za-z]+[ \t]*[{(]", re.MULTILINE)
_CHUNK = 1 << 20


class FormatError(UserError):
    """The file is not one of the corpus formats (or not a readable one)."""


@dataclass(frozen=True)
class Detected:
    """What :func:`detect` found: the format, whether it is gzipped, the CSV/TSV dialect."""
    format: Format
    gzipped: bool
    delimiter: str | None = None   # csv/tsv only
    quotechar: str = '"'

    def describe(self) -> str:
        names = {"bibtex": "BibTeX", "csv": "CSV", "tsv": "TSV", "jsonl": "JSON Lines",
                 "parquet": "Parquet"}
        return ("gzip-compressed " if self.gzipped else "") + names[self.format]


def open_binary(path: str | Path, gzipped: bool) -> BinaryIO:
    """The file's (decompressed) bytes as a stream."""
    return gzip.open(path, "rb") if gzipped else open(path, "rb")  # type: ignore[return-value]


def _head(path: Path, gzipped: bool, source: str | Path) -> bytes:
    with open_binary(path, gzipped) as stream:
        try:
            return stream.read(HEAD_BYTES)
        except (OSError, EOFError, zlib.error) as err:
            raise FormatError(f"{source} is not a valid, complete gzip file ({err})", path=source,
                              fix="fetch it again or point `data.source` in params.yaml at a "
                                  "good copy") from err


def _lines(text: str, cut: bool) -> list[str]:
    """The first non-blank lines of ``text`` (``cut``: the text is a prefix of the file, so its
    last line may be incomplete and is left out)."""
    lines = text.split("\n")
    if cut and len(lines) > 1:
        lines = lines[:-1]
    return [line.rstrip("\r") for line in lines if line.strip()][:_SNIFF_LINES]


def _is_jsonl(lines: list[str]) -> bool:
    """At least half of the first lines are JSON objects (a bad line does not hide the format:
    it becomes a reject)."""
    objects = 0
    for line in lines:
        if line.lstrip().startswith("{"):
            try:
                objects += isinstance(json.loads(line), dict)
            except ValueError:
                continue
    return objects > 0 and objects * 2 >= len(lines)


def _dialect(text: str, lines: list[str], cut: bool) -> tuple[str, str] | None:
    """(delimiter, quotechar) when the start reads as a table: a header of at least two columns
    and, if there are further records, at least one with the header's number of fields (rows
    with another count become rejects)."""
    try:
        dialect = csv.Sniffer().sniff("\n".join(lines), delimiters=",\t;|")
    except csv.Error:
        return None
    delimiter = dialect.delimiter
    if delimiter not in lines[0]:  # the header holds the delimiter (texts may hold commas)
        delimiter = next((d for d in "\t,;|" if d in lines[0]), delimiter)
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter,
                           quotechar=dialect.quotechar or '"'))
    rows = [r for r in rows[:-1 if cut and len(rows) > 2 else None] if r][:_SNIFF_LINES]
    if not rows or len(rows[0]) < 2:
        return None
    if rows[1:] and not any(len(r) == len(rows[0]) for r in rows[1:]):
        return None
    return delimiter, dialect.quotechar or '"'


def _has_entry(path: Path, gzipped: bool) -> bool:
    """Whether an entry start (``@type{`` at a line start) occurs anywhere in the file."""
    tail = b""
    with open_binary(path, gzipped) as stream:
        while chunk := stream.read(_CHUNK):
            if _ENTRY_AT_LINE_START.search(tail + chunk):
                return True
            tail = chunk[-64:]
    return False


def _found(head: bytes, gzipped: bool, lines: list[str]) -> str:
    """What the file is, in words, for the error message."""
    prefix = "gzip-compressed " if gzipped else ""
    if not head.strip():
        return f"{prefix}empty text" if gzipped else "an empty file"
    if b"\0" in head[:4096]:
        return f"{prefix}binary data (first bytes {head[:8].hex(' ')})"
    first = lines[0].strip() if lines else ""
    if re.match(r"<(!doctype html|html|\?xml)", first, re.IGNORECASE):
        return f"{'a ' if gzipped else 'an '}{prefix}HTML/XML document whose first line is {first[:80]!r}"
    return f"{prefix}text whose first line is {first[:80]!r}"


def not_a_corpus(source: str | Path, found: str) -> FormatError:
    return FormatError(f"{source} is not a corpus file: found {found}; accepted formats: "
                       f"{ACCEPTED}", path=source,
                       fix="point `data.source` in params.yaml at a corpus file (e.g. "
                           "https://aclanthology.org/anthology+abstracts.bib.gz, or your own "
                           "CSV / JSON Lines with `data.columns` naming its id, date and text "
                           "columns) and run `dvc repro`")


def detect(path: str | Path, source: str | Path | None = None) -> Detected:
    """The format of the file at ``path`` (``source`` names it in messages), or a
    :class:`FormatError` saying what was found instead."""
    path = Path(path)
    source = path if source is None else source
    with open(path, "rb") as stream:
        magic = stream.read(4)
    if magic == b"PAR1":
        return Detected("parquet", False)
    gzipped = magic[:2] == b"\x1f\x8b"
    head = _head(path, gzipped, source)
    if gzipped and head[:4] == b"PAR1":
        raise not_a_corpus(source, "gzip-compressed Parquet (Parquet compresses inside: give "
                                   "the .parquet file itself)")
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    cut = len(head) == HEAD_BYTES
    lines = _lines(text, cut) if b"\0" not in head[:4096] else []
    if lines and _is_jsonl(lines):
        return Detected("jsonl", gzipped)
    if _ENTRY_AT_LINE_START.search(head):
        return Detected("bibtex", gzipped)
    is_markup = bool(lines) and lines[0].lstrip().startswith("<")
    if lines and not is_markup and (dialect := _dialect(text, lines, cut)) is not None:
        delimiter, quote = dialect
        return Detected("tsv" if delimiter == "\t" else "csv", gzipped, delimiter, quote)
    if head.strip() and not is_markup and b"\0" not in head[:4096] and _has_entry(path, gzipped):
        return Detected("bibtex", gzipped)  # entries after more than HEAD_BYTES of comments
    raise not_a_corpus(source, _found(head, gzipped, lines))
