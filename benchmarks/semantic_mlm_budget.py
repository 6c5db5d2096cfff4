"""How long must the temporal-attention MLM train? Spearman ρ against training steps on the
pseudo-word benchmark, with the MLM trained on the targets' sentences or on every text.

The benchmark is the semantic_benchmark stage's (:func:`pipeline.semantic.benchmark.build`):
``--changed`` pseudo-words whose mix of two words' usages shifts by known amounts and
``--stable`` ones that do not, made from the abstracts of ``--first`` and ``--last`` (one year
each) of ``--corpus`` (a CSV with ``date`` and ``text``, or the filter stage's abstracts parquet).
For every setting of ``--steps`` × ``--usages`` × ``--seeds`` the method
(:func:`pipeline.semantic.temporal_mlm.texts_change`, the stages' one code path) trains and
scores every pseudo-word; ρ with the truth, its Fisher-z interval
(:func:`pipeline.stats.ranks.spearman_test`, the benchmark report's), the training and total
seconds and the last losses are written per run to ``--out`` (JSON lines, appended, so an
interrupted grid keeps what it has and a rerun skips what is there).

``--usages 0`` trains on every text whole, in windows of 128 tokens; ``N`` on each period's
sentences holding a target, at most N per target (:func:`~pipeline.semantic.temporal_mlm.
training_texts`).

    .venv/bin/python -m benchmarks.semantic_mlm_budget --corpus FILE --first 2019 --last 2022 \\
        --steps 250 500 1000 --usages 200 --seeds 0 1 --out results.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

from pipeline.infra.numerics import configure_torch, pin_kernels

pin_kernels()   # before torch: the stages' kernels

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from pipeline.evaluation.content import load_stopwords  # noqa: E402
from pipeline.semantic.benchmark import build  # noqa: E402
from pipeline.stats.ranks import spearman_test  # noqa: E402
from pipeline.semantic.temporal_mlm import (TEMPORAL_ATTENTION, TemporalMLMSettings,  # noqa: E402
                                            texts_change)

ENCODER = "sentence-transformers/all-MiniLM-L6-v2"


def read_texts(path: str) -> pd.DataFrame:
    """Columns ``period`` (the year, a string) and ``abstract``."""
    frame = pd.read_parquet(path) if path.endswith(".parquet") else pd.read_csv(path)
    text = "abstract" if "abstract" in frame else "text"
    year = frame["period"].astype(str) if "period" in frame else frame["date"].astype(str).str[:4]
    return pd.DataFrame({"period": year, "abstract": frame[text].astype(str)})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, help="CSV (date, text) or abstracts parquet")
    parser.add_argument("--first", required=True, help="the first group's year")
    parser.add_argument("--last", required=True, help="the last group's year")
    parser.add_argument("--changed", type=int, default=20, help="changed pseudo-words")
    parser.add_argument("--stable", type=int, default=20, help="stable pseudo-words")
    parser.add_argument("--min-count", type=int, default=10,
                        help="a merged word occurs at least this often in each group")
    parser.add_argument("--stopwords", default="../shared/data/stopwords.txt")
    parser.add_argument("--steps", type=int, nargs="+", required=True, help="training steps")
    parser.add_argument("--usages", type=int, nargs="+", default=[200],
                        help="training sentences per target and period; 0: every text whole")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="MLM seeds")
    parser.add_argument("--method", default=TEMPORAL_ATTENTION,
                        help="temporal-attention or time-token")
    parser.add_argument("--out", required=True, help="JSON lines, appended")
    args = parser.parse_args(argv)
    configure_torch(kernels="portable")

    texts, truth = build(read_texts(args.corpus), [args.first], [args.last], args.changed,
                         args.stable, args.min_count, 0.8, 0, load_stopwords(args.stopwords))
    words = truth["word"].tolist()
    first, last = ([texts[texts["period"] == q]["abstract"].tolist()] for q in
                   (args.first, args.last))
    print(f"{len(words)} pseudo-words; {len(first[0])} + {len(last[0])} abstracts",
          file=sys.stderr)
    out = Path(args.out)
    done = set()
    if out.exists():
        done = {(r["method"], r["steps"], r["usages"], r["seed"]) for r in
                map(json.loads, out.read_text().splitlines())}
    for usages in args.usages:
        for steps in args.steps:
            for seed in args.seeds:
                if (args.method, steps, usages, seed) in done:
                    continue
                settings = replace(TemporalMLMSettings(), steps=steps, usages=usages, seed=seed)
                started = time.perf_counter()
                scores, info = texts_change(first, last, words, settings, ENCODER,
                                            progress=False, method=args.method)
                ok = np.isfinite(scores)
                rho, (low, high), _, _ = spearman_test(scores[ok], truth["truth"].to_numpy()[ok])
                row = {"method": args.method, "steps": steps, "usages": usages, "seed": seed,
                       "words": int(ok.sum()), "rho": round(rho, 4),
                       "ci": [round(low, 4), round(high, 4)],
                       "train_s": round(info["train_s"], 1),
                       "total_s": round(time.perf_counter() - started, 1),
                       "last_loss": round(float(np.mean(info["losses"][-20:])), 3)}
                print(json.dumps(row), file=sys.stderr)
                with out.open("a", encoding="utf-8") as handle:
                    handle.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
