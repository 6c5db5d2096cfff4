"""CSV, TSV, JSON Lines and Parquet corpora -> papers.parquet, streamed in batches.

A user's corpus can be large (a 1,000,000-document JSON Lines file is ~1 GB), so rows are read
one at a time (orjson per JSON line; the csv module, which keeps quoted newlines inside a field;
Parquet row groups) and written with :class:`pyarrow.parquet.ParquetWriter` every
``batch_rows`` rows: memory holds one batch plus the set of ids seen, never the file
(benchmarks/read_corpus.py measures it).

``data.columns`` (:class:`pipeline.infra.schema.params.ColumnsConfig`) names the four fields; the
output is the papers contract (docs/formats.md): ``key`` (str), ``year`` (int32), ``date``
(normalised, :mod:`pipeline.corpus.dates`), ``title`` ("" when absent) and ``abstract``. Nothing is
dropped silently: a malformed line (bad JSON, a wrong field count), no id, no date, a date that does
not parse, no text or a repeated id (the first is kept) becomes a reject with its line, reason and
raw text. A file with no usable row at all is a :class:`pipeline.infra.errors.UserError` naming the
most common reasons (usually a wrong ``data.columns``).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.corpus.dates import normalise_date
from pipeline.corpus.formats import Detected, open_binary
from pipeline.infra.errors import UserError
from pipeline.infra.io import atomic_path
from pipeline.infra.schema.params import ColumnsConfig

SCHEMA = pa.schema([("key", pa.string()), ("year", pa.int32()), ("date", pa.string()),
                    ("title", pa.string()), ("abstract", pa.string())])
REJECT_COLUMNS = ["key", "line", "reason", "raw"]
_RAW_CHARS = 2000  # a reject keeps this much of its raw line (a bad 1 MB line stays readable)

# (line, the raw line as read — bytes, CSV fields or a Parquet record, turned into text only for
# a reject —, the record's fields or None, the reason when None)
Row = tuple[int, object, "dict[str, Any] | None", "str | None"]


@dataclass(frozen=True)
class TableResult:
    papers: int             # rows written to the papers Parquet
    rejects: pd.DataFrame   # REJECT_COLUMNS, file order


def json_rows(path: Path, detected: Detected) -> Iterator[Row]:
    with open_binary(path, detected.gzipped) as stream:
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError as err:
                yield number, line, None, f"malformed line: not valid JSON ({err})"
                continue
            if isinstance(value, dict):
                yield number, line, value, None
            else:
                yield number, line, None, (f"malformed line: a JSON {type(value).__name__} "
                                           "where an object was expected")


def delimited_rows(path: Path, detected: Detected) -> Iterator[Row]:
    csv.field_size_limit(1 << 30)  # the default (128 KiB) would fail on a long document
    with io.TextIOWrapper(open_binary(path, detected.gzipped), encoding="utf-8",
                          errors="backslashreplace", newline="") as text:
        reader = csv.reader(text, delimiter=detected.delimiter or ",",
                            quotechar=detected.quotechar)
        header = next(reader, [])
        if header:
            header[0] = header[0].lstrip("\ufeff")
        start = reader.line_num + 1
        while True:
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as err:  # e.g. a NUL byte: that record is a reject, not the file
                line, start = start, reader.line_num + 1
                yield line, [], None, f"malformed line: {err}"
                continue
            line, start = start, reader.line_num + 1
            if not fields:
                continue  # a blank line holds no document
            if len(fields) != len(header):
                yield line, fields, None, (f"malformed line: wrong number of fields "
                                           f"({len(fields)} where the header has {len(header)})")
            else:
                yield line, fields, dict(zip(header, fields)), None


def parquet_rows(path: Path, columns: ColumnsConfig, batch_rows: int) -> Iterator[Row]:
    stored = pq.ParquetFile(path)
    names = set(stored.schema_arrow.names)
    wanted = [c for c in (columns.id, columns.date, columns.title, columns.text)
              if c is not None and c in names]
    number = 0
    for batch in stored.iter_batches(batch_size=batch_rows, columns=wanted):
        for record in batch.to_pylist():
            number += 1
            yield number, record, record, None


def rows(path: Path, detected: Detected, columns: ColumnsConfig, batch_rows: int) -> Iterator[Row]:
    if detected.format == "jsonl":
        return json_rows(path, detected)
    if detected.format in ("csv", "tsv"):
        return delimited_rows(path, detected)
    if detected.format == "parquet":
        return parquet_rows(path, columns, batch_rows)
    raise ValueError(f"not a table format: {detected.format}")


def raw_text(raw: object, detected: Detected) -> str:
    """A reject's raw line as text: the JSON line, the CSV fields joined by the delimiter, or the
    Parquet record as JSON."""
    if isinstance(raw, bytes):
        return raw.decode("utf-8", "backslashreplace").rstrip("\r\n")
    if isinstance(raw, list):
        return (detected.delimiter or ",").join(raw)
    return json.dumps(raw, default=str, ensure_ascii=False)


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def document(record: dict[str, Any], columns: ColumnsConfig) -> tuple[str, str, str, str]:
    """(key, date, title, text) of one record; ValueError with the reject reason."""
    key = record.get(columns.id)
    if _blank(key):
        raise ValueError(f"missing id (column {columns.id!r})")
    value = record.get(columns.date)
    if _blank(value):
        raise ValueError(f"missing date (column {columns.date!r})")
    date = normalise_date(value)
    text = record.get(columns.text)
    if _blank(text):
        raise ValueError(f"missing text (column {columns.text!r})")
    title = record.get(columns.title) if columns.title is not None else None
    return str(key), date, "" if title is None else str(title), str(text).strip()


class _Batches:
    """Column lists flushed to a ParquetWriter every ``size`` rows."""

    def __init__(self, writer: pq.ParquetWriter, size: int) -> None:
        self.writer, self.size, self.written = writer, size, 0
        self.cols: list[list[Any]] = [[], [], [], [], []]

    def add(self, key: str, date: str, title: str, text: str) -> None:
        for column, value in zip(self.cols, (key, int(date[:4]), date, title, text)):
            column.append(value)
        if len(self.cols[0]) >= self.size:
            self.flush()

    def flush(self) -> None:
        if self.cols[0]:
            arrays = [pa.array(c, type=f.type) for c, f in zip(self.cols, SCHEMA)]
            self.writer.write_table(pa.Table.from_arrays(arrays, schema=self.writer.schema))
            self.written += len(self.cols[0])
            self.cols = [[], [], [], [], []]


def read_table(path: str | Path, detected: Detected, columns: ColumnsConfig,
               papers_out: str | Path, batch_rows: int = 50_000,
               source: str | Path | None = None) -> TableResult:
    """Stream the corpus at ``path`` into ``papers_out`` (atomically); return the count and
    the rejects. A file with no usable row raises a UserError naming ``source``."""
    path, source = Path(path), source or path
    rejects: list[dict[str, object]] = []
    first_line: dict[str, int] = {}
    schema = SCHEMA.with_metadata({b"format": detected.format.encode()})
    with atomic_path(papers_out) as tmp:
        with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
            batches = _Batches(writer, batch_rows)
            for line, raw, record, reason in rows(path, detected, columns, batch_rows):
                key = None
                if record is not None:
                    try:
                        key, date, title, text = document(record, columns)
                    except ValueError as err:
                        reason = str(err)
                        key = None if _blank(record.get(columns.id)) else str(
                            record.get(columns.id))
                    else:
                        if key in first_line:
                            reason = f"duplicate id (first at line {first_line[key]})"
                        else:
                            first_line[key] = line
                            batches.add(key, date, title, text)
                            continue
                rejects.append({"key": key, "line": line, "reason": reason,
                                "raw": raw_text(raw, detected)[:_RAW_CHARS]})
            batches.flush()
            if batches.written == 0:
                raise _nothing_usable(source, detected, rejects)
    frame = pd.DataFrame.from_records(rejects, columns=REJECT_COLUMNS)
    frame["line"] = frame["line"].astype("Int64")
    return TableResult(papers=batches.written, rejects=frame)


def reason_kind(reason: str) -> str:
    """A reject reason without its values, for counting: ``date '2019-13-02' does not parse:
    month 13 ...`` -> ``date does not parse``, ``duplicate id (first at line 3)`` ->
    ``duplicate id``, ``malformed line: not valid JSON (...)`` -> ``malformed line: not valid
    JSON``."""
    text = re.sub(r"\s*\(.*\)", "", re.sub(r"\s*'[^']*'", "", reason))
    head = text.split(": ", 1)[0]
    return text if head == "malformed line" else head


def _nothing_usable(source: str | Path, detected: Detected,
                    rejects: list[dict[str, object]]) -> UserError:
    return nothing_usable(source, detected.describe(), [str(r["reason"]) for r in rejects])


def nothing_usable(source: str | Path, described: str, reasons: list[str]) -> UserError:
    """The error for a corpus file without a single usable document: its commonest reasons."""
    counts = Counter(reason_kind(r) for r in reasons)
    common = "; ".join(f"{n:,} × {reason}" for reason, n in counts.most_common(3))
    return UserError(f"{source} ({described}) holds no usable document: "
                     f"{common or 'no rows at all'}", path=source,
                     fix="check `data.columns` in params.yaml (the names of the id, date, title "
                         "and text columns) against the file, or fix the rows named in the "
                         "reasons")


def column_names(path: str | Path, detected: Detected, sample: int = 1000) -> list[str]:
    """The columns a table has: the CSV/TSV header, the Parquet schema, or the keys of the
    first ``sample`` JSON objects (in order of first appearance)."""
    path = Path(path)
    if detected.format == "parquet":
        return list(pq.ParquetFile(path).schema_arrow.names)
    if detected.format in ("csv", "tsv"):
        with io.TextIOWrapper(open_binary(path, detected.gzipped), encoding="utf-8",
                              errors="backslashreplace", newline="") as text:
            header = next(csv.reader(text, delimiter=detected.delimiter or ",",
                                     quotechar=detected.quotechar), [])
        return [name.lstrip("\ufeff") for name in header]
    names: dict[str, None] = {}
    for n, (_, _, record, _) in enumerate(json_rows(path, detected)):
        if n >= sample:
            break
        names.update(dict.fromkeys(record or {}))
    return list(names)


def check_columns(path: str | Path, detected: Detected, columns: ColumnsConfig,
                  source: str | Path) -> None:
    """A UserError when the table lacks the id, date or text column ``data.columns`` names
    (a missing title column only means no titles): checked at download, before any parse."""
    found = column_names(path, detected)
    missing = [f"{getattr(columns, field)!r} (data.columns.{field})"
               for field in ("id", "date", "text") if getattr(columns, field) not in found]
    if missing:
        shown = ", ".join(map(repr, found[:20])) + (", ..." if len(found) > 20 else "")
        raise UserError(f"{source} is {detected.describe()} without the column(s) "
                        f"{', '.join(missing)}; its columns: {shown or 'none'}", path=source,
                        fix="set `data.columns` in params.yaml to the file's names, e.g. "
                            "{id: doc_id, date: published, title: headline, text: body}")
