"""Stage `longtail`: paper 004's long-tail word prediction for every model, and its baselines.

Reads data/scores/<variant>-s<seed>/positions_<label>.parquet of the dev and test periods (labels
of split.period's kind), the LM tokenizer (which targets are one whole word) and the frequency files
of the training periods (the words' training counts). Writes reports/longtail.md (top-1/top-10
token accuracy and types T1/T10 per model and for the freq and ugrm baselines, all words and by
training-frequency bin with the bin sizes), metrics/longtail/<model>.json (test accuracies and
types: DVC metrics), reports/longtail.json (every row, both splits) and plots/longtail.csv (test
types by bin, for DVC plots) with a PNG beside it.
"""

from __future__ import annotations

import argparse
import sys

from pipeline.infra.errors import UserError
from pipeline.infra.schema.params import LongtailConfig
from pipeline.models.registry import seeds_by_variant
from pipeline.reports.longtail_report import longtail_frame, training_words, write_longtail
from pipeline.interfaces.longtail import INTERFACE
from stages._lib.args import parser_for
from stages._lib.options import build
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    config = build(LongtailConfig, args)
    if not 1 <= config.mid_min <= config.high_min:
        raise UserError(f"longtail bins need 1 <= mid_min <= high_min, got mid_min="
                        f"{config.mid_min}, high_min={config.high_min}", path="longtail.mid_min")
    edges = (config.high_min, config.mid_min)
    counts, pieces = training_words(args.frequencies, args.train_periods, args.tokenizer)
    frame = longtail_frame(args.scores, args.variants,
                           seeds_by_variant(args.variants, args.seeds, args.other_seeds),
                           {"test": args.test, "dev": args.dev}, pieces, counts, edges, config.seed)
    write_longtail(frame, edges, config.seed, args.test, args.out, args.metrics_dir, args.details,
                   args.plot)
    print(f"wrote {args.out}, {args.metrics_dir}/, {args.details} and {args.plot}", file=sys.stderr)


if __name__ == "__main__":
    main()
