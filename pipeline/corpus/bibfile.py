"""What makes a file an Anthology export at all: it holds at least one BibTeX entry.

Shared by ``download`` (which checks the bytes it fetched) and ``parse`` (which checks what it
parsed), so an empty file, a gzip of nothing or a gzip of other text stops the first stage that
sees it with one message, instead of passing as an empty corpus. Kept apart from
:mod:`pipeline.corpus.anthology` so that the download stage does not depend on the parser's code.
"""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.infra.errors import UserError

# `@type{` or `@type(`: how every BibTeX entry starts.
_ENTRY_START = re.compile(rb"@\s*[A-Za-z]+\s*[{(]")
# Longest prefix of an entry start that can straddle two chunks of a stream.
ENTRY_START_OVERLAP = 64
EXPORT_FIX = ("point `data.source` in params.yaml at an anthology+abstracts.bib.gz export "
              "(e.g. https://aclanthology.org/anthology+abstracts.bib.gz) and run "
              "`dvc repro -f download`")


class BibFileError(UserError):
    """The input is not a readable (gzipped) BibTeX export, or holds no entry."""


def has_entries(data: bytes) -> bool:
    """Whether ``data`` (BibTeX bytes) holds anything that starts an entry (``@type{``)."""
    return _ENTRY_START.search(data) is not None


def no_entries_error(path: str | Path) -> BibFileError:
    return BibFileError(f"no BibTeX entries found in {path}", path=path,
                        fix="the file is empty or not BibTeX: " + EXPORT_FIX)
