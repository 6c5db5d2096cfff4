"""Fast path: entries in the export's plain layout, read without bibtexparser.

bibtexparser walks every "mark" ({ } " , = newline) in Python (4.6M of them in the export:
~8 s). An entry in the plain layout
    @type{key,
        name = "value" | {value with {nested} braces} | macro,
        ...
    }
followed by nothing but whitespace up to the next line-initial "@" is read here with a few
regular expressions instead. The layout is deliberately narrow: only entries on which
bibtexparser provably yields the same key, type, fields, raw text and line are accepted; any
other entry (and whatever follows it up to the next plain one) is handed to bibtexparser.
That split is exact because bibtexparser starts a new block at every line-initial
``@type{``, whatever state it is in, so the stretch between two plain entries parses the same
on its own (with the next entry's ``@type{`` appended so that its end looks the same).

:func:`pieces` cuts a chunk into plain entries and bibtexparser stretches;
:mod:`pipeline.corpus.anthology` turns both into papers and rejects. tests/test_fuzz_bib.py
checks that the result equals a bibtexparser-only parse.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

import bibtexparser
from bibtexparser import model

from pipeline.corpus.bibvalues import BRACED

# bibtexparser treats these block types specially (by prefix): never on the fast path.
_SPECIAL_BLOCKS = ("comment", "preamble", "string")
# Line-initial "@" (a MULTILINE "^@" is ~10x slower: "^" is tried at every position).
_LINE_AT = re.compile(r"\n@")
# A quoted value: a '"' right after a backslash is a character (as for bibtexparser), and the
# closing quote must not follow a '{' (bibtexparser reads {"} inside quotes as a character).
_QUOTED = r'"(?:[^"\\]++|\\"?+)*+(?<![\\{])"'
# A value: quoted, braced or a bare word (number or macro), '#'-concatenated.
_PART = "(?:" + _QUOTED + "|" + BRACED + r"|\w++)"
_VALUE = _PART + r"(?:\s*+#\s*+" + _PART + r")*+"
_NAME = r"[A-Za-z_][\w\-]*+"
_FIELD = r"\s*+" + _NAME + r"\s*+=\s*+" + _VALUE + r"\s*+"
# The whole entry in one match (C speed), then its fields in one findall.
_SIMPLE_ENTRY = re.compile(r"@([A-Za-z]+)\{([^\s,{}()\"#%'=\\@]+),(?:" + _FIELD + ",)*+(?:"
                           + _FIELD + r")?+\s*+\}")
_SIMPLE_FIELD = re.compile(r"\s*+(" + _NAME + r")\s*+=\s*+(" + _VALUE + r")\s*+[,}]")
_SPACES = re.compile(r"\s*+")


@dataclass(frozen=True, slots=True)
class SimpleEntry:
    """A plain-layout entry: ``text[start:end]`` from its ``@`` to its closing ``}``."""
    start: int
    end: int
    entry_type: str  # lower case, as bibtexparser gives it
    key: str
    fields: list[tuple[str, str]]  # (name, raw value) in file order


@dataclass(frozen=True, slots=True)
class Stretch:
    """``text[start:end]``, parsed by bibtexparser. ``sentinel`` is the next plain entry's
    ``@type{`` (closed by ``}``), or "" at the end of the chunk: appended to the stretch, it ends
    an unterminated block exactly as the real next entry does; its own block is dropped."""
    start: int
    end: int
    sentinel: str


def _unsafe_positions(text: str) -> list[int]:
    """Sorted positions where bibtexparser would not read a plain entry as the regular
    expressions do: an indented ``@`` at the start of a line (it ends the entry early) and a
    newline right after a backslash (it does not count that line). One pass over the text."""
    found = []
    at = text.find("@")
    while at != -1:
        if at and text[at - 1] != "\n":  # line-initial "@"s are entry starts (or end them)
            line_start = text.rfind("\n", 0, at) + 1
            if text[line_start:at].isspace():
                found.append(at)
        at = text.find("@", at + 1)
    escaped = text.find("\\\n")
    while escaped != -1:
        found.append(escaped)
        escaped = text.find("\\\n", escaped + 1)
    return sorted(found)


def _simple_entry(text: str, start: int, stop: int, unsafe: list[int]) -> SimpleEntry | None:
    """The plain-layout entry at ``text[start]`` if it is one and only whitespace follows it up
    to ``stop`` (the next line-initial ``@`` or the end), else None."""
    entry = _SIMPLE_ENTRY.match(text, start, stop)
    if entry is None or entry.group(1).lower().startswith(_SPECIAL_BLOCKS):
        return None
    end = entry.end()
    first_unsafe = bisect.bisect_left(unsafe, start)
    if ((first_unsafe < len(unsafe) and unsafe[first_unsafe] < end)
            or _SPACES.match(text, end, stop).end() != stop):  # type: ignore[union-attr]
        return None
    fields = _SIMPLE_FIELD.findall(text, entry.end(2) + 1, end)
    if len({name for name, _ in fields}) != len(fields):
        return None  # a repeated field: bibtexparser's DuplicateFieldKeyBlock
    return SimpleEntry(start, end, entry.group(1).lower(), entry.group(2), fields)


def pieces(text: str) -> list[SimpleEntry | Stretch]:
    """``text`` as plain entries and the stretches between them, in order (blank gaps left out)."""
    starts = [match.start() + 1 for match in _LINE_AT.finditer(text)]
    if text.startswith("@"):
        starts.insert(0, 0)
    unsafe = _unsafe_positions(text)
    pieces: list[SimpleEntry | Stretch] = []
    done = 0  # text[:done] is covered
    for index, start in enumerate(starts):
        stop = starts[index + 1] if index + 1 < len(starts) else len(text)
        entry = _simple_entry(text, start, stop, unsafe)
        if entry is None:
            continue
        if not _blank(text, done, start):
            sentinel = text[start:text.index("{", start) + 1] + "}"
            pieces.append(Stretch(done, start, sentinel))
        pieces.append(entry)
        done = stop
    if not _blank(text, done, len(text)):
        pieces.append(Stretch(done, len(text), ""))
    return pieces


def _blank(text: str, start: int, end: int) -> bool:
    return _SPACES.match(text, start, end).end() == end  # type: ignore[union-attr]


def stretch_blocks(text: str, stretch: Stretch) -> list[model.Block]:
    """bibtexparser's blocks for a stretch (start lines relative to the stretch)."""
    library = bibtexparser.parse_string(text[stretch.start:stretch.end] + stretch.sentinel,
                                        parse_stack=[])
    return library.blocks[:-1] if stretch.sentinel else library.blocks


class NewlineCounter:
    """Line numbers as bibtexparser counts them: newlines before a position, except a newline
    right after a backslash (not a "mark" for its tokenizer). Positions must not decrease."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.count = text, 0, 0

    def before(self, pos: int) -> int:
        self.count += (self.text.count("\n", self.pos, pos)
                       - self.text.count("\\\n", max(self.pos - 1, 0), pos))
        self.pos = pos
        return self.count
