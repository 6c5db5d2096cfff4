"""The one error type for problems a user can fix: a bad input file, param or model name.

Raise :class:`UserError` with *what* failed, the *path* (file, folder, param or model name) it
failed on, and the *fix*. Each stage's entry point (:func:`stages._lib.cli.stage_main`) catches it
once and prints the three parts without a traceback (``--debug`` or ``FUTURELM_DEBUG=1`` shows
it). Anything else that escapes is a bug in futurelm and keeps its traceback.
"""

from __future__ import annotations

import os


class UserError(Exception):
    """A failure caused by an input the user controls; the message names it and the fix."""

    def __init__(self, what: str, *, path: str | os.PathLike[str] | None = None,
                 fix: str | None = None) -> None:
        self.what = what
        self.path = None if path is None else str(path)
        self.fix = fix
        super().__init__(str(self))

    def __str__(self) -> str:
        lines = [self.what]
        if self.path is not None:
            lines.append(f"  input: {self.path}")
        if self.fix:
            lines.append(f"  fix:   {self.fix}")
        return "\n".join(lines)
