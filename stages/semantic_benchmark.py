"""Stage `semantic_benchmark`: the semantic-change methods scored on pseudo-words of known change.

Reads the abstracts of the first and last group of periods (--first, --last: semantic_change's
groups, resolved) and the stopwords; merges word pairs into pseudo-words whose mix of the two
usages shifts by a known amount (pipeline/corpus/pseudowords.py), scores them with each method of
the method registry (pipeline/semantic/methods/registry.py: contextual, paper
003's Algorithm 1 with the embeddings stage's encoder and layer (or the mean of
semantic_benchmark.contextual_layers layers) on at most semantic_change.max_usages sentences per
pseudo-word and period; apd, the average pairwise distance between the
groups' usages; apd-corrected, apd minus its mean over shuffles of the usages' group labels;
temporal-attention, a masked LM
with paper 003's temporal attention trained on the two groups, then Algorithm 1; time-token, the
same MLM with a period token per text, masked more often than words, Rosin et al. 2022; sgns,
SGNS per group aligned by Procrustes; frequency, the baseline) and correlates each with the
truth (Spearman and Pearson, p-values, bootstrap intervals; each method's smallest detectable ρ and
its power at ρ 0.3 and 0.5 at its number of words). Writes reports/semantic_benchmark.md,
reports/semantic_benchmark.json and plots/semantic_benchmark.csv (method, word, kind, truth,
score) with a PNG beside it. A corpus with too few frequent words gets a report that says so,
not a failed stage. With --semeval (semantic_benchmark.semeval: a SemEval-2020 Task 1 language
folder) the methods score its targets between its two corpora against its graded truth instead
of pseudo-words (--first/--last and --abstracts unused).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pandas as pd

from pipeline.evaluation.content import load_stopwords
from pipeline.infra.device import pick_device
from pipeline.infra.io import atomic_path, write_json
from pipeline.infra.numerics import configure_torch
from pipeline.infra.schema.params import (ChangeMethodsConfig, ContextualConfig,
                                          SemanticBenchmarkConfig)
from pipeline.reports.figures import notice, scatter_panels
from pipeline.reports.semantic_benchmark_report import (benchmark_claims, detectable,
                                                       family_size, markdown, method_notes,
                                                       skipped_markdown)
from pipeline.semantic.benchmark import details, run_benchmark
from pipeline.semantic.methods.interface import EncoderSettings
from pipeline.stats.verdict import judge, to_records
from pipeline.interfaces.semantic_benchmark import INTERFACE
from stages._lib.args import parser_for, runtime_from
from stages._lib.options import build
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


def write_skipped(args: argparse.Namespace, message: str) -> None:
    """The declared outputs of a benchmark that could not be made: a report saying why, the
    message as the JSON, an empty scores table and a notice in place of the figure."""
    with atomic_path(args.out) as tmp:
        tmp.write_text(skipped_markdown(message), encoding="utf-8")
    write_json({"skipped": message}, args.details)
    with atomic_path(args.plot) as tmp:       # the declared outputs exist, empty
        pd.DataFrame(columns=["method", "word", "kind", "truth", "score"]).to_csv(tmp, index=False)
    notice(Path(args.plot).with_suffix(".png"), "no benchmark: too few frequent words")
    print(message, file=sys.stderr)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    config, learned = build(SemanticBenchmarkConfig, args), build(ChangeMethodsConfig, args)
    contextual = build(ContextualConfig, args)
    runtime = runtime_from(args)
    configure_torch(runtime.threads, args.kernels)
    encoding = EncoderSettings(args.layer, args.max_length, args.batch_size,
                               pick_device(runtime.device))
    bench = run_benchmark(args.first, args.last, args.semeval, args.abstracts,
                          load_stopwords(args.stopwords), args.encoder, encoding, config, learned,
                          contextual, args.max_usages)
    if bench.skipped is not None:
        write_skipped(args, bench.skipped)
        return

    run, png = bench.run, Path(args.plot).with_suffix(".png")
    with atomic_path(args.plot) as tmp:
        run.frame.to_csv(tmp, index=False, float_format="%.6g")
    scatter_panels(run.frame, "truth", "score", "method", "kind", png,
                   {m: f"{m}: score vs truth" for m in run.frame["method"].unique()})
    link = os.path.relpath(png.resolve(), Path(args.out).resolve().parent)
    verdicts = judge(benchmark_claims(run.correlated))
    with atomic_path(args.out) as tmp:
        tmp.write_text(markdown(bench.first, bench.last, run.frame, bench.truth, run.correlated,
                                method_notes(run.results, args.encoder), link, args.semeval,
                                verdicts), encoding="utf-8")
    write_json({**details(bench.first, bench.last, args.semeval, bench.truth, run),
                "power": detectable(run.correlated, family_size(verdicts)),
                "verdicts": to_records(verdicts)}, args.details)
    print(f"wrote {args.out} and {args.details}", file=sys.stderr)


if __name__ == "__main__":
    main()
