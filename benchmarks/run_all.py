"""Run every benchmark in turn at its default settings (`make bench`), printing each one's Markdown.

Benchmarks are measurements, not tests. To record one, run it alone on an otherwise idle machine
with `python -m benchmarks.<name> --out <file>` and fold the result into
benchmarks/results/<name>.md, which keeps the hardware and load each run saw.
"""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = ["parse_filter", "parse_speed", "read_corpus", "features", "step_time", "scoring", "meteor",
              "forecast", "temperature_step", "continuous_step", "variant_step",
              "temporal_attention_step", "semantic_change_scale", "semantic_layers", "base_cache",
              "continuous_targets"]


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
