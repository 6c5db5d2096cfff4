"""Speed of the `parse` and `filter` stages on the full Anthology export (targets: parse
<= 20 s including LaTeX decoding, filter <= 3 min on 2 cores with the serial run's decisions).

Measured side by side in one run:
- parse: bibtexparser 2 tokenizing alone; ``pipeline.corpus.anthology.parse_file`` (read + tokenize +
  value resolution + LaTeX decoding + table) with 1 and with 2 worker processes;
- LaTeX decoding alone on the titles and abstracts of the first N entries: ours against
  bibtexparser's LatexDecodingMiddleware (pylatexenc), too slow to use;
- filter: ``pipeline.corpus.language.filter_papers`` with 1 and with 2 processes, and whether their
  decisions (kept rows, dropped rows and reasons) are identical.

Run: .venv/bin/python -m benchmarks.parse_filter [--bib PATH] [--out benchmarks/results/parse_filter.md]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bibtexparser
from bibtexparser import middlewares

from pipeline.corpus.anthology import parse_file, read_bib_text
from pipeline.corpus.bibvalues import resolve_value
from pipeline.corpus.language import filter_papers
from pipeline.corpus.latex import latex_to_unicode
from benchmarks._results import machine, publish

REPO = Path(__file__).resolve().parents[1]
FULL_EXPORT = REPO.parent / "shared" / "data" / "anthology+abstracts.bib.gz"


def cpu_seconds() -> float:
    """User + system CPU time of this process and its finished children (worker processes)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


CPU: dict[str, float] = {}  # CPU seconds of the last timed() call, by label


def timed(fn: Callable[[], Any], label: str = "") -> tuple[float, Any]:
    """Wall seconds of ``fn()`` (and its CPU seconds in CPU[label]: on a CPU shared with other
    jobs, CPU time is what the same work would take in wall time on idle cores)."""
    cpu0, start = cpu_seconds(), time.perf_counter()
    result = fn()
    wall = time.perf_counter() - start
    CPU[label] = cpu_seconds() - cpu0
    return wall, result


def wall_cpu(wall: float, label: str) -> str:
    return f"{wall:.1f} s wall, {CPU[label]:.1f} s CPU"


def latex_comparison(text: str, n: int) -> tuple[float, float, int]:
    """Decode title+abstract of the first ``n`` entries with ours and with the middleware."""
    library = bibtexparser.parse_string(text, parse_stack=[])
    entries = library.entries[:n]
    values = [resolve_value(e.fields_dict[f].value) for e in entries for f in ("title", "abstract")]
    ours, _ = timed(lambda: [latex_to_unicode(v) for v in values])
    sub = bibtexparser.Library(entries)
    stack = [middlewares.RemoveEnclosingMiddleware(), middlewares.LatexDecodingMiddleware()]

    def theirs() -> None:
        for middleware in stack:
            middleware.transform(sub)

    middleware_s, _ = timed(theirs)
    return ours, middleware_s, len(entries)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.parse_filter", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bib", default=str(FULL_EXPORT),
                        help="Anthology export to measure (default: the full export in ../shared)")
    parser.add_argument("--latex-entries", type=int, default=2000,
                        help="entries for the LaTeX decoder comparison (the middleware is slow)")
    parser.add_argument("--skip-serial-filter", action="store_true",
                        help="do not run the single-process filter (saves a few minutes)")
    parser.add_argument("--out", default=None, help="write the Markdown results here")
    args = parser.parse_args(argv)
    bib = Path(args.bib)
    if not bib.exists():
        raise SystemExit(f"{bib} not found: pass --bib with an anthology+abstracts.bib.gz export")

    load_before = os.getloadavg()
    rows: list[tuple[str, str]] = []
    read_s, text = timed(lambda: read_bib_text(bib))
    rows.append(("read + gunzip", f"{read_s:.1f} s"))
    tok_s, library = timed(lambda: bibtexparser.parse_string(text, parse_stack=[]), "tok")
    n_entries = len(library.entries)
    del library
    rows.append(("bibtexparser 2 tokenizing only (no middleware)", wall_cpu(tok_s, "tok")))
    parse1_s, result1 = timed(lambda: parse_file(bib, workers=1), "parse1")
    rows.append(("**parse** `parse_file`, 1 process (read, tokenize, resolve, decode)",
                 wall_cpu(parse1_s, "parse1")))
    parse2_s, result2 = timed(lambda: parse_file(bib, workers=2), "parse2")
    rows.append(("**parse** `parse_file`, 2 processes", wall_cpu(parse2_s, "parse2")))
    same_parse = result1.papers.equals(result2.papers) and result1.rejects.equals(result2.rejects)
    rows.append(("parse: 1 vs 2 processes identical", str(same_parse)))

    ours_s, mw_s, n_latex = latex_comparison(text, args.latex_entries)
    rows.append((f"LaTeX decoding of {n_latex:,} titles+abstracts: ours", f"{ours_s:.2f} s"))
    rows.append((f"LaTeX decoding of {n_latex:,} titles+abstracts: bibtexparser "
                 "LatexDecodingMiddleware", f"{mw_s:.1f} s ({mw_s / ours_s:.0f}x slower; "
                 f"~{mw_s * n_entries / n_latex / 60:.0f} min extrapolated to the export)"))

    papers = result2.papers
    filter2_s, kept2 = timed(lambda: filter_papers(papers, workers=2, progress=False), "filter2")
    rows.append(("**filter** `filter_papers`, 2 processes", wall_cpu(filter2_s, "filter2")))
    if not args.skip_serial_filter:
        filter1_s, kept1 = timed(lambda: filter_papers(papers, workers=1, progress=False),
                                 "filter1")
        rows.append(("filter, 1 process", wall_cpu(filter1_s, "filter1")
                     + f" (2 processes: {filter1_s / filter2_s:.2f}x less wall time)"))
        same = kept1.kept.equals(kept2.kept) and kept1.dropped.equals(kept2.dropped)
        rows.append(("filter: 2 processes make the 1-process decisions", str(same)))
    rows.append(("papers / kept / dropped",
                 f"{len(papers):,} / {len(kept2.kept):,} / {len(kept2.dropped):,}"))
    load_after = os.getloadavg()

    lines = [
        "# parse + filter on the full ACL Anthology export",
        "",
        f"Input: `{bib.name}` ({bib.stat().st_size / 2**20:.1f} MiB gzipped, {n_entries:,} "
        "entries). Command: `.venv/bin/python -m benchmarks.parse_filter`.",
        f"Machine: {machine()}, "
        + ("shared with other jobs during the run"
           if max(load_before[0], load_after[0]) > 0.75 * (os.cpu_count() or 1)
           else "otherwise idle")
        + f" (1-minute load average {load_before[0]:.1f} before, {load_after[0]:.1f} after).",
        "",
        "| measurement | result |",
        "|---|---|",
        *(f"| {name} | {value} |" for name, value in rows),
        "",
    ]
    report = "\n".join(lines)
    publish(report, args.out)


if __name__ == "__main__":
    main()
