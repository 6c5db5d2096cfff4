"""Identities of what a feature file was computed from: the LM tokenizer and the period's corpus.

A per-period feature file (frequencies, embeddings) means something only together with the
tokenizer whose ids index its rows and the abstracts it was computed over. Each file records
both as sha256 hex digests in its metadata (keys :data:`TOKENIZER_KEY`, :data:`CORPUS_KEY`);
readers compare the recorded tokenizer with the one in use and refuse a mismatch, so a file
left on disk by an earlier tokenizer is never read as current.

Both digests are content hashes, independent of paths, timestamps and machines: the same folder
or the same texts give the same identity on every machine and in every DVC checkout.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

from pipeline.infra.errors import UserError

TOKENIZER_KEY = "tokenizer_sha256"
CORPUS_KEY = "corpus_sha256"
# A period label (pipeline.corpus.periods, which infra may not import): 2020, 2020H2, 2020Q3, 2020-07.
_PERIOD_LABEL = re.compile(r"\d{4}(H[12]|Q[1-4]|-(0[1-9]|1[0-2]))?")


def tokenizer_identity(folder: str | os.PathLike[str]) -> str:
    """sha256 of a tokenizer folder: every file's relative path and bytes, in sorted path order.

    Hidden files (``.name``: editor litter, an interrupted atomic write's ``.x.tmp``) are skipped,
    since they are not part of the tokenizer. Lengths are hashed before names and contents, so
    no two different folders can produce the same byte stream.
    """
    root = Path(folder)
    if not root.is_dir():
        raise UserError("the LM tokenizer folder does not exist", path=root,
                        fix="run `dvc repro tokenizer`")
    digest = hashlib.sha256()
    files = sorted(p for p in root.rglob("*") if p.is_file()
                   and not any(part.startswith(".") for part in p.relative_to(root).parts))
    for path in files:
        name = path.relative_to(root).as_posix().encode()
        data = path.read_bytes()
        digest.update(len(name).to_bytes(8, "little") + name + len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def corpus_identity(texts: Sequence[str]) -> str:
    """sha256 of a period's abstracts as read (in corpus order), each length-prefixed UTF-8."""
    digest = hashlib.sha256(len(texts).to_bytes(8, "little"))
    for text in texts:
        data = text.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()


def check_tokenizer(path: str | os.PathLike[str], recorded: str | None, expected: str,
                    stage: str) -> None:
    """Refuse a feature file whose recorded tokenizer is not ``expected`` (the one in use).

    ``stage`` is the DVC stage that rewrites the file, e.g. ``frequencies@2018``. A file without a
    recorded identity predates this check and is refused too: nothing says what indexes it.
    """
    if recorded == expected:
        return
    if recorded is None:
        what = "this feature file does not record which tokenizer it was computed with"
    else:
        what = (f"this feature file was computed with another tokenizer (sha256 {recorded[:12]}…) "
                f"than the one in use (sha256 {expected[:12]}…): its token ids mean other tokens")
    raise UserError(what, path=path, fix=f"recompute it: `dvc repro {stage}`")


def repro_stage(stage: str, path: str | os.PathLike[str]) -> str:
    """The DVC stage that writes a per-period feature file: ``frequencies@2018H2`` for
    ``.../2018H2.parquet``; the stage family alone when the file name is not a period label."""
    stem = Path(path).stem
    return f"{stage}@{stem}" if _PERIOD_LABEL.fullmatch(stem) else stage


def require_feature_file(stage: str, path: str | os.PathLike[str], what: str) -> str:
    """:func:`repro_stage` of a feature file that must exist; a missing one is a
    :class:`UserError` naming the stage that writes it."""
    name = repro_stage(stage, path)
    if not os.path.exists(path):
        raise UserError(f"the {what} file does not exist", path=path,
                        fix=f"run `dvc repro {name}` (no such stage: `make graph` first)")
    return name
