"""Time and peak memory of the `parse` stage on a large user corpus (streamed).

Target: a 1,000,000-document JSON Lines file (~1 GB) parses in ≤ 60 s with peak RSS ≤ 2 GB on a
2-core machine. This writes such a file under /tmp (own column names, ISO date-times, ~1,000
characters of text per document, one malformed line and one duplicate id every 100,000 lines so
the reject path runs too), then runs ``python -m stages.parse`` on it as DVC would — a fresh
process, imports included — and records wall time, CPU time and the peak RSS of that process
(``ru_maxrss`` of a wrapper's only child). ``--formats`` adds the gzipped and CSV variants of the
same documents. The generated files are deleted afterwards unless ``--keep``.

Run: .venv/bin/python -m benchmarks.read_corpus [--docs 1000000] [--formats jsonl jsonl.gz csv]
     [--out benchmarks/results/read_corpus.md]
"""

from __future__ import annotations

import argparse
import csv
import datetime
import gzip
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq

from benchmarks._results import publish
from benchmarks._results import machine
from benchmarks.parse_filter import REPO

COLUMNS = ["--id", "doc_id", "--date", "published", "--title", "headline", "--text", "body"]
_WRAPPER = ("import resource, subprocess, sys\n"
            "proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "sys.stderr.write(proc.stdout + proc.stderr)\n"
            "print(proc.returncode, usage.ru_maxrss, usage.ru_utime + usage.ru_stime)\n")


def paragraphs(n: int = 2000, seed: int = 0) -> list[str]:
    """``n`` distinct ~1,000-character texts from a 5,000-word vocabulary (Zipf-like)."""
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10)))
             for _ in range(5000)]
    weights = [1 / (rank + 1) for rank in range(len(vocab))]
    out = []
    for _ in range(n):
        words: list[str] = []
        while sum(map(len, words)) + len(words) < 1000:
            words.extend(rng.choices(vocab, weights, k=20))
        out.append(" ".join(words)[:1000])
    return out


def documents(n: int) -> Iterator[dict[str, str]]:
    texts = paragraphs()
    start = datetime.datetime(2000, 1, 1)
    for i in range(n):
        when = start + datetime.timedelta(minutes=12 * i)
        yield {"doc_id": f"doc-{i:07d}", "published": when.isoformat() + "+00:00",
               "headline": f"Headline number {i}", "body": f"{i} {texts[i % len(texts)]}"}


def write_corpus(folder: Path, n: int, kind: str) -> Path:
    path = folder / f"corpus.{kind}"
    opener = gzip.open if kind.endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8", newline="") as out:
        writer = csv.writer(out) if kind.startswith("csv") else None
        if writer:
            writer.writerow(["doc_id", "published", "headline", "body"])
        for i, doc in enumerate(documents(n)):
            if writer:
                writer.writerow(doc.values())
            else:
                out.write(json.dumps(doc) + "\n")
            if i % 100_000 == 99_999:  # a malformed line and a duplicate id
                out.write('{"doc_id": "cut", "published": "2020-01-0\n' if not writer
                          else "only,two\n")
                dup = dict(doc, body="again")
                if writer:
                    writer.writerow(dup.values())
                else:
                    out.write(json.dumps(dup) + "\n")
    return path


def run_parse(raw: Path, out: Path) -> dict[str, float]:
    cmd = [sys.executable, "-c", _WRAPPER, sys.executable, "-m", "stages.parse", "--raw",
           str(raw), *COLUMNS, "--papers", str(out / "papers.parquet"), "--rejects",
           str(out / "rejects.parquet")]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=True)
    wall = time.monotonic() - start
    code, rss_kb, cpu = proc.stdout.split()
    if code != "0":
        raise SystemExit(f"parse failed:\n{proc.stderr}")
    papers = pq.ParquetFile(out / "papers.parquet").metadata.num_rows
    rejects = pq.ParquetFile(out / "rejects.parquet").metadata.num_rows
    return {"wall": wall, "cpu": float(cpu), "rss_mb": int(rss_kb) / 1024, "papers": papers,
            "rejects": rejects}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1_000_000, help="documents to generate")
    parser.add_argument("--formats", nargs="+", default=["jsonl"],
                        choices=["jsonl", "jsonl.gz", "csv", "csv.gz"], help="files to measure")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    parser.add_argument("--out", default=None, help="write the Markdown result here too")
    args = parser.parse_args(argv)

    folder = Path(tempfile.mkdtemp(prefix="read_corpus-", dir="/tmp"))
    rows = []
    for kind in args.formats:
        start = time.monotonic()
        raw = write_corpus(folder, args.docs, kind)
        made = time.monotonic() - start
        result = run_parse(raw, folder)
        size = raw.stat().st_size / 1e9
        rows.append(f"| {kind} | {args.docs:,} | {size:.2f} GB | {result['wall']:.1f} s | "
                    f"{result['cpu']:.1f} s | {result['rss_mb']:,.0f} MB | "
                    f"{result['papers']:,} papers, {result['rejects']:,} rejects |")
        print(f"{kind}: generated in {made:.0f} s; {rows[-1]}", file=sys.stderr)
        if not args.keep:
            raw.unlink()
    text = "\n".join([
        "# Reading a large user corpus: `python -m stages.parse`",
        "",
        f"Machine: {machine()}; {datetime.date.today().isoformat()}; "
        f"`.venv/bin/python -m benchmarks.read_corpus --docs {args.docs} --formats "
        f"{' '.join(args.formats)}`.",
        "Target: 1,000,000 JSON Lines documents (~1 GB) in ≤ 60 s with peak RSS ≤ 2 GB.",
        "Whole process as DVC runs it (interpreter start, imports, format detection, read, "
        "Parquet writes of papers and rejects); peak RSS of that process.",
        "",
        "| file | documents | size | wall | CPU | peak RSS | parsed |",
        "|---|---|---|---|---|---|---|",
        *rows,
    ])
    publish(text, args.out, end="\n")


if __name__ == "__main__":
    main()
