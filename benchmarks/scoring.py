"""PPL/CPL scoring throughput (tokens/s) and generation speed of a trained future LM.

Scores the dev abstracts with :func:`pipeline.models.scoring.score_abstracts` and generates
``--n-generate`` abstracts with the score stage's decoding settings, one abstract per ``generate``
call (the pipeline before the chunked decoding) and :data:`pipeline.models.generation.CHUNK` per
call, alternating, side by side in one run, on the recorded thread count and kernels.

Run: .venv/bin/python -m benchmarks.scoring [--model data/models/frequency-s0]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from pipeline.infra.numerics import THREADS, configure_torch, pin_kernels

pin_kernels()   # before torch: the stages' kernels

import torch  # noqa: E402
import yaml  # noqa: E402

from pipeline.evaluation.content import content_token_mask, load_stopwords
from pipeline.models.future_lm import load_future_lm
from pipeline.models import generation
from pipeline.models.generation import GenerationSettings, generate_abstracts
from pipeline.models.future_lm import load_histories
from pipeline.infra.io import read_parquet
from pipeline.models.encoding import encode_for_model
from pipeline.models.scoring import score_abstracts
from pipeline.features.tokenizer import load_tokenizer
from benchmarks._results import machine, publish

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.scoring", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=str(REPO), help="project with data/ built by `dvc repro`")
    p.add_argument("--model", default="data/models/frequency-s0", help="trained model folder")
    p.add_argument("--n-generate", type=int, default=10, help="abstracts generated per setting")
    p.add_argument("--rounds", type=int, default=2, help="alternating rounds of both settings")
    p.add_argument("--out", default=None, help="also write the Markdown result here")
    args = p.parse_args(argv)

    root = Path(args.root)
    params = yaml.safe_load((root / "params.yaml").read_text())["score"]
    tok = load_tokenizer(root / "data" / "tokenizer")
    mask = content_token_mask(tok, load_stopwords(root / "data" / "reference" / "stopwords.txt"))
    model = load_future_lm(root / args.model, "cpu")
    dev = read_parquet(root / "data" / "splits" / "dev.parquet")
    period = str(dev["period"].iloc[0])
    history = load_histories([period], model.window, model.history_kinds,
                             root / "data" / "features" / "frequencies",
                             root / "data" / "features" / "embeddings").get(period)
    # the score stage's truncation rule: the context length the model was trained with
    encoded, _ = encode_for_model(tok, dev["abstract"].tolist(), model.context_length)
    n_tokens = sum(len(e) - 1 for e in encoded)
    settings = GenerationSettings(n=args.n_generate, max_new_tokens=params["max_new_tokens"],
                                  num_beams=params["num_beams"], top_k=params["top_k"],
                                  top_p=params["top_p"],
                                  no_repeat_ngram_size=params["no_repeat_ngram_size"])
    n_params = sum(p.numel() for p in model.parameters())
    configure_torch(THREADS)
    chunk = generation.CHUNK
    t0 = time.perf_counter()
    score_abstracts(model, encoded, mask, history, params["batch_size"])
    t_score = time.perf_counter() - t0
    times: dict[int, list[float]] = {1: [], chunk: []}
    for _ in range(args.rounds):
        for size in times:
            generation.CHUNK = size
            t0 = time.perf_counter()
            generate_abstracts(model, tok, history, settings)
            times[size].append(time.perf_counter() - t0)
    generation.CHUNK = chunk
    rows = [f"| {size} | {min(ts):.2f} | {min(ts) / settings.n:.2f} | {min(times[1]) / min(ts):.2f}x |"
            for size, ts in times.items()]
    text = "\n".join([
        "# Benchmark: PPL/CPL scoring throughput and generation speed",
        "",
        f"Command: `.venv/bin/python -m benchmarks.scoring {' '.join(argv or sys.argv[1:])}`: "
        f"{model.variant} model ({n_params / 1e6:.2f}M parameters incl. bias, |V| = {len(tok)}, "
        f"context {model.context_length}), {len(encoded)} dev abstracts of {period} = {n_tokens:,} predicted "
        f"tokens, batch size {params['batch_size']}: scored in {t_score:.2f} s "
        f"({n_tokens / t_score:,.0f} tokens/s) on {THREADS} threads. Generation of {settings.n} "
        f"abstracts with beam {settings.num_beams} + sampling, {settings.max_new_tokens} new tokens "
        f"max: best of {args.rounds} alternating rounds.",
        f"Machine: {machine()}, 1-minute load average {os.getloadavg()[0]:.1f} at the end of "
        f"the run (above ~1.5 means other jobs shared the CPU); "
        f"torch {torch.__version__}.",
        "",
        "| abstracts per generate() call | generation time (s) | s/abstract | speed-up |",
        "|---:|---:|---:|---:|",
        *rows,
    ]) + "\n"
    publish(text, args.out)


if __name__ == "__main__":
    main()
