"""Run every benchmark in turn (`make bench`); each rewrites its own benchmarks/results/<name>.md.

Benchmarks are measurements, not tests: run them on an otherwise idle machine and commit the
results files they write, which name the hardware they ran on.
"""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = ["parse_filter", "features", "step_time", "scoring", "meteor"]


def main(argv: list[str] | None = None) -> None:
    names = (argv if argv is not None else sys.argv[1:]) or BENCHMARKS
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        raise SystemExit(f"unknown benchmark(s) {unknown}; choose from {BENCHMARKS}")
    for name in names:
        print(f"== benchmarks.{name}", flush=True)
        importlib.import_module(f"benchmarks.{name}").main([])


if __name__ == "__main__":
    main()
