"""What the same-numbers recipe costs: default-shape training steps, native vs pinned, 1 and 2 threads.

    .venv/bin/python -m benchmarks.numerics_cost [--rounds 20] [--passes 3]

Configurations (each timed in its own process, because the kernel pin acts before torch is imported;
the passes interleave them so that load from other jobs hits them alike):

* ``native``: ``FUTURELM_NO_PIN=1`` and torch's own ``nn.Dropout`` / ``nn.LayerNorm`` (what the
  pipeline ran before issue 16);
* ``pinned``: the stages' setting: ATEN_CPU_CAPABILITY=avx2, MKL_CBWR=COMPATIBLE and the portable
  dropout (pipeline/infra/numerics.py, pipeline/models/portable.py);
* ``pinned + composed LN``: also the opt-in composed LayerNorm (its own cost).

A step is benchmarks.step_time's (forward, backward, clipping, AdamW) on the ``default`` preset
(GPT-2 2 x 128, |V| 4,096, batch 4 x 128, dropout 0.1) for Baseline and Context². Results:
benchmarks/results/numerics.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CONFIGS = {"native": {"FUTURELM_NO_PIN": "1"}, "pinned": {}, "pinned + composed LN": {}}
VARIANTS = ("baseline", "context2")


def worker(config: str, threads: int, rounds: int, warmup: int) -> None:
    import torch
    from torch import nn

    from benchmarks import step_time
    from pipeline.models import future_lm, portable

    if config == "native":
        future_lm.make_portable = lambda model: model
    elif config == "pinned + composed LN":
        def with_layer_norm(model: nn.Module) -> nn.Module:
            return portable.make_portable(model, layer_norm=True)
        future_lm.make_portable = with_layer_norm
    torch.set_num_threads(threads)
    times = step_time.time_steps(step_time.PRESETS["default"], VARIANTS, rounds, warmup, 1.0,
                                 torch.device("cpu"))
    print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(),
                      "mkl_cbwr": os.environ.get("MKL_CBWR"), "times": times}))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.numerics_cost", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=20, help="timed steps per variant and process")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--passes", type=int, default=3, help="processes per configuration")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.worker[0], int(args.worker[1]), args.rounds, args.warmup)
        return
    runs = [(c, t) for t in args.threads for c in CONFIGS if not (c == "pinned + composed LN" and t != 1)]
    times: dict[tuple[str, int], dict[str, list[float]]] = {r: {v: [] for v in VARIANTS} for r in runs}
    seen: dict[tuple[str, int], str] = {}
    for _ in range(args.passes):
        for config, threads in runs:
            env = {k: v for k, v in os.environ.items() if k not in ("FUTURELM_NO_PIN", "MKL_CBWR",
                                                                   "ATEN_CPU_CAPABILITY")}
            env.update(CONFIGS[config])
            out = subprocess.run([sys.executable, "-m", "benchmarks.numerics_cost", "--worker", config,
                                  str(threads), "--rounds", str(args.rounds), "--warmup",
                                  str(args.warmup)], env=env, check=True, capture_output=True,
                                 text=True).stdout
            got = json.loads(out.strip().splitlines()[-1])
            seen[(config, threads)] = f"{got['capability']}, MKL_CBWR={got['mkl_cbwr']}"
            for v in VARIANTS:
                times[(config, threads)][v] += got["times"][v]
    ref = {v: statistics.median(times[("native", 1)][v]) for v in VARIANTS}
    print("| config | threads | kernels | " + " | ".join(f"{v} median ms (ratio)" for v in VARIANTS)
          + " | " + " | ".join(f"{v} min ms" for v in VARIANTS) + " |")
    print("|---|---:|---|" + "---:|" * (2 * len(VARIANTS)))
    for run in runs:
        meds = [statistics.median(times[run][v]) for v in VARIANTS]
        mins = [min(times[run][v]) for v in VARIANTS]
        print(f"| {run[0]} | {run[1]} | {seen[run]} | "
              + " | ".join(f"{m * 1e3:.1f} ({m / ref[v]:.2f}x)" for m, v in zip(meds, VARIANTS))
              + " | " + " | ".join(f"{m * 1e3:.1f}" for m in mins) + " |")


if __name__ == "__main__":
    main()
