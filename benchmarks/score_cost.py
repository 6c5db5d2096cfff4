"""Where a score stage's time goes, on one period: the parts of ``evaluate_period`` timed one by
one, side by side in one process, with PPL/CPL at several batch sizes.

Parts: loading the model and the period's history; PPL/CPL over every abstract
(:func:`pipeline.models.scoring.score_abstracts`, ``positions=True`` as the stage runs it) at each
``--batch-sizes``, the per-abstract NLL sums compared with the first batch size's; generation
(:func:`generate_abstracts`, the stage's decoding settings from ``params.yaml``); and content
METEOR's three steps (:mod:`pipeline.evaluation.meteor`): the gold abstracts' content words, the
gold index (with WordNet's first load), the max-METEOR queries.

    .venv/bin/python -m benchmarks.score_cost --root DIR --model data/models/context2-s0 \
        --split test [--batch-sizes 16 64 256] [--out FILE]

``--root``: a project whose data/ holds the run's splits, tokenizer, features and model (a kept
profile run's outputs checked out of the DVC cache).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from pipeline.infra.numerics import THREADS, configure_torch, pin_kernels

pin_kernels()   # before torch: the stages' kernels

import numpy as np  # noqa: E402
import torch  # noqa: E402
import yaml  # noqa: E402

from benchmarks._results import machine, publish  # noqa: E402
from pipeline.evaluation.content import content_token_mask, content_words, load_stopwords  # noqa: E402
from pipeline.evaluation.meteor import GoldIndex  # noqa: E402
from pipeline.features.tokenizer import load_tokenizer  # noqa: E402
from pipeline.infra.io import read_parquet  # noqa: E402
from pipeline.models.encoding import encode_for_model  # noqa: E402
from pipeline.models.future_lm import load_future_lm, load_histories  # noqa: E402
from pipeline.models.generation import GenerationSettings, generate_abstracts  # noqa: E402
from pipeline.models.scoring import score_abstracts  # noqa: E402


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.score_cost", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", required=True, help="project with the run's data/")
    p.add_argument("--model", default="data/models/context2-s0", help="trained model folder")
    p.add_argument("--split", default="test", choices=("dev", "test"), help="period scored")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 64, 256],
                   help="PPL/CPL batch sizes, the first being the run's")
    p.add_argument("--kernels", default="native", help="numerics.kernels of the run")
    p.add_argument("--out", default=None, help="also write the Markdown result here")
    args = p.parse_args(argv)

    root = Path(args.root)
    configure_torch(THREADS, args.kernels)
    params = yaml.safe_load((root / "params.yaml").read_text())["score"]
    stopwords = load_stopwords(root / "data" / "reference" / "stopwords.txt")
    rows: list[tuple[str, float, str]] = []

    (tok, model), t = timed(lambda: (load_tokenizer(root / "data" / "tokenizer"),
                                     load_future_lm(root / args.model, "cpu")))
    abstracts = read_parquet(root / "data" / "splits" / f"{args.split}.parquet")
    period = str(abstracts["period"].iloc[0])
    history, t_hist = timed(lambda: load_histories(
        [period], model.window, model.history_kinds, root / "data" / "features" / "frequencies",
        root / "data" / "features" / "embeddings", tokenizer=root / "data" / "tokenizer",
        static_periods=model.static_periods,
        reference_periods=model.reference_periods).get(period))
    rows.append(("load tokenizer, model and the period's history", t + t_hist, ""))

    mask = content_token_mask(tok, stopwords)
    texts = abstracts["abstract"].tolist()
    encoded, _ = encode_for_model(tok, texts, model.context_length)
    n_tokens = sum(len(e) - 1 for e in encoded)
    reference = None
    for size in args.batch_sizes:
        scores, t = timed(score_abstracts, model, encoded, mask, history, size,
                          pad_id=tok.eos_token_id, positions=True)
        nll = scores.tokens["nll_sum"].to_numpy()
        if reference is None:
            reference, note = nll, f"{n_tokens / t:,.0f} tokens/s"
        else:
            note = (f"{n_tokens / t:,.0f} tokens/s; per-abstract NLL max |diff| "
                    f"{np.max(np.abs(nll - reference)):.2e} against batch {args.batch_sizes[0]}")
        rows.append((f"PPL/CPL, batch size {size}", t, note))

    settings = GenerationSettings(n=params["n_generate"], max_new_tokens=params["max_new_tokens"],
                                  min_new_tokens=params["min_new_tokens"],
                                  num_beams=params["num_beams"], top_k=params["top_k"],
                                  top_p=params["top_p"],
                                  no_repeat_ngram_size=params["no_repeat_ngram_size"])
    gens, t = timed(generate_abstracts, model, tok, history, settings)
    rows.append((f"generation of {settings.n} abstracts", t, ""))
    gold, t = timed(lambda: [content_words(text, stopwords) for text in texts])
    rows.append((f"CM: content words of the {len(texts):,} gold abstracts", t, ""))
    index, t = timed(GoldIndex, gold)
    rows.append(("CM: gold index (WordNet's first load included)", t, ""))
    best, t = timed(lambda: [index.best(content_words(x, stopwords)) for x in gens["text"]])
    rows.append((f"CM: max METEOR of the {len(best)} generated abstracts", t,
                 f"{sum(b.n_exact for b in best):,} pairs scored exactly"))

    text = "\n".join([
        "# Where a score stage's time goes",
        "",
        f"Command: `.venv/bin/python -m benchmarks.score_cost {' '.join(argv or sys.argv[1:])}`: "
        f"{model.variant} model, |V| = {len(tok)}, context {model.context_length}; {args.split} "
        f"period {period}: {len(texts):,} abstracts, {n_tokens:,} predicted tokens.",
        f"Machine: {machine()}, {THREADS} threads, "
        f"kernels {args.kernels}; 1-minute load average {os.getloadavg()[0]:.1f} at the end "
        f"(above ~2.5 means other jobs shared the CPU); torch {torch.__version__}.",
        "",
        "| part | time (s) | note |",
        "|---|---:|---|",
        *[f"| {name} | {t:.1f} | {note} |" for name, t, note in rows],
    ]) + "\n"
    publish(text, args.out)


if __name__ == "__main__":
    main()
