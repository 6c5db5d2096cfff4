"""How every benchmark publishes its Markdown result: printed, and written to ``--out`` if given."""

from __future__ import annotations

import os
from pathlib import Path


def publish(text: str, out: str | os.PathLike[str] | None, end: str = "") -> None:
    """Print ``text``; with ``out``, also write ``text + end`` there (folders created)."""
    print(text)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text + end)
