"""Stage `frequencies@<year>`: count every LM token in one year's abstracts and write
log((c+1)/(N+|V|)) per token id (paper §3.2) to data/features/frequencies/<year>.parquet.
The file records the identities (sha256) of the tokenizer and of the year's abstracts it counted."""

from __future__ import annotations

import argparse

from pipeline.corpus.years import year_abstracts
from pipeline.features.frequencies import count_tokens, write_year
from pipeline.infra.identity import corpus_identity, tokenizer_identity
from pipeline.features.tokenizer import load_tokenizer
from stages._cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m stages.frequencies", description=__doc__)
    parser.add_argument("--year", type=int, required=True, help="the year to count")
    parser.add_argument("--abstracts", required=True,
                        help="corpus Parquet with columns 'year' and 'abstract' "
                             "(data/corpus/abstracts.parquet)")
    parser.add_argument("--tokenizer", required=True, help="LM tokenizer folder (data/tokenizer)")
    parser.add_argument("--out", required=True, help="output Parquet for this year")
    return parser


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)

    texts = year_abstracts(args.abstracts, args.year)
    tokenizer_id = tokenizer_identity(args.tokenizer)
    counts = count_tokens(load_tokenizer(args.tokenizer), texts)
    write_year(args.out, args.year, counts, tokenizer_id=tokenizer_id,
               corpus_id=corpus_identity(texts))
    print(f"{args.year}: {len(texts)} abstracts, {int(counts.sum())} LM tokens, "
          f"{int((counts > 0).sum())} distinct -> {args.out}")


if __name__ == "__main__":
    main()
