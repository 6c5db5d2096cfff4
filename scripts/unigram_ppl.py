"""Unigram reference perplexity of scored years (pipeline.unigram), for a report's header.

    python scripts/unigram_ppl.py --frequencies data/features/frequencies --train 2003 2019 \
        --positions data/scores/baseline-s0 --years 2020 2021

Counts: the training years' per-year frequency files, summed; add-one smoothed over the
vocabulary. Tokens: the ``target_id`` column of ``positions_<year>.parquet`` written by the score
stage, i.e. exactly the tokens the models' PPL was computed on (every variant scores the same
tokens: one tokenizer, one context length). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pyarrow.parquet as pq

from pipeline.unigram import summed_counts, unigram_perplexity


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--frequencies", required=True, help="folder of <year>.parquet frequency files")
    p.add_argument("--train", nargs=2, type=int, required=True, metavar=("FIRST", "LAST"))
    p.add_argument("--positions", required=True, help="a score folder (positions_<year>.parquet)")
    p.add_argument("--years", nargs="+", type=int, required=True)
    args = p.parse_args()
    first, last = args.train
    counts = summed_counts(Path(args.frequencies) / f"{y}.parquet" for y in range(first, last + 1))
    out = {"train_years": [first, last], "train_tokens": int(counts.sum()), "vocab_size": int(counts.size)}
    for year in args.years:
        targets = pq.read_table(Path(args.positions) / f"positions_{year}.parquet",
                                columns=["target_id"]).column("target_id").to_numpy()
        ppl = unigram_perplexity(counts, targets)
        out[str(year)] = {"unigram_ppl": ppl.ppl, "n_tokens": ppl.n_tokens}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
