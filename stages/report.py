"""Stage `report`: the paper's Tables 2-3 from every scored model.

Reads data/scores/<variant>-s<seed>/ for every variant x seed, and writes reports/results.md
(Table 3: Dev/Test x PPL, CM, CPL, mean ± std over seeds, sign-test p-values against the
baseline; Table 2: generated examples), one DVC metrics file per variant
(metrics/variants/<variant>.json) and a flat CSV for DVC plots (plots/results.csv).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.io import atomic_path, write_json
from pipeline.report import finite_or_none, load_runs, plot_rows, render


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m stages.report", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scores", required=True, help="folder of score folders (data/scores)")
    p.add_argument("--variants", nargs="+", required=True, help="variants, in table order")
    p.add_argument("--seeds", nargs="+", type=int, required=True, help="training seeds")
    p.add_argument("--baseline", default="baseline",
                   help="the variant every other one is tested against (paper: Baseline-all)")
    p.add_argument("--examples", type=int, default=3, help="generated examples per variant (Table 2)")
    p.add_argument("--out", required=True, help="Markdown report (reports/results.md)")
    p.add_argument("--metrics-dir", required=True, help="one JSON per variant (metrics/variants)")
    p.add_argument("--plots", required=True, help="CSV for DVC plots (plots/results.csv)")
    args = p.parse_args(argv)

    if args.examples < 0:
        raise SystemExit(f"--examples must be >= 0, got {args.examples}")
    runs = load_runs(args.scores, args.variants, args.seeds)
    text, summary = render(runs, args.variants, args.seeds, args.baseline, args.examples)
    with atomic_path(args.out) as tmp:
        tmp.write_text(text, encoding="utf-8")
    with atomic_path(args.metrics_dir) as tmp:
        tmp.mkdir()
        for variant, entry in summary.items():
            write_json(finite_or_none(entry), Path(tmp) / f"{variant}.json")
    with atomic_path(args.plots) as tmp:
        plot_rows(summary).to_csv(tmp, index=False, float_format="%.6g")
    print(f"wrote {args.out}, {args.metrics_dir}/, {args.plots}", file=sys.stderr)


if __name__ == "__main__":
    main()
