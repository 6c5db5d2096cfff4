"""Build tests/fixtures/debian_changelogs.jsonl.gz: a real, non-ACL, time-stamped corpus.

Source: the Debian changelogs installed on a Debian machine
(``/usr/share/doc/<package>/changelog.Debian.gz``). Each changelog is a list of entries::

    bash (5.2-2) unstable; urgency=medium

      * Apply upstream patches 001 - 002.
        - Expanding unset arrays in an arithmetic context can cause a
          segmentation fault.

     -- Matthias Klose <doko@debian.org>  Mon, 24 Oct 2022 10:34:28 +0200

One entry becomes one JSON Lines row with the corpus's *own* column names (not the pipeline's
``id/date/title/text``; ``data.columns`` maps them):

============  ==========================================================================
column        value
============  ==========================================================================
entry_id      ``<source package>/<version>`` (``bash/5.2-2``), unique
released      the trailer's RFC 2822 date converted to UTC, ISO 8601 (``2022-10-24T08:34:28+00:00``)
package       the source package name (the title)
changes       the entry's text: the bullet lines between header and trailer, common indent
              removed, trailer and blank edge lines dropped (maintainer names/e-mails are not kept)
distribution  the upload's target (``unstable``, ``experimental``, ...): an extra column the
              pipeline ignores
urgency       ``low`` / ``medium`` / ``high`` ...: another ignored column
============  ==========================================================================

Several binary packages of one source package ship the same changelog: an entry is kept once
(first file in sorted path order), and so is a text that several entries share (first entry id).
Only entries with more than MIN_WORDS words of prose (``pipeline.corpus.language.word_count``,
what the filter stage counts, so every real row passes the default ``filter.min_words: 10``) and
at most MAX_WORDS whitespace-separated tokens are candidates (shorter ones are "New upstream
release." and would only be dropped by the filter stage; longer ones are rare release-notes
dumps that would make the fixture large). From those,
PER_PERIOD entries are drawn per half-year FIRST..LAST with ``random.Random(SEED)`` from the
candidates in entry-id order, so the same machine gives the same file; rows are written in date
order, then the deliberately bad rows below. gzip with mtime 0 (byte-identical reruns).

Counts of candidates per half-year on the machine that built the committed file (Debian 12.11,
669 changelogs, 9,698 distinct entries) range from 53 (2017H1) to 510 (2020H1). Per quarter the
Debian 10 freeze shows: 2019Q2 has only 7 candidates (2019Q3 has 273), so the quarter-period test
meets a real thin quarter.

The deliberately bad rows (BAD_ROWS; each must end up in a rejects table with its reason):

* ``not-json``: a line cut off mid-object, not JSON at all;
* ``no-id``: a row without ``entry_id``;
* ``no-date``: a row without ``released``;
* ``month-13``: ``released`` = ``2019-13-02T10:00:00+00:00`` (no month 13);
* ``free-text-date``: ``released`` = ``sometime in spring 2019``;
* ``empty-text``: ``changes`` = ``""``;
* ``duplicate-id``: a second row with the ``entry_id`` of the first real row (different text);
  the first occurrence is the one kept;
* ``bare-year``: ``released`` = ``2019``: a valid date, but coarser than a half-year, so the
  split stage (not the parser) rejects it under ``split.period: half``.

Usage: ``python scripts/make_changelog_corpus.py [--out PATH] [--doc-root /usr/share/doc]``.
Licence: the changelogs ship with their packages under those packages' free licences (see
tests/fixtures/SOURCE.md).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
import textwrap
from collections import defaultdict
from datetime import timezone
from email.utils import parsedate_to_datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pipeline.corpus.language import word_count  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "debian_changelogs.jsonl.gz"
SEED = 17
PER_PERIOD = 50
FIRST, LAST = (2017, 1), (2021, 2)  # (year, half) inclusive
MIN_WORDS, MAX_WORDS = 10, 200

_HEADER = re.compile(r"^(?P<package>[a-z0-9][a-z0-9+.-]*) \((?P<version>[^)\s]+)\) "
                     r"(?P<dist>[^;]*);(?P<rest>.*)$")
_TRAILER = re.compile(r"^ -- (?P<who>.*?) <[^>]*>  ?(?P<date>.+?)\s*$")
_URGENCY = re.compile(r"urgency=(\w+)", re.IGNORECASE)


def entries(path: Path) -> list[dict[str, str]]:
    """Every complete entry of one changelog.Debian.gz (header, text, trailer with a valid date)."""
    text = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
    found: list[dict[str, str]] = []
    head: re.Match[str] | None = None
    body: list[str] = []
    for line in text.splitlines():
        if head is None or not line.startswith(" "):
            match = _HEADER.match(line)
            if match:
                head, body = match, []
                continue
        if head is None:
            continue
        trailer = _TRAILER.match(line)
        if trailer:
            try:
                when = parsedate_to_datetime(trailer.group("date"))
            except (TypeError, ValueError):
                when = None
            if when is not None and when.tzinfo is not None:
                changes = textwrap.dedent("\n".join(body)).strip("\n")
                changes = "\n".join(l.rstrip() for l in changes.splitlines())
                urgency = _URGENCY.search(head.group("rest"))
                found.append({
                    "entry_id": f"{head.group('package')}/{head.group('version')}",
                    "released": when.astimezone(timezone.utc).isoformat(timespec="seconds"),
                    "package": head.group("package"),
                    "changes": changes,
                    "distribution": head.group("dist").strip(),
                    "urgency": urgency.group(1).lower() if urgency else "",
                })
            head, body = None, []
            continue
        body.append(line)
    return found


def half_of(released: str) -> tuple[int, int]:
    year, month = int(released[:4]), int(released[5:7])
    return year, 1 if month <= 6 else 2


def candidates(doc_root: Path) -> dict[tuple[int, int], list[dict[str, str]]]:
    """Distinct entries and texts of more than MIN_WORDS words (at most MAX_WORDS tokens), by
    half-year, in entry-id order."""
    seen: dict[str, dict[str, str]] = {}
    for path in sorted(doc_root.glob("*/changelog.Debian.gz")):
        for entry in entries(path):
            seen.setdefault(entry["entry_id"], entry)
    by_half: dict[tuple[int, int], list[dict[str, str]]] = defaultdict(list)
    texts: set[str] = set()
    for key in sorted(seen):
        entry = seen[key]
        if entry["changes"] in texts:
            continue
        texts.add(entry["changes"])
        if word_count(entry["changes"]) > MIN_WORDS and len(entry["changes"].split()) <= MAX_WORDS:
            by_half[half_of(entry["released"])].append(entry)
    return by_half


def sample(by_half: dict[tuple[int, int], list[dict[str, str]]]) -> list[dict[str, str]]:
    rng = random.Random(SEED)
    rows: list[dict[str, str]] = []
    half = FIRST
    while half <= LAST:
        pool = by_half.get(half, [])
        if len(pool) < PER_PERIOD:
            raise SystemExit(f"{half[0]}H{half[1]}: only {len(pool)} candidates, need {PER_PERIOD}")
        rows.extend(rng.sample(pool, PER_PERIOD))
        half = (half[0], 2) if half[1] == 1 else (half[0] + 1, 1)
    return sorted(rows, key=lambda r: (r["released"], r["entry_id"]))


def bad_rows(first: dict[str, str]) -> list[str]:
    """The deliberately bad lines (module docstring), as raw JSON Lines text."""
    def row(entry_id: str | None, released: str | None, changes: str) -> str:
        obj: dict[str, str] = {}
        if entry_id is not None:
            obj["entry_id"] = entry_id
        if released is not None:
            obj["released"] = released
        obj.update({"package": "futurelm-fixture", "changes": changes,
                    "distribution": "unstable", "urgency": "medium"})
        return json.dumps(obj, ensure_ascii=False)

    text = ("* Deliberately bad row of the futurelm test fixture: it must be rejected "
            "with its reason, never silently dropped.")
    return [
        '{"entry_id": "bad/not-json", "released": "2019-03-01T10:00:00+00:00", "changes": "cut',
        row(None, "2019-03-02T10:00:00+00:00", text + " (no-id)"),
        row("bad/no-date", None, text),
        row("bad/month-13", "2019-13-02T10:00:00+00:00", text),
        row("bad/free-text-date", "sometime in spring 2019", text),
        row("bad/empty-text", "2019-03-03T10:00:00+00:00", ""),
        row(first["entry_id"], "2019-03-04T10:00:00+00:00", text + " (duplicate-id)"),
        row("bad/bare-year", "2019", text),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--doc-root", type=Path, default=Path("/usr/share/doc"))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    rows = sample(candidates(args.doc_root))
    lines = [json.dumps(r, ensure_ascii=False) for r in rows] + bad_rows(rows[0])
    data = ("\n".join(lines) + "\n").encode()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    print(f"{args.out}: {len(rows)} entries + {len(lines) - len(rows)} bad rows, "
          f"{len(data):,} bytes JSON Lines, {args.out.stat().st_size:,} bytes gzipped")


if __name__ == "__main__":
    main()
