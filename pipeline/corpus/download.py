"""Fetch the corpus from an http(s) URL or a local path, atomically and verified.

The file is streamed to a temporary sibling of the output and checked before it is moved into
place (pipeline.infra.io.atomic_path): its format is recognised from its content
(:func:`pipeline.corpus.formats.detect`: BibTeX, CSV, TSV, JSON Lines, each optionally gzipped,
or Parquet), a gzip stream must be complete, BibTeX must hold an entry, and a table must have the
id, date and text columns ``data.columns`` names (:func:`pipeline.corpus.tables.check_columns`).
A file that fails stops here, the first stage, with what was found and the formats accepted: a
dropped connection, an HTML error page or a wrong mapping never leaves a file that later stages
would take for the corpus. The copy keeps the bytes; its format, sha256 and size are returned
so the stage can record them.
"""

from __future__ import annotations

import gzip
import hashlib
import urllib.error
import urllib.parse
import urllib.request
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import BinaryIO

from tqdm import tqdm

from pipeline.corpus.bibfile import ENTRY_START_OVERLAP, has_entries, no_entries_error
from pipeline.corpus.formats import FormatError, detect
from pipeline.corpus.tables import check_columns
from pipeline.infra.errors import UserError
from pipeline.infra.io import atomic_path
from pipeline.infra.schema.params import ColumnsConfig

OFFICIAL_URL = "https://aclanthology.org/anthology+abstracts.bib.gz"
_CHUNK = 1 << 20


class DownloadError(UserError):
    """The source could not be fetched or is not a valid gzip export."""


@dataclass(frozen=True)
class DownloadInfo:
    source: str
    sha256: str
    size: int               # bytes of the file
    uncompressed_size: int  # bytes of its text (= size unless gzipped; Parquet: size)
    format: str = "bibtex"  # pipeline.corpus.formats.Format
    gzipped: bool = True

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def is_url(source: str) -> bool:
    return urllib.parse.urlparse(source).scheme in ("http", "https")


def _offline_hint(source: str) -> str:
    return (f"If this machine cannot reach {source}, download the file elsewhere (e.g. "
            f"{OFFICIAL_URL}), copy it here and set `data.source` in params.yaml to its local "
            "path (such as ../shared/data/anthology+abstracts.bib.gz), then run `dvc repro`.")


def _copy(reader: BinaryIO, writer: BinaryIO, total: int | None, label: str) -> None:
    with tqdm(total=total, unit="B", unit_scale=True, desc=label, mininterval=1.0) as bar:
        while chunk := reader.read(_CHUNK):
            writer.write(chunk)
            bar.update(len(chunk))


def _validate_gzip(path: Path, source: str, bibtex: bool = True) -> int:
    """Decompress ``path`` fully; return the uncompressed size, or raise a UserError when it is
    not complete gzip or (``bibtex``) holds no BibTeX entry."""
    size, found, tail = 0, not bibtex, b""
    try:
        with gzip.open(path, "rb") as stream:
            while chunk := stream.read(_CHUNK):
                size += len(chunk)
                found = found or has_entries(tail + chunk)
                tail = chunk[-ENTRY_START_OVERLAP:]
    except (OSError, EOFError, zlib.error) as err:
        raise DownloadError(f"{source} is not a valid, complete gzip file ({err})",
                            path=source,
                            fix="fetch it again or point `data.source` in params.yaml at a "
                                "good copy") from err
    if not found:
        raise no_entries_error(source)
    return size


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _validate(path: Path, source: str, columns: ColumnsConfig) -> DownloadInfo:
    """Check the copy at ``path`` is a corpus (module docstring); its DownloadInfo."""
    try:
        found = detect(path, source)
    except FormatError as err:  # one error class for everything the download stage refuses
        raise DownloadError(err.what, path=err.path, fix=err.fix) from err
    size = path.stat().st_size
    uncompressed = (_validate_gzip(path, source, bibtex=found.format == "bibtex")
                    if found.gzipped else size)
    if found.format != "bibtex":
        check_columns(path, found, columns, source)
    return DownloadInfo(source=source, sha256=_sha256(path), size=size,
                        uncompressed_size=uncompressed, format=found.format,
                        gzipped=found.gzipped)


def fetch(source: str, out: str | Path, timeout: float = 60.0,
          columns: ColumnsConfig | None = None) -> DownloadInfo:
    """Copy ``source`` (http(s) URL or local path) to ``out`` after checking it is a corpus in
    one of the accepted formats with the columns ``columns`` names (tables only)."""
    out = Path(out)
    with atomic_path(out) as tmp:
        if is_url(source):
            try:
                with urllib.request.urlopen(source, timeout=timeout) as response, \
                        tmp.open("wb") as writer:
                    length = response.headers.get("Content-Length")
                    _copy(response, writer, int(length) if length else None, "download")
            except (urllib.error.URLError, OSError) as err:
                reason = (f"HTTP {err.code} {err.reason}" if isinstance(err, urllib.error.HTTPError)
                          else getattr(err, "reason", err))
                raise DownloadError(f"could not download {source}: {reason}", path=source,
                                    fix=_offline_hint(source)) from err
        else:
            path = Path(source)
            if "://" in source:
                raise DownloadError(f"unsupported source {source!r}", path=source,
                                    fix="use an http(s) URL or a local path in `data.source` "
                                        "(params.yaml)")
            if not path.is_file():
                raise DownloadError(f"local source {source} does not exist (relative paths "
                                    "are relative to the project root)", path=source,
                                    fix=f"set `data.source` in params.yaml to an existing file "
                                        f"or to {OFFICIAL_URL}")
            with path.open("rb") as reader, tmp.open("wb") as writer:
                _copy(reader, writer, path.stat().st_size, "copy")
        info = _validate(tmp, source, columns or ColumnsConfig())
    return info

