"""Content METEOR: pipeline.evaluation.meteor (cached, bounded, pruned) against the nltk brute force.

Both sides get the same content-word lists (tokenizing is shared and timed separately); the brute
force calls ``nltk.translate.meteor_score.single_meteor_score`` for every (generated, gold) pair
and takes the max, exactly as the reference scripts did. Ours builds a fresh
:class:`pipeline.evaluation.meteor.GoldIndex` (cold caches, inside the timed region) and queries it. WordNet
is loaded before either clock starts. Scores must be identical.

Run: .venv/bin/python -m benchmarks.meteor [--generated data/scores/baseline-s0/generations_test.parquet]
"""

from __future__ import annotations

import argparse
import os
import glob
import platform
import sys
import time
from pathlib import Path

import numpy as np
from nltk.corpus import wordnet
from nltk.translate.meteor_score import single_meteor_score

from benchmarks._results import machine
from pipeline.corpus.anthology import parse_file
from pipeline.evaluation.content import content_words, load_stopwords
from pipeline.infra.io import read_parquet
from pipeline.evaluation.meteor import GoldIndex

REPO = Path(__file__).resolve().parents[1]
FULL_EXPORT = REPO.parent / "shared" / "data" / "anthology+abstracts.bib.gz"
SAMPLE = REPO / "data" / "sample" / "anthology-sample.bib.gz"


def gold_abstracts(bib: Path, year: int) -> list[str]:
    papers = parse_file(bib).papers
    texts = papers.loc[papers["year"] == year, "abstract"].dropna().tolist()
    if not texts:
        raise SystemExit(f"{bib} has no abstracts of {year}")
    return texts


def generated_abstracts(path: str | None, n: int) -> tuple[list[str], str]:
    if path is None:
        found = sorted(glob.glob(str(REPO / "data" / "scores" / "*" / "generations_test.parquet")))
        if not found:
            raise SystemExit("no generated abstracts found: run `dvc repro score` first or pass "
                             "--generated <generations_*.parquet>")
        path = found[0]
    texts = read_parquet(path)["text"].tolist()[:n]
    resolved = Path(path).resolve()
    return texts, str(resolved.relative_to(REPO) if resolved.is_relative_to(REPO) else path)


def _options(argv: list[str] | None) -> str:
    """The command-line options as typed (the --note text left out: it is printed below)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--note" in args:
        i = args.index("--note")
        del args[i:i + 2]
    return "".join(f" {a}" for a in args)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.meteor", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bib", default=str(FULL_EXPORT if FULL_EXPORT.exists() else SAMPLE),
                   help="Anthology export the gold abstracts come from (default: the full export)")
    p.add_argument("--year", type=int, default=2021, help="target year (its abstracts are the gold set)")
    p.add_argument("--generated", default=None,
                   help="Parquet with a 'text' column of generated abstracts "
                        "(default: the first data/scores/*/generations_test.parquet)")
    p.add_argument("--n", type=int, default=10, help="generated abstracts to score")
    p.add_argument("--stopwords", default=str(REPO / "data" / "reference" / "stopwords.txt"))
    p.add_argument("--note", default="", help="a line on where the generated abstracts come from")
    p.add_argument("--out", default=None, help="also write the Markdown result here")
    args = p.parse_args(argv)

    stopwords = load_stopwords(args.stopwords)
    gold_texts = gold_abstracts(Path(args.bib), args.year)
    generated, source = generated_abstracts(args.generated, args.n)
    t0 = time.perf_counter()
    gold = [content_words(t, stopwords) for t in gold_texts]
    hyps = [content_words(t, stopwords) for t in generated]
    t_tok = time.perf_counter() - t0
    wordnet.synsets("warm")                      # load WordNet outside both clocks

    t0 = time.perf_counter()
    brute = [max(single_meteor_score(g, h) for g in gold) for h in hyps]
    t_brute = time.perf_counter() - t0

    t0 = time.perf_counter()
    index = GoldIndex(gold)
    t_index = time.perf_counter() - t0
    best = [index.best(h) for h in hyps]
    t_ours = time.perf_counter() - t0

    ours = np.array([b.score for b in best])
    diff = float(np.max(np.abs(ours - np.array(brute))))
    identical = int((ours == np.array(brute)).sum())
    pairs = len(hyps) * len(gold)
    evaluated = sum(b.n_exact for b in best)
    lines = [
        "# Benchmark: content METEOR (max over a year's gold abstracts)",
        "",
        f"Command: `.venv/bin/python -m benchmarks.meteor{_options(argv)}` (gold: {len(gold)} abstracts of "
        f"{args.year} from `{Path(args.bib).name}`; generated: {len(hyps)} abstracts from "
        f"`{source}`).",
        f"Machine: {machine()}, 1-minute load average {os.getloadavg()[0]:.1f} at the end of "
        f"the run (above ~1.5 means other jobs shared the CPU); "
        f"Python {platform.python_version()}.",
        "",
        "| method | time (s) | per generated abstract (s) | pairs scored exactly |",
        "|---|---:|---:|---:|",
        f"| nltk `single_meteor_score` brute force | {t_brute:.2f} | {t_brute / len(hyps):.3f} | {pairs} |",
        f"| pipeline.evaluation.meteor.GoldIndex (incl. {t_index:.2f} s index build) | {t_ours:.2f} | "
        f"{t_ours / len(hyps):.3f} | {evaluated} ({100 * evaluated / pairs:.1f}%) |",
        "",
        f"**Speed-up: {t_brute / t_ours:.0f}x** (queries alone, without the one-off index build: "
        f"{t_brute / max(t_ours - t_index, 1e-9):.0f}x). Scores: {identical}/{len(hyps)} bit-identical, "
        f"max |difference| {diff:.1e}. Content-word tokenization (shared by both, not in the "
        f"times above): {t_tok:.2f} s.",
        "",
        f"Mean CM of these abstracts: {ours.mean():.4f}.",
        *([""] + [args.note] if args.note else []),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if diff > 1e-9:
        raise SystemExit(f"scores differ from nltk by {diff}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
