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

from pipeline.corpus.anthology import parse_bibtex, parse_file

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
