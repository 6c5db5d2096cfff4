"""Stage `gold_words`: the content words of the dev and test period's gold abstracts, computed
once for every score stage's content METEOR (§4.6): nltk's word tokenizer, lowercased, stopwords
and words of at most 4 characters dropped (pipeline/evaluation/content.py). Writes
<out>/<period>.parquet (key, words) per split, in the split's order, in one atomic folder."""

from __future__ import annotations

import argparse
import sys

from pipeline.evaluation.content import load_stopwords
from pipeline.evaluation.splits import read_split
from pipeline.evaluation.gold_words import gold_content_words, write_gold_words
from pipeline.interfaces.gold_words import INTERFACE
from pipeline.infra.io import atomic_path
from stages._lib.args import parser_for
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    stopwords = load_stopwords(args.stopwords)
    splits = [read_split(args.dev, "dev"), read_split(args.test, "test")]
    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        for period, abstracts in splits:
            words = gold_content_words(abstracts, stopwords)
            write_gold_words(words, tmp, period)
            print(f"{period}: content words of {len(words)} abstracts", file=sys.stderr)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
