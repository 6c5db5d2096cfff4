"""Which measure and which layers rank the pseudo-word benchmark's change best: the prototype
distance (paper 003's Algorithm 1 line 12), APD and shuffle-corrected APD, each on the mean of the
last k hidden layers of the encoder (k = 1 .. all; ``semantic_benchmark.contextual_layers``).

The benchmark's own words (:func:`pipeline.semantic.benchmark.build`: pseudo-words of the
semantic_change groups, ``--changed`` and ``--stable``, 10 each as on the sample) for each seed
of pairs, from a BibTeX export (``--bib``) or the filter stage's abstracts (``--abstracts``, the
kept semantic_benchmark runs' texts); each group's usages
sampled as the apd methods sample them (at most ``--usages`` per word and group,
:func:`pipeline.semantic.usages.pooled_group_usages`) and encoded once with every hidden state
kept, so that every k and measure is scored on the same usages; Spearman ρ with the truth per
seed and the mean over seeds. The prototype here is the mean of the *sampled* usages (the
contextual method in the benchmark averages every usage).

    .venv/bin/python -m benchmarks.semantic_layers [--bib data/sample/anthology-sample.bib.gz]
        [--first 2017] [--last 2021] [--seeds 0 1 2] [--out FILE]
    .venv/bin/python -m benchmarks.semantic_layers --abstracts data/corpus/abstracts.parquet \
        --first 2019 --last 2022 --changed 20 --stable 20
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
import torch

from benchmarks._results import machine, publish
from pipeline.corpus.anthology import parse_file
from pipeline.evaluation.content import load_stopwords
from pipeline.infra.numerics import configure_torch
from pipeline.models.hub import MINILM, load_encoder, load_tokenizer_for
from pipeline.semantic import word_vectors
from pipeline.semantic.benchmark import build
from pipeline.semantic.scores import correlations
from pipeline.semantic.shuffled import shuffle_corrected, word_rng
from pipeline.semantic.usages import pooled_group_usages
from pipeline.semantic.vectors import average_pairwise_distance, cosine_distance

MEASURES = ("prototype", "apd", "apd-corrected")


def every_layer(encoder, batch, layer, layers, device):  # noqa: ANN001, ARG001
    """Every hidden state side by side, ``[B, L, (n_layers + 1) d]``: one pass serves every k."""
    return torch.cat(encoder(input_ids=batch.input_ids.to(device),
                             attention_mask=batch.attention_mask.to(device),
                             output_hidden_states=True).hidden_states, dim=-1)


def usage_vectors(encoder, tokenizer, texts: list[str], words: list[str], cap: int,
                  seed: int) -> list[np.ndarray]:
    """Each word's sampled usages in ``texts``, ``[n, n_states, d]``."""
    sentences, counts_for = pooled_group_usages([texts], words, cap, seed)
    states, d = encoder.config.num_hidden_layers + 1, encoder.config.hidden_size
    found: list[list[np.ndarray]] = [[] for _ in words]
    for i, v in word_vectors.occurrence_vectors(encoder, tokenizer, sentences, words, -1, 128,
                                                16, torch.device("cpu"), counts_for):
        if v is not None:
            found[i].append(v)
    return [np.array(f, dtype=np.float64).reshape(-1, states, d) for f in found]


def scores(first: list[np.ndarray], last: list[np.ndarray], words: list[str], k: int,
           permutations: int, seed: int) -> dict[str, np.ndarray]:
    """Each measure's score of each word on the mean of the last ``k`` hidden states."""
    out: dict[str, list[float]] = {m: [] for m in MEASURES}
    for word, a, b in zip(words, first, last):
        a, b = a[:, -k:].mean(axis=1), b[:, -k:].mean(axis=1)
        out["prototype"].append(float(cosine_distance(a.mean(0, keepdims=True),
                                                      b.mean(0, keepdims=True))[0]))
        out["apd"].append(average_pairwise_distance(a, b))
        out["apd-corrected"].append(shuffle_corrected(average_pairwise_distance, a, b,
                                                      permutations, word_rng(seed, word)))
    return {m: np.array(v) for m, v in out.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bib", default="data/sample/anthology-sample.bib.gz")
    parser.add_argument("--abstracts", default=None,
                        help="the filter stage's abstracts parquet, read instead of --bib")
    parser.add_argument("--changed", type=int, default=10, help="changed pseudo-words")
    parser.add_argument("--stable", type=int, default=10, help="stable pseudo-words")
    parser.add_argument("--first", type=int, default=2017)
    parser.add_argument("--last", type=int, default=2021)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--usages", type=int, default=100, help="apd_usages")
    parser.add_argument("--permutations", type=int, default=20, help="apd_permutations")
    parser.add_argument("--stopwords", default="data/reference/stopwords.txt")
    parser.add_argument("--out", default=None, help="also write the Markdown here")
    args = parser.parse_args(argv)
    configure_torch(2)
    word_vectors.layer_states = every_layer
    source = args.abstracts or args.bib
    papers = (pd.read_parquet(args.abstracts, columns=["year", "abstract"]) if args.abstracts
              else parse_file(args.bib).papers)
    texts = papers[papers.year.isin([args.first, args.last])][["year", "abstract"]].copy()
    texts["period"] = texts["year"].astype(str)
    stop = load_stopwords(args.stopwords)
    encoder, tokenizer = load_encoder(MINILM).eval(), load_tokenizer_for(MINILM)
    n_states = encoder.config.num_hidden_layers + 1
    rho = np.zeros((len(args.seeds), n_states, len(MEASURES)))
    start = time.perf_counter()
    for s, seed in enumerate(args.seeds):
        table, truth = build(texts[["period", "abstract"]], [str(args.first)], [str(args.last)],
                             args.changed, args.stable, 10, 0.8, seed, stop)
        words = truth["word"].tolist()
        first, last = (usage_vectors(encoder, tokenizer,
                                     table[table["period"] == str(g)]["abstract"].tolist(),
                                     words, args.usages, seed) for g in (args.first, args.last))
        for k in range(1, n_states + 1):
            got = scores(first, last, words, k, args.permutations, seed)
            for m, measure in enumerate(MEASURES):
                rho[s, k - 1, m] = correlations(got[measure], truth["truth"]).spearman
    seconds = time.perf_counter() - start
    head = " | ".join(f"{m} seed {seed}" for m in MEASURES for seed in args.seeds)
    lines = [f"{source}, {args.first} → {args.last}, pseudo-word seeds {args.seeds} "
             f"({args.changed} changed + {args.stable} stable each), "
             f"at most {args.usages} usages per word and group, "
             f"{args.permutations} shuffles; {MINILM}; {machine()}; {seconds:.0f} s.", "",
             "Spearman ρ with the truth, mean over the seeds (then each seed):", "",
             f"| last k layers | {' | '.join(MEASURES)} | {head} |",
             "|---:|" + "---:|" * (len(MEASURES) * (1 + len(args.seeds)))]
    for k in range(1, n_states + 1):
        means = " | ".join(f"{rho[:, k - 1, m].mean():.3f}" for m in range(len(MEASURES)))
        each = " | ".join(f"{rho[s, k - 1, m]:.3f}" for m in range(len(MEASURES))
                          for s in range(len(args.seeds)))
        lines.append(f"| {k} | {means} | {each} |")
    publish("\n".join(lines), args.out, end="\n")


if __name__ == "__main__":
    main()
