"""Stage `semantic_change`: which words changed meaning between two groups of periods.

Reads the per-period frequency and embedding files of both groups (--first, --last: period
labels of split.period's kind), the LM tokenizer (which targets are one token), the stopwords,
the abstracts (the learned methods' texts, an example sentence per word and group), optionally a
targets file (.csv with `word` and an optional graded `truth`, or one word per line) and, given
--benchmark (by hand; the DVC stage does not, so that scoring targets never waits for the
benchmark), the benchmark's reports/semantic_benchmark.json. Scores every target by each method of the method
registry (pipeline/semantic/methods/registry.py: contextual, paper 003's
Algorithm 1 on the pooled embeddings, or with a targets file on the targets' sentences encoded
here with the embeddings stage's encoder and layer, at most semantic_change.max_usages per target
and period, and then the embeddings are not read; apd, the average pairwise distance between
the two groups' usages, at most semantic_benchmark.apd_usages per target and group encoded here;
apd-corrected, apd minus its mean over semantic_benchmark.apd_permutations shuffles of the
usages' group labels; temporal-attention, paper 003's temporal-attention MLM
trained on the two groups' abstracts, then Algorithm 1; time-token, the same MLM with a period
token per text instead, masked more often than words, Rosin et al. 2022's time masking; sgns,
SGNS per group, Procrustes-aligned; frequency, the log-frequency baseline), with the learned
methods' settings of the benchmark (params semantic_benchmark.temporal_*, .sgns_*). Writes
data/semantic_change/scores.parquet (method, word, token_id, score, rank, first_count, last_count),
reports/semantic_change.md (with the benchmark's table, or where to find it) and metrics/semantic_change.json
(contextual vs frequency agreement; with truth, each method's rho).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pipeline.corpus.periods import in_time_order
from pipeline.evaluation.content import load_stopwords
from pipeline.infra.io import atomic_path, read_json, write_json, write_parquet
from pipeline.infra.numerics import configure_torch
from pipeline.infra.schema.params import ChangeMethodsConfig, ContextualConfig, SemanticChangeConfig
from pipeline.reports.semantic_change_report import benchmark_lines, examples, markdown
from pipeline.semantic.change import analyse
from pipeline.semantic.methods.interface import EncoderSettings
from pipeline.semantic.scores import change_metrics
from pipeline.interfaces import semantic_benchmark as benchmark_stage
from pipeline.interfaces.semantic_change import INTERFACE
from stages._lib.args import parser_for
from stages._lib.options import build
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    config, learned = build(SemanticChangeConfig, args), build(ChangeMethodsConfig, args)
    contextual = build(ContextualConfig, args)
    first, last = in_time_order(args.first), in_time_order(args.last)
    configure_torch(kernels=args.kernels)
    encoding = EncoderSettings(args.layer, args.max_length, args.batch_size)
    done = analyse(first, last, args.frequencies, args.embeddings, args.abstracts, args.tokenizer,
                   load_stopwords(args.stopwords), args.targets, args.encoder, config, learned,
                   encoding, contextual)
    run = done.run

    benchmark = Path(args.benchmark or benchmark_stage.REPORT)
    link = os.path.relpath(benchmark.with_suffix(".md").resolve(), Path(args.out).resolve().parent)
    bench = benchmark_lines(read_json(benchmark) if args.benchmark else None, link)
    write_parquet(run.frame, args.scores, {"first": " ".join(first), "last": " ".join(last)})
    with atomic_path(args.out) as tmp:
        tmp.write_text(markdown(done.targets, run.frame, first, last,
                                examples(run.frame, done.inputs.group_texts, config.top),
                                config.top, run.correlated, bench), encoding="utf-8")
    write_json(change_metrics(run.frame, run.correlated), args.metrics)
    print(f"wrote {args.scores}, {args.out} and {args.metrics}", file=sys.stderr)


if __name__ == "__main__":
    main()
