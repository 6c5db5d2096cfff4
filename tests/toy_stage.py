"""Stage `toy_counts`: how many dev abstracts have at least --min-words words (a toy stage, the
main of ``tests/toy_stage_interface.py``)."""

from __future__ import annotations

import argparse
import json

import pandas as pd

from pipeline.infra.io import atomic_path
from pipeline.interfaces.toy_counts import INTERFACE
from stages._lib.args import parser_for
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    words = pd.read_parquet(args.dev, columns=["abstract"])["abstract"].str.split().str.len()
    with atomic_path(args.out) as tmp:
        tmp.write_text(json.dumps({"abstracts": int((words >= args.min_words).sum())}) + "\n")


if __name__ == "__main__":
    main()
