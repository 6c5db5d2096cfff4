"""Cost of the forecast stage's predicted-distribution pass against the score stage's PPL pass.

Both run on the same model, the same year's bias and the same contexts (the abstracts of Y-1,
cut at the model's context length, the forecast stage's reference contexts):

* ``predicted_distribution``: one batched forward pass + the mean of the softmax over every
  position (pipeline/forecast/vocabulary.py);
* ``score_abstracts``: the score stage's PPL/CPL pass, without and with the per-position table
  (``positions=True``, which the score stage writes for the frequency-bucket metrics);
* ``vocabulary_forecast``: what the forecast stage runs per year (two distribution passes for a
  model with a bias: Y and the Y-1 reference; one for Baseline).

Each is timed ``--repeat`` times, in turn; the table shows the fastest run of each (the least
disturbed by other jobs).

Run: .venv/bin/python -m benchmarks.forecast --root <project with data/> [--model data/models/frequency-s0]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from pipeline.evaluation.content import content_token_mask, load_stopwords
from pipeline.corpus.periods import shift
from pipeline.forecast.vocabulary import (period_history, predicted_distribution, reference_texts,
                                         vocabulary_forecast)
from pipeline.models.future_lm import load_future_lm
from pipeline.models.encoding import encode_for_model
from pipeline.models.scoring import score_abstracts
from pipeline.features.tokenizer import load_tokenizer
from benchmarks._results import publish

REPO = Path(__file__).resolve().parents[1]


def fastest(passes: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """The fastest of ``repeat`` runs of each pass, run in turn (round robin), so a change in
    the machine's load during the benchmark affects every pass alike."""
    best = {name: float("inf") for name in passes}
    for _ in range(repeat):
        for name, fn in passes.items():
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.forecast", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=str(REPO), help="project with data/ built by `dvc repro`")
    p.add_argument("--model", default="data/models/frequency-s0", help="trained model folder")
    p.add_argument("--period", default="2021", help="forecast period Y, a label (contexts: Y-1)")
    p.add_argument("--batch-size", type=int, default=8, help="contexts per batch (both passes)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--repeat", type=int, default=3, help="timed runs of each pass")
    p.add_argument("--out", default=None, help="also write the Markdown result here")
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    root = Path(args.root)
    data = root / "data"
    tok = load_tokenizer(data / "tokenizer")
    mask = content_token_mask(tok, load_stopwords(data / "reference" / "stopwords.txt"))
    model = load_future_lm(root / args.model, args.device)
    corpus = data / "corpus" / "abstracts.parquet"
    encoded, _ = encode_for_model(tok, reference_texts(corpus, args.period), model.context_length)
    freqs, embs = data / "features" / "frequencies", data / "features" / "embeddings"
    history = period_history(model, args.period, freqs, embs, "benchmark")
    n = sum(len(e) - 1 for e in encoded)
    eos = tok.eos_token_id

    def sync() -> None:
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()

    passes = {
        "PPL/CPL pass (score stage, no positions)":
            lambda: (score_abstracts(model, encoded, mask, history, args.batch_size, eos), sync()),
        "PPL/CPL pass + per-position table (score stage)":
            lambda: (score_abstracts(model, encoded, mask, history, args.batch_size, eos,
                                     positions=True), sync()),
        "predicted distribution, one pass (forecast)":
            lambda: (predicted_distribution(model, encoded, history, args.batch_size, eos), sync()),
        "forecast of one year (Y and Y-1 reference)":
            lambda: (vocabulary_forecast(model, encoded, args.period, freqs, embs, args.batch_size,
                                         eos), sync()),
    }
    fastest({"warm-up": next(iter(passes.values()))}, 1)
    times = fastest(passes, args.repeat)
    base = next(iter(times.values()))
    rows = [f"| {name} | {t:.2f} | {n / t:,.0f} | {t / base:.2f}x |" for name, t in times.items()]
    n_params = sum(q.numel() for q in model.parameters())
    device = (torch.cuda.get_device_name() if args.device.startswith("cuda")
              else f"{platform.machine()} CPU, {os.cpu_count()} cores")
    text = "\n".join([
        "# Benchmark: forecast pass against the score stage's PPL pass",
        "",
        f"Command: `.venv/bin/python -m benchmarks.forecast {' '.join(argv or sys.argv[1:])}`: "
        f"{model.variant} model ({n_params / 1e6:.2f}M parameters incl. bias, |V| = {len(tok)}, "
        f"context {model.context_length}), bias of {args.period}, the {len(encoded)} abstracts of "
        f"{shift(args.period, -1)} = {n:,} predicted positions, batch size {args.batch_size}, "
        f"{args.threads} torch thread(s), fastest of {args.repeat} runs.",
        f"Machine: {device}; 1-minute load average {os.getloadavg()[0]:.1f} at the end of the run "
        f"(above ~1.5 on 2 cores means other jobs shared the CPU); torch {torch.__version__}.",
        "",
        "| pass | time (s) | positions/s | vs PPL pass |",
        "|---|---:|---:|---:|",
        *rows,
    ]) + "\n"
    publish(text, args.out)


if __name__ == "__main__":
    main()
