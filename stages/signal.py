"""Stage `signal`: the yardstick of a model's temporal gain — how much lower the test period's
unigram perplexity is under recent periods' counts than under the pooled training counts.

Reads the corpus table (data/corpus/abstracts.parquet) and the LM tokenizer: every abstract of
the periods from the first training period to the test period, tokenized as the frequencies
stage counts them. Scores the test period's abstracts under add-one smoothed unigram
distributions (pipeline/forecast/signal.py): pooled (the training periods' counts), recent-1
(the period before the test period), recent-2 (the two before it), a same-period split-half
oracle, and recent-2 of the past with its documents' period labels permuted (a falsification
check: no gain over pooled expected). Two scopes: whole abstracts, and each abstract cut to the
max_length - 1 tokens a model of that context predicts. The claims resample the test abstracts of one
venue together (report.cluster_by). Writes reports/signal.json (the table, the settings, the
verdict records of family `signal`) and reports/signal.md.
"""

from __future__ import annotations

import argparse
import sys

from pipeline.interfaces.signal import INTERFACE
from pipeline.infra.schema.params import SignalConfig
from pipeline.reports.signal_report import measure, write_signal
from stages._lib.args import parser_for
from stages._lib.cli import stage_main
from stages._lib.options import build


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    config = build(SignalConfig, args)
    found, scopes, verdicts = measure(args.abstracts, args.tokenizer, args.train_periods,
                                      args.test, args.max_length, config.seed, args.cluster_by)
    write_signal(found, scopes, verdicts, args.max_length, args.json, args.out)
    print(f"wrote {args.json} and {args.out}: {len(verdicts)} verdicts", file=sys.stderr)


if __name__ == "__main__":
    main()
