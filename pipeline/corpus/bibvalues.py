"""BibTeX field values: the quote/brace grammar and :func:`resolve_value`.

bibtexparser's middlewares are skipped (the LaTeX one takes ~6 minutes on the export), so the
raw values it (or the fast path in :mod:`pipeline.corpus.bibfast`) hands over are resolved here:
quotes, braces, ``#`` concatenation and month macros such as ``oct # "-" # nov``. Quoted values
must have balanced braces (``"a {b c"`` is :class:`MalformedValue`, not ``a b c``). The balanced
``{...}`` pattern :data:`BRACED` is shared with the fast path, so that both read a value's
extent by the same rules.
"""

from __future__ import annotations

import re

# Standard BibTeX month macros (plain BibTeX expands them to these names).
MONTHS = {m[:3].lower(): m for m in ("January", "February", "March", "April", "May", "June",
                                     "July", "August", "September", "October", "November",
                                     "December")}
_DELIMS = re.compile(r'[{}"]')
_MACRO = re.compile(r"[^\s#{}\"]+")


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
BRACED = _braced_pattern(_MAX_DEPTH)
# One quoted or braced value with balanced braces: what resolve_value returns without its
# outer delimiters (a '"' inside braces is a character, one outside them ends the value).
_BALANCED_QUOTED = re.compile(r'"(?:[^{}\\"]++|\\[{}]?+|' + BRACED + r')*+"')
_BALANCED_BRACED = re.compile(BRACED)


class MalformedValue(ValueError):
    """A field value that is not valid BibTeX (unbalanced quotes/braces, stray text)."""


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


def safe_resolve(raw: str) -> str:
    """An ``@string`` definition's value, resolved without macros; its raw text when malformed."""
    try:
        return resolve_value(raw, {})
    except MalformedValue:
        return raw
