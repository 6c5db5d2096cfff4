"""Perplexity of the base LM on the training years before and after adapting it.

The packaged base is SmolLM2-135M-**Instruct**, quantized to Q4_1 (dequantized to fp32 on load):
what do instruction tuning and quantization cost on ACL abstracts, and how much of it does
adapting the top blocks win back? This reads a finished run of ``profiles/pretrained-adapted*.yaml``
(``train.base: adapted``) in ``--project`` and scores, from that run's own caches, every training
period, the dev and the test period with

* ``baseline-0-s<seed>`` — SmolLM2 as it is (its final states: ``data/cache/base``), and
* ``baseline-s<seed>`` — that seed's adapted Baseline (``data/cache/baseline-s<seed>``),

through :func:`pipeline.training.cached.evaluate_cached` (the dev perplexity of early stopping:
``lm_head`` over the cached final states, the one NLL of :mod:`pipeline.models.nll`), so the dev
numbers equal the run's ``best_dev_ppl``. The training-year numbers are on the abstracts the
adapted Baseline was trained on (one epoch): an in-sample fit, not a held-out score.

    .venv/bin/python -m benchmarks.adapted_train_ppl --project /path/to/run \\
        --out benchmarks/results/adapted_train_ppl.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from pipeline.infra.numerics import configure_torch, pin_kernels

pin_kernels()

from benchmarks._results import machine, publish  # noqa: E402
from pipeline.infra.io import read_json  # noqa: E402
from pipeline.models.future_lm import load_future_lm  # noqa: E402
from pipeline.training.cached import evaluate_cached  # noqa: E402
from pipeline.training.run import open_cache  # noqa: E402


def period_ppl(project: Path, model_dir: str, cache_dir: str, periods: list[str],
               batch_size: int) -> dict[str, float]:
    """Token-level perplexity of each period under the model in ``model_dir`` (no temporal
    module: a Baseline), from the cached final states in ``cache_dir``."""
    model = load_future_lm(project / model_dir)
    states = open_cache(project / cache_dir, model.lm, project / "data" / "tokenizer",
                        model.context_length)
    return {p: evaluate_cached(model, {p: states[p]}, {}, batch_size).ppl for p in periods}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--project", type=Path, required=True,
                   help="a finished run of an adapted pretrained profile (its data/ folder)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--batch-size", type=int, default=8, help="abstracts per scoring batch")
    p.add_argument("--kernels", default="native", choices=["portable", "native"],
                   help="the run's numerics.kernels")
    p.add_argument("--out", help="write the Markdown result here too")
    args = p.parse_args(argv)
    configure_torch(kernels=args.kernels)
    periods = sorted(read_json(args.project / "data" / "cache" / "base" / "identity.json")["periods"])
    rows, start = [], time.perf_counter()
    unadapted = period_ppl(args.project, "data/models/baseline-0-s0", "data/cache/base", periods,
                           args.batch_size)
    rows.append(("SmolLM2-135M-Instruct Q4_1, as it is (baseline-0)", unadapted))
    for seed in args.seeds:
        rows.append((f"adapted top 2 blocks + norm, seed {seed} (baseline-s{seed})",
                     period_ppl(args.project, f"data/models/baseline-s{seed}",
                                f"data/cache/baseline-s{seed}", periods, args.batch_size)))
    header = "| model | " + " | ".join(periods) + " |"
    lines = [header, "|---|" + "---:|" * len(periods)]
    for name, ppl in rows:
        lines.append(f"| {name} | " + " | ".join(f"{ppl[p]:.2f}" for p in periods) + " |")
    adapted = [ppl for name, ppl in rows[1:]]
    lines.append("| change, mean over seeds | " + " | ".join(
        f"{100 * (sum(a[p] for a in adapted) / len(adapted) / unadapted[p] - 1):+.1f} %"
        for p in periods) + " |")
    text = (f"Project: `{args.project}`; machine: {machine()}; "
            f"{time.perf_counter() - start:.0f} s.\n\n" + "\n".join(lines))
    publish(text, args.out, "\n")


if __name__ == "__main__":
    main()
