"""Stage `parse`: Anthology BibTeX export -> data/corpus/papers.parquet (+ parse_rejects.parquet).

One row per entry in file order, LaTeX decoded to Unicode (pipeline.corpus.anthology, pipeline.corpus.latex).
Entries that are malformed, truncated, duplicated, not UTF-8, followed by stray text (an
unbalanced '}') or lack a year, title or abstract are written to --rejects with their line,
reason and raw text instead of being dropped silently. A file without any entry is an error.
"""

from __future__ import annotations

import argparse
import os

from pipeline.corpus.anthology import parse_file
from pipeline.infra.io import write_parquet
from stages._cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m stages.parse", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--raw", required=True, help="the .bib or .bib.gz export to parse")
    parser.add_argument("--papers", required=True, help="output Parquet of parsed papers")
    parser.add_argument("--rejects", required=True,
                        help="output Parquet of rejected entries (key, line, reason, raw)")
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                        help="processes parsing parts of the file; the output does not depend "
                             "on it (default: min(2, CPUs))")
    return parser


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)

    result = parse_file(args.raw, workers=args.workers)  # a UserError names the file
    write_parquet(result.papers, args.papers)
    write_parquet(result.rejects, args.rejects)
    print(f"{len(result.papers):,} papers -> {args.papers}; "
          f"{len(result.rejects):,} rejects -> {args.rejects}")
    for reason, count in result.rejects["reason"].value_counts().items():
        print(f"  rejected {count:,}: {reason}")


if __name__ == "__main__":
    main()
