"""Stage `frequency_plot`: log frequency by period of chosen words (the paper's Figure 1b).

Reads exactly the per-period files data/features/frequencies/<label>.parquet it is given (or every
period file of a folder, by hand), refusing any computed with another tokenizer, and writes a long
CSV (period, word, log_freq, match), periods in time order, declared as a DVC plot, plus an
optional PNG. A word is read from
the LM tokens it is a single token as (any casing, with or without the leading space); a word
split into several tokens is read from its first token, and the `match` column says so.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.interfaces.frequency_plot import INTERFACE
from pipeline.reports.word_frequencies import word_frequency_table, write_word_frequencies
from stages._lib.args import parser_for
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    table, matches = word_frequency_table([Path(p) for p in args.frequencies], args.tokenizer,
                                          args.plot_words)
    write_word_frequencies(table, args.out, args.png)
    for m in matches:
        print(f"{m.word}: {m.match}")


if __name__ == "__main__":
    main()
