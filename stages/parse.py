"""Stage `parse`: the corpus copy -> data/corpus/papers.parquet (+ parse_rejects.parquet).

The format is recognised from the content (pipeline.corpus.formats). BibTeX (the ACL Anthology
export): one row per entry in file order, LaTeX decoded to Unicode (pipeline.corpus.anthology);
entries that are malformed, truncated, duplicated, not UTF-8, followed by stray text (an
unbalanced '}') or lack a year, title or abstract are rejects; `date` is YYYY-MM when the month
field names a month, else YYYY. CSV, TSV, JSON Lines (each optionally gzipped) and Parquet are
streamed (pipeline.corpus.tables) with the column mapping (params data.columns): a malformed line,
no id, no date, a date that does not parse, no text or a repeated id is a reject. Every reject
goes to --rejects with its line, reason and raw text, never dropped silently; the counts per
reason are printed. A file without a single usable document is an error.
"""

from __future__ import annotations

import argparse
from collections import Counter

from pipeline.corpus.anthology import parse_file
from pipeline.corpus.formats import detect
from pipeline.corpus.tables import nothing_usable, read_table, reason_kind
from pipeline.infra.io import write_parquet
from pipeline.infra.schema.params import ColumnsConfig
from pipeline.interfaces.parse import INTERFACE
from stages._lib.args import parser_for
from stages._lib.options import build
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)

    found = detect(args.raw)  # a UserError names the file and what it holds
    if found.format == "bibtex":
        result = parse_file(args.raw, workers=args.workers)  # a UserError names the file
        if result.papers.empty:
            raise nothing_usable(args.raw, found.describe(), result.rejects["reason"].tolist())
        write_parquet(result.papers, args.papers, metadata={"format": "bibtex"})
        papers, rejects = len(result.papers), result.rejects
    else:
        table = read_table(args.raw, found, build(ColumnsConfig, args), args.papers)
        papers, rejects = table.papers, table.rejects
    write_parquet(rejects, args.rejects)
    print(f"{found.describe()}: {papers:,} papers -> {args.papers}; "
          f"{len(rejects):,} rejects -> {args.rejects}")
    for reason, count in Counter(map(reason_kind, rejects["reason"])).most_common():
        print(f"  rejected {count:,}: {reason}")


if __name__ == "__main__":
    main()
