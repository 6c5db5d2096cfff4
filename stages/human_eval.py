"""Blind human evaluation (paper Table 4), two subcommands run by hand (not a DVC stage):

  export    shuffle the generated abstracts of every variant into one CSV sheet without model
            names, plus a separate key CSV (keep it away from the annotators);
  tabulate  turn the filled sheet (0/1 in Topic, Topic New, Problem, Problem New, Method,
            Method New) and the key into Table 4: % of abstracts judged 1 per model.

Example:
  python -m stages.human_eval export --scores data/scores --variants baseline frequency \\
      --sheet reports/human_eval/sheet.csv --key reports/human_eval/key.csv
  python -m stages.human_eval tabulate --sheet filled.csv --key reports/human_eval/key.csv \\
      --out reports/human_eval/table4.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from pipeline.evaluation.human_eval import QUESTIONS, export_sheet, tabulate
from pipeline.evaluation.layout import METRICS_FILE, generations_file
from pipeline.infra.io import atomic_path, read_json, read_parquet
from pipeline.infra.runs import run_name
from pipeline.models.registry import display_name
from stages._lib.cli import stage_main


def _export(args: argparse.Namespace) -> None:
    frames = []
    for variant in args.variants:
        folder = Path(args.scores) / run_name(variant, args.seed)
        # Score folders are per period; metrics.json says which is the dev / test period.
        period = read_json(folder / METRICS_FILE)[f"{args.split}_period"]
        gen = read_parquet(folder / generations_file(period)).sort_values("index")
        if args.per_variant:
            gen = gen.head(args.per_variant)
        frames.append(gen.assign(variant=variant, seed=args.seed, split=args.split))
    sheet, key = export_sheet(pd.concat(frames, ignore_index=True), args.shuffle_seed)
    for frame, path in ((sheet, args.sheet), (key, args.key)):
        with atomic_path(path) as tmp:
            frame.to_csv(tmp, index=False)
    print(f"{len(sheet)} abstracts -> {args.sheet} (for annotators), key -> {args.key}",
          file=sys.stderr)


def _tabulate(args: argparse.Namespace) -> None:
    sheet = pd.read_csv(args.sheet, dtype=str, keep_default_na=False)   # blank stays '', not NaN
    table = tabulate(sheet, pd.read_csv(args.key))
    table["variant"] = table["variant"].map(display_name)
    lines = ["| Model | n | " + " | ".join(QUESTIONS) + " |", "|---|---:|" + "---:|" * len(QUESTIONS)]
    for row in table.itertuples(index=False):
        lines.append(f"| {row[0]} | {row[1]} | " + " | ".join(f"{v:.1f}" for v in row[2:]) + " |")
    text = ("# Table 4: human evaluation (% of generated abstracts judged yes)\n\n"
            + "\n".join(lines) + "\n")
    with atomic_path(args.out) as tmp:
        tmp.write_text(text, encoding="utf-8")
    print(text)


@stage_main
def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m stages.human_eval", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("export", help="write the blind sheet and its key")
    e.add_argument("--scores", default="data/scores", help="folder of score folders")
    e.add_argument("--variants", nargs="+", required=True, help="variants to include")
    e.add_argument("--seed", type=int, default=0, help="training seed of the models to use")
    e.add_argument("--split", default="test", choices=("dev", "test"),
                   help="whose generations: the dev or the test period's (the paper evaluated the "
                        "test year)")
    e.add_argument("--per-variant", type=int, default=0,
                   help="first N generated abstracts per variant (0: all)")
    e.add_argument("--shuffle-seed", type=int, default=0, help="seed of the item order")
    e.add_argument("--sheet", required=True, help="CSV for annotators (no model names)")
    e.add_argument("--key", required=True, help="CSV mapping item -> variant (keep private)")
    e.set_defaults(run=_export)
    t = sub.add_parser("tabulate", help="Table 4 from a filled sheet and its key")
    t.add_argument("--sheet", required=True, help="the filled sheet (0/1 in every question column)")
    t.add_argument("--key", required=True, help="the key written by export")
    t.add_argument("--out", required=True, help="Markdown Table 4")
    t.set_defaults(run=_tabulate)
    args = p.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
