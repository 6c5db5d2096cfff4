"""Fuzzing the BibTeX parser: a damaged entry is a reject, never a shortened paper or nothing.

A small valid file (tests/data/fuzz_base.bib, six entries in the export's style) is damaged at
random — one or two deletions or duplications of a brace, quote, comma or any byte, or a byte
replaced by one that is not UTF-8 — with a fixed seed and a bounded number of cases. After
parsing, every original entry must be accounted for:

- an entry the damage did not touch is the same paper as before, or its whole text is inside a
  reject row (the damage next door may have swallowed it, e.g. by deleting that entry's ``@``);
- a damaged entry is either a paper whose title, abstract and year lose no more of the original
  than the damage itself (a few characters per edit: never a cut-off field), or a reject row
  holding all of its damaged text.
"""

from __future__ import annotations

import difflib
import random
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from pipeline.corpus.anthology import _parse_chunk, parse_bibtex, parse_file
from pipeline.corpus.bibfast import SimpleEntry, pieces

BASE = Path(__file__).parent / "data" / "fuzz_base.bib"
SEED = 20240515
CASES = 300
# Characters of a decoded field one edit may remove: "{\\'e}" -> "{'e}" turns "é" into "'e".
CHARS_PER_EDIT = 3
COMPARED = ("title", "abstract", "year")


@dataclass(frozen=True)
class Edit:
    pos: int
    op: str          # delete | duplicate | replace
    byte: int = 0    # the new byte for replace

    def apply(self, data: bytes) -> bytes:
        if self.op == "delete":
            return data[:self.pos] + data[self.pos + 1:]
        if self.op == "duplicate":
            return data[:self.pos + 1] + data[self.pos:]
        return data[:self.pos] + bytes([self.byte]) + data[self.pos + 1:]

    def shift(self) -> int:
        return {"delete": -1, "duplicate": 1, "replace": 0}[self.op]


def random_edits(rng: random.Random, data: bytes) -> list[Edit]:
    delimiters = [i for i, b in enumerate(data) if b in b'{}",']
    edits = []
    for _ in range(rng.choice((1, 1, 2))):
        kind = rng.choice(("delimiter", "delimiter", "byte", "invalid"))
        if kind == "invalid":  # a Latin-1 byte, or a UTF-8 sequence cut short
            edits.append(Edit(rng.randrange(len(data)), "replace", rng.randrange(0x80, 0x100)))
        else:
            pos = rng.choice(delimiters) if kind == "delimiter" else rng.randrange(len(data))
            edits.append(Edit(pos, rng.choice(("delete", "duplicate"))))
    # distinct positions, applied from the end so earlier positions stay valid
    return sorted({e.pos: e for e in edits}.values(), key=lambda e: -e.pos)


def entry_spans(data: bytes) -> list[tuple[int, int]]:
    """Byte span of each entry: from its '@' to the next entry's '@' (or the end)."""
    starts = [m.start() for m in re.finditer(rb"(?m)^@", data)]
    return list(zip(starts, starts[1:] + [len(data)]))


def lost_chars(original: str, parsed: str) -> int:
    """Characters of ``original`` missing from ``parsed`` (deleted or replaced); text the damage
    adds (``\\alpha`` cut to ``\\apha`` decodes to "apha", not "α") does not count."""
    ops = difflib.SequenceMatcher(None, original, parsed, autojunk=False).get_opcodes()
    return sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag in ("delete", "replace"))


def printable(data: bytes) -> str:
    return data.decode("utf-8", "backslashreplace")


def fields(row: dict) -> str:
    return "\n".join(str(row[f]) for f in COMPARED)


def records(frame: pd.DataFrame) -> list[dict]:
    """Rows as dicts with missing values as None (NaN != NaN would fail equal rows)."""
    return [{k: None if pd.isna(v) else v for k, v in row.items()}
            for row in frame.to_dict("records")]


@pytest.fixture(scope="module")
def base():
    data = BASE.read_bytes()
    papers = records(parse_bibtex(data.decode()).papers)
    assert len(papers) == len(entry_spans(data)) == 6
    return data, papers


@pytest.mark.slow
def test_every_damaged_file_keeps_every_entry_whole_or_rejects_it(base, tmp_path) -> None:
    data, originals = base
    rng = random.Random(SEED)
    spans = entry_spans(data)
    failures: list[str] = []
    for case in range(CASES):
        edits = random_edits(rng, data)
        damaged = data
        for edit in edits:
            damaged = edit.apply(damaged)
        path = tmp_path / f"case{case}.bib"
        path.write_bytes(damaged)
        result = parse_file(path)
        papers = records(result.papers)
        raws = [re.sub(r"\s+", " ", raw) for raw in result.rejects["raw"]]
        assert len(papers) + len(result.rejects) <= len(spans) + len(edits), case

        for (start, end), original in zip(spans, originals):
            hits = [e for e in edits if start <= e.pos < end]
            # where this entry's bytes are in the damaged file
            new_start = start + sum(e.shift() for e in edits if e.pos < start)
            new_end = end + sum(e.shift() for e in edits if e.pos < end)
            text = re.sub(r"\s+", " ", printable(damaged[new_start:new_end])).strip()
            whole_in_reject = any(text in raw for raw in raws)
            if not hits:
                kept = any(p == original for p in papers)
            else:
                budget = CHARS_PER_EDIT * len(hits)
                kept = any(lost_chars(fields(original), fields(p)) <= budget for p in papers)
            if not (kept or whole_in_reject):
                failures.append(f"case {case}, edits {edits}: entry {original['key']} "
                                f"({'damaged' if hits else 'untouched'}) is neither a whole "
                                f"paper nor inside a reject; papers "
                                f"{[(p['key'], p['abstract'][:40]) for p in papers]}, rejects "
                                f"{list(zip(result.rejects['key'], result.rejects['reason']))}")
    assert not failures, "\n".join(failures[:5])


def test_the_fuzzer_damages_something(base) -> None:
    # The oracle above must not pass vacuously: most cases change the parse.
    data, originals = base
    rng = random.Random(SEED)
    changed = 0
    for _ in range(50):
        damaged = data
        for edit in random_edits(rng, data):
            damaged = edit.apply(damaged)
        result = parse_bibtex(damaged.decode("utf-8", "surrogateescape"))
        changed += not (result.rejects.empty
                        and result.papers.equals(pd.DataFrame.from_records(originals)
                                                 .astype(result.papers.dtypes)))
    assert changed >= 25


# Constructs at the edge of the export's plain layout, which the parser's fast path must either
# read exactly as bibtexparser does or hand to it: @string/@comment, a (...) entry, escaped and
# {"} quotes, a backslash-newline, an indented line-initial '@' inside a value, deep braces,
# spaces around keys, repeated fields, a type starting with "comment", stray text, no comma,
# an unclosed entry, '#' with macros, duplicate keys, CRLF.
EDGE_CASES = r'''% header comment
@string{ confx = "Conf {X} Proceedings" }
@comment{ a comment with "quote and @ sign }
@inproceedings(paren-1,
    title = "Paren (entry) title", year = "2001", booktitle = confx,
    abstract = "Paren abstract with ) inside quotes."
)
@article{esc-quote, title = "Sch\"utze and {"}quoted{"}", year = "2002", abstract = "A \" b",}
@article{backslash-nl, title = "Line \
continued", year = "2003", abstract = "Abstract {x}",}
@article{line-at, title = "Title", year = "2004", abstract = "Abstract
  @misc{inner, x = 1}
still abstract",}
@article{deep, title = {a{b{c{d{e{f{g{h}}}}}}}}, year = "2005", abstract = {{{{{{{n}}}}}}},}
@article{ spaced-key , title = "T", year = 2006, abstract = "A",}
@article{dupfield, title = "T1", title = "T2", year = "2007", abstract = "A",}
@article{case-dup, title = "T1", Title = "T2", year = "2007", abstract = "A",}
@commentary{commentary-type, title = "T", year = "2008", abstract = "A",}
@article{trailing-text, title = "T", year = "2009", abstract = "A",} stray words
@article{nocomma-last, title = "T", year = "2010", abstract = "A"
}
@article{noclose, title = "T", year = "2011", abstract = "A",
@article{brace-quote-close, title = "abc{"}, year = "2014", abstract = "A",}
@article{escaped-brace, title = {a \{ b}, year = "2015", abstract = {x\}},}
@article{month-cat, title = "T", year = "2016", month = jan # "~" # feb, abstract = "A",}
@article{macro-use, title = "T", year = "2016", booktitle = confx # " 2016", abstract = "A",}
@article{dup-key, title = "T", year = "2017", abstract = "A",}
@article{dup-key, title = "T2", year = "2017", abstract = "A2",}
@article{emptyfields,}
@article{nofields}
@ article{space-type, title = "T", year = "2020", abstract = "A",}
@article{crlf, title = "T",\r
    year = "2021", abstract = "A",}
'''.replace("\\r\n", "\r\n")


def test_fast_path_reads_every_file_as_bibtexparser_does(base) -> None:
    # Entries in the plain layout skip bibtexparser (pipeline.corpus.bibfast); the
    # blocks (line, key, record or reject reason, raw text) must be exactly those of a
    # bibtexparser-only parse, on the edge cases and on damaged copies of both files.
    data, _ = base
    assert sum(isinstance(p, SimpleEntry) for p in pieces(data.decode())) == 6  # not vacuous
    rng = random.Random(SEED + 1)
    for original in (data, EDGE_CASES.encode()):
        texts = [original]
        for _ in range(150):
            damaged = original
            for edit in random_edits(rng, original):
                damaged = edit.apply(damaged)
            texts.append(damaged)
        for damaged in texts:
            text = damaged.decode("utf-8", "surrogateescape")
            assert _parse_chunk((text, 0)) == _parse_chunk((text, 0), fast=False), text
