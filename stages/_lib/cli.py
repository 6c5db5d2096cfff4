"""What every stage's entry point shares: one place that turns user errors into messages.

``stage_main(main)`` wraps a stage's ``main(argv)``: a :class:`pipeline.infra.errors.UserError` (or an
``OSError`` such as an unwritable output folder, which names its file) ends the stage with
``error: <what>`` plus the input and the fix, exit status 2, and no traceback. ``--debug`` on the
command line (or ``FUTURELM_DEBUG=1``) re-raises instead, traceback included.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable

from pipeline.infra.errors import UserError

DEBUG_FLAG = "--debug"


def debug_requested(argv: list[str] | None) -> bool:
    args = sys.argv[1:] if argv is None else argv
    return DEBUG_FLAG in args or os.environ.get("FUTURELM_DEBUG", "") not in ("", "0")


def strip_debug(argv: list[str] | None) -> list[str]:
    return [a for a in (sys.argv[1:] if argv is None else argv) if a != DEBUG_FLAG]


def _stage_name(main: Callable[..., None]) -> str:
    """``stages.parse`` also under ``python -m stages.parse`` (where ``__module__`` is ``__main__``)."""
    if main.__module__ != "__main__":
        return main.__module__
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    return spec.name if spec is not None else "stage"


def stage_main(main: Callable[[list[str] | None], None]) -> Callable[[list[str] | None], None]:
    """Decorate a stage's ``main(argv)`` so user errors print a message instead of a traceback."""

    @functools.wraps(main)
    def wrapper(argv: list[str] | None = None) -> None:
        debug = debug_requested(argv)
        prog = _stage_name(main)
        try:
            main(strip_debug(argv))
        except UserError as err:
            if debug:
                raise
            print(f"error ({prog}): {err}", file=sys.stderr)
            print("  (run with --debug for the traceback)", file=sys.stderr)
            raise SystemExit(2) from None
        except OSError as err:
            if debug:
                raise
            name = getattr(err, "filename", None)
            print(f"error ({prog}): {err.strerror or err}", file=sys.stderr)
            if name:
                print(f"  input: {name}", file=sys.stderr)
            print("  fix:   check that the path exists and is readable/writable", file=sys.stderr)
            print("  (run with --debug for the traceback)", file=sys.stderr)
            raise SystemExit(2) from None

    return wrapper
