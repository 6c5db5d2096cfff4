"""Stage `filter`: papers.parquet -> abstracts in one language, long enough, de-duplicated and
(for the ACL Anthology) not shared-task papers.

Each filter is an option (params filter.*): --language None keeps every language, --acl-rules
auto applies the shared-task rule when papers.parquet came from BibTeX (the format the parse
stage records in its metadata) and not for CSV, TSV, JSON Lines or Parquet corpora.
Kept rows go to --kept, every dropped row with its reason (too_short, shared_task,
language:<code>, duplicate_of:<key>) to --dropped, the DVC metrics (papers, kept, dropped) to
--metrics and per-year kept / dropped-by-reason counts to --counts. Language detection is langdetect with a fixed seed, one fresh detector per
abstract, so the result is the same for any --workers (pipeline.corpus.language).

--permute-first/--permute-last make a time-free control corpus: the kept documents of those
years swap dates at random (pipeline.corpus.permuted_dates); --counts then counts the permuted
years, which hold as many documents as the real ones.
"""

from __future__ import annotations

import argparse
import dataclasses

from pipeline.infra.errors import UserError
from pipeline.infra.io import parquet_metadata, read_parquet, write_json, write_parquet
from pipeline.corpus.language import corpus_counts, corpus_headline, filter_papers
from pipeline.corpus.permuted_dates import permute_dates
from pipeline.interfaces.filter import INTERFACE
from stages._lib.args import parser_for
from stages._lib.cli import stage_main
from stages._lib.runtime import load_runtime


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    workers = args.workers if args.workers is not None else load_runtime().workers
    if workers < 1:
        raise UserError(f"workers must be at least 1, got {workers}", path="--workers / "
                        "runtime.yaml workers / FUTURELM_WORKERS", fix="use 1 or more")
    if args.min_words < 0:
        raise UserError(f"min_words must be >= 0, got {args.min_words}",
                        path="params.yaml: filter.min_words", fix="use 0 or more")
    if (args.permute_first is None) != (args.permute_last is None):
        raise UserError("filter.permute_first and filter.permute_last go together",
                        path="params.yaml: filter.permute_first, filter.permute_last",
                        fix="set both (a range of years) or neither")

    papers = read_parquet(args.papers)
    source_format = parquet_metadata(args.papers).get(
        "format", "bibtex" if "entry_type" in papers.columns else "table")
    acl_rules = args.acl_rules == "true" or (args.acl_rules == "auto"
                                             and source_format == "bibtex")
    result = filter_papers(papers, language=args.language, seed=args.seed,
                           min_words=args.min_words, workers=workers, acl_rules=acl_rules)
    if args.permute_first is not None:
        result = dataclasses.replace(result, kept=permute_dates(
            result.kept, args.permute_first, args.permute_last, args.permute_seed))
        print(f"dates permuted among the kept documents of {args.permute_first}-"
              f"{args.permute_last} (seed {args.permute_seed}): a time-free control corpus")
    write_parquet(result.kept, args.kept)
    write_parquet(result.dropped, args.dropped)
    counts = corpus_counts(result)
    write_json(counts, args.counts)
    write_json(corpus_headline(counts), args.metrics)
    print(f"kept {counts['kept']:,} of {counts['papers']:,} abstracts -> {args.kept}; "
          f"dropped {counts['dropped']} (language: {args.language or 'any'}, ACL rules: "
          f"{'on' if acl_rules else 'off'} for {source_format})")


if __name__ == "__main__":
    main()
