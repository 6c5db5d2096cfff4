"""The params of two params.yaml files that differ, as Markdown list lines (scripts/rejudge_profile.sh):

    python scripts/params_diff.py RUN_PARAMS HEAD_PARAMS --stages report verdicts

Exits with an error naming them when a param that one of ``--stages`` reads (its ``params`` in
the dvc.yaml beside HEAD_PARAMS) differs and the run had it: a key only HEAD has is new, and the
run's code could not have read it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import yaml


def flat(tree: Mapping[str, object], prefix: str = "") -> Iterator[tuple[str, object]]:
    """``(dotted.key, value)`` of every leaf."""
    for key, value in tree.items():
        if isinstance(value, Mapping):
            yield from flat(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run", type=Path, help="the kept run's params.yaml")
    p.add_argument("head", type=Path, help="HEAD's rendering of the same profile")
    p.add_argument("--stages", nargs="+", default=[],
                   help="stages of the dvc.yaml beside HEAD whose params must be the run's")
    args = p.parse_args(argv)
    run, head = (dict(flat(yaml.safe_load(path.read_text(encoding="utf-8"))))
                 for path in (args.run, args.head))
    stages = yaml.safe_load((args.head.parent / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    read = [key for name in args.stages for key in stages[name].get("params", [])]
    differ = [k for k in sorted(set(run) | set(head))
              if run.get(k, "(absent)") != head.get(k, "(absent)")]
    bad = [k for k in differ if k in run and any(k == r or k.startswith(r + ".") for r in read)]
    if bad:
        sys.exit("error: the judging stages read params that differ from the run's: " + ", ".join(
            f"{k} (run {run[k]!r}, HEAD {head.get(k, '(absent)')!r})" for k in bad))
    for k in differ:
        print(f"- `{k}`: run {run.get(k, '(absent)')!r}, HEAD {head.get(k, '(absent)')!r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
