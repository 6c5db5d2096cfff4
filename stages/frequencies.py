"""Stage `frequencies@<period>`: count every LM token in one period's abstracts and write
log((c+1)/(N+|V|)) per token id (paper §3.2) to data/features/frequencies/<label>.parquet.
The period is a label (2020, 2020H2, 2020Q3, 2020-07); its documents are those whose date falls in
it. The file records the identities (sha256) of the tokenizer and of the abstracts it counted."""

from __future__ import annotations

import argparse

from pipeline.corpus.by_period import period_abstracts
from pipeline.features.frequencies import count_tokens, write_period
from pipeline.infra.identity import corpus_identity, tokenizer_identity
from pipeline.features.tokenizer import load_tokenizer
from pipeline.interfaces.frequencies import INTERFACE
from stages._lib.args import parser_for
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)

    texts = period_abstracts(args.abstracts, args.period)
    tokenizer_id = tokenizer_identity(args.tokenizer)
    counts = count_tokens(load_tokenizer(args.tokenizer), texts)
    write_period(args.out, args.period, counts, tokenizer_id=tokenizer_id,
               corpus_id=corpus_identity(texts))
    print(f"{args.period}: {len(texts)} abstracts, {int(counts.sum())} LM tokens, "
          f"{int((counts > 0).sum())} distinct -> {args.out}")


if __name__ == "__main__":
    main()
