"""Atomic, deterministic writers shared by every stage.

Every output goes through :func:`atomic_path`: it is written under a temporary name in the same
folder and moved into place with ``os.replace`` only when complete, so an interrupted stage never
leaves a half-written file or folder where DVC (or a person) would take it for a result.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary sibling of ``path``; publish it onto ``path`` only if the block succeeds.

    Works for files and directories (write a folder at the yielded path to publish a folder).
    An existing ``path`` is replaced only at the very end.
    """
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()  # the caller creates a file or a directory here
    try:
        yield tmp
        if not tmp.exists():
            raise FileNotFoundError(f"nothing was written to the temporary output for {final}")
        if final.is_dir() and not final.is_symlink():
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp.exists():
            tmp.unlink()


def write_parquet(df: pd.DataFrame, path: str | os.PathLike[str],
                  metadata: dict[str, str] | None = None) -> None:
    """Write ``df`` as Parquet atomically, without the pandas index, zstd-compressed.

    ``metadata`` is stored in the schema (string keys and values), e.g. a year or vocabulary size.
    Byte-for-byte reproducible for the same frame: no timestamps are embedded.
    """
    table = pa.Table.from_pandas(df, preserve_index=False)
    if metadata:
        merged = dict(table.schema.metadata or {})
        merged.update({k.encode(): str(v).encode() for k, v in metadata.items()})
        table = table.replace_schema_metadata(merged)
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, compression="zstd")


def read_parquet(path: str | os.PathLike[str], columns: list[str] | None = None) -> pd.DataFrame:
    """Read a Parquet table written by :func:`write_parquet`, with a clear error if missing."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: run the DVC stage that produces it "
                                f"(`dvc repro`), or check the path")
    return pq.read_table(path, columns=columns).to_pandas()


def parquet_metadata(path: str | os.PathLike[str]) -> dict[str, str]:
    """The string key/value metadata stored by :func:`write_parquet` (pandas' own key removed)."""
    raw = pq.read_schema(path).metadata or {}
    return {k.decode(): v.decode() for k, v in raw.items() if k != b"pandas"}


def write_csv(frame: pd.DataFrame, path: str | os.PathLike[str]) -> None:
    """Write a table as CSV atomically (6 significant digits: DVC plots, not a data store)."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format="%.6g")


def write_json(obj: Any, path: str | os.PathLike[str]) -> None:
    """Write small JSON (metrics, configs) atomically with sorted keys and a trailing newline."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def read_json(path: str | os.PathLike[str]) -> Any:
    return json.loads(Path(path).read_text())
