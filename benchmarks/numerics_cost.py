"""What portable numerics cost: native vs portable kernels, 1 and 2 threads, for a training step,
a scoring pass and the encoder.

    .venv/bin/python -m benchmarks.numerics_cost [--rounds 20] [--passes 3]

Configurations (each timed in its own process, because the kernel pin acts before torch is imported
and MKL fixes its branch at its first call; the passes interleave them so that load from other jobs
hits them alike):

* ``portable``: the stages' default, params ``numerics.kernels: portable`` (ATen AVX2 kernels, MKL's
  vendor-neutral COMPATIBLE branch, the portable dropout; pipeline/infra/numerics.py);
* ``native``: ``numerics.kernels: native``, what a user may choose: the same but MKL's fastest
  branch for this CPU;
* ``unpinned``: ``FUTURELM_NO_PIN=1`` and torch's own ``nn.Dropout`` (no pin at all: the speed
  the pin is measured against).

Work: a training step (benchmarks.step_time's forward, backward, clipping, AdamW) of Baseline and
Context² on the ``default`` preset (GPT-2 2 x 128, |V| 4,096, batch 4 x 128, dropout 0.1); a scoring
pass (Baseline, eval, no grad, batch 16 x 128: the score stage's forward); the encoder
(all-MiniLM-L6-v2, the packaged copy, eval, no grad, batch 32 x 128 tokens: the embeddings stage's
forward). Results: benchmarks/results/numerics.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CONFIGS = {"portable": {}, "native": {}, "unpinned": {"FUTURELM_NO_PIN": "1"}}
WORK = ("train baseline", "train context2", "score", "encoder")
ENCODER = "sentence-transformers/all-MiniLM-L6-v2"


def _timed(fn, rounds: int, warmup: int) -> list[float]:
    times = []
    for r in range(warmup + rounds):
        start = time.perf_counter()
        fn()
        if r >= warmup:
            times.append(time.perf_counter() - start)
    return times


def worker(config: str, threads: int, rounds: int, warmup: int) -> None:
    import torch

    from benchmarks import step_time
    from pipeline.infra.numerics import configure_torch, mkl_branch
    from pipeline.models import future_lm, hub

    if config == "unpinned":
        future_lm.make_portable = lambda model: model
    configure_torch(threads, "native" if config == "native" else "portable")
    sizes = step_time.PRESETS["default"]
    times = step_time.time_steps(sizes, ("baseline", "context2"), rounds, warmup, 1.0,
                                 torch.device("cpu"))
    result = {f"train {v}": t for v, t in times.items()}
    g = torch.Generator().manual_seed(0)
    model = step_time.make_models(sizes, ("baseline",), torch.device("cpu"))["baseline"].eval()
    history = step_time.make_history(sizes, 1.0, torch.device("cpu"))
    ids = torch.randint(1, sizes.vocab, (16, 128), generator=g)
    mask = torch.ones_like(ids)
    with torch.no_grad():
        result["score"] = _timed(lambda: model(ids, mask, history), rounds, warmup)
        encoder = hub.load_encoder(ENCODER).eval()
        enc_ids = torch.randint(1000, 20000, (32, 128), generator=g)
        result["encoder"] = _timed(lambda: encoder(input_ids=enc_ids,
                                                   attention_mask=torch.ones_like(enc_ids)),
                                   rounds, warmup)
    print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(),
                      "mkl": mkl_branch(), "times": result}))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.numerics_cost", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=20, help="timed repeats per work item and process")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--passes", type=int, default=3, help="processes per configuration")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker(args.worker[0], int(args.worker[1]), args.rounds, args.warmup)
        return
    runs = [(c, t) for t in args.threads for c in CONFIGS]
    times: dict[tuple[str, int], dict[str, list[float]]] = {r: {w: [] for w in WORK} for r in runs}
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
            seen[(config, threads)] = f"{got['capability']}, MKL {got['mkl']}"
            for w in WORK:
                times[(config, threads)][w] += got["times"][w]
    print("| config | threads | kernels | " + " | ".join(f"{w} ms" for w in WORK)
          + " | portable / native |")
    print("|---|---:|---|" + "---:|" * (len(WORK) + 1))
    for config, threads in runs:
        meds = {w: statistics.median(times[(config, threads)][w]) for w in WORK}
        native = {w: statistics.median(times[("native", threads)][w]) for w in WORK}
        ratio = (" / ".join(f"{meds[w] / native[w]:.2f}" for w in WORK)
                 if config == "portable" else "")
        print(f"| {config} | {threads} | {seen[(config, threads)]} | "
              + " | ".join(f"{meds[w] * 1e3:.1f}" for w in WORK) + f" | {ratio} |")


if __name__ == "__main__":
    main()
