"""Joint against shared-base training, side by side, from two runs' `reports/results.json`.

    python scripts/compare_designs.py --joint reports/results.json \
        --shared /other/run/reports/results.json --variants baseline frequency context

Prints a Markdown table: per variant, dev and test PPL and CPL and test CM of each design (means
over seeds, as the report stage wrote them). Baseline is trained the same way in both designs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.infra.io import read_json
from pipeline.models.registry import display_name

COLUMNS = [("dev", "ppl"), ("test", "ppl"), ("dev", "cpl"), ("test", "cpl"), ("test", "cm")]


def load(path: Path) -> dict[str, dict]:
    """Variant -> its entry (``dev``/``test``: year, ppl, cpl, cm, ...) of a report's details."""
    return read_json(path)["variants"]


def table(joint: dict[str, dict], shared: dict[str, dict], order: list[str]) -> str:
    head = ["Model"] + [f"{split.capitalize()} {joint[order[0]][split]['year']} {metric.upper()} "
                        f"joint / shared" for split, metric in COLUMNS]
    rows = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * len(COLUMNS)]
    for variant in order:
        cells = [display_name(variant)]
        for split, metric in COLUMNS:
            a, b = joint[variant][split][metric], shared[variant][split][metric]
            digits = 4 if metric == "cm" else 2
            cells.append(f"{a:.{digits}f} / {b:.{digits}f}")
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--joint", type=Path, required=True, help="reports/results.json of a train.base: joint run")
    p.add_argument("--shared", type=Path, required=True, help="reports/results.json of a train.base: shared run")
    p.add_argument("--variants", nargs="+", required=True, help="variants, in table order")
    args = p.parse_args()
    joint, shared = load(args.joint), load(args.shared)
    missing = [v for v in args.variants if v not in joint or v not in shared]
    if missing:
        raise SystemExit(f"no metrics for {missing} in {args.joint} or {args.shared}")
    print(table(joint, shared, args.variants))


if __name__ == "__main__":
    main()
