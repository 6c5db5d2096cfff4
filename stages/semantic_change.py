"""Stage `semantic_change`: which words changed meaning between two groups of periods.

Reads the per-period frequency and embedding files of both groups (--first, --last: period
labels of split.period's kind), the LM tokenizer (which targets are one token), the stopwords,
the abstracts (the learned methods' texts, an example sentence per word and group), optionally a
targets file (.csv with `word` and an optional graded `truth`, or one word per line) and the
benchmark's reports/semantic_benchmark.json. Scores every target by each method of the method
registry (pipeline/semantic/methods/registry.py: contextual, paper 003's
Algorithm 1 on the pooled embeddings; temporal-attention, paper 003's temporal-attention MLM
trained on the two groups' abstracts, then Algorithm 1; time-token, the same MLM with a period
token per text instead, masked more often than words, Rosin et al. 2022's time masking; sgns,
SGNS per group, Procrustes-aligned; frequency, the log-frequency baseline), with the learned
methods' settings of the benchmark (params semantic_benchmark.temporal_*, .sgns_*). Writes
data/semantic_change/scores.parquet (method, word, token_id, score, rank, first_count, last_count),
reports/semantic_change.md (with the benchmark's table) and metrics/semantic_change.json
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
from pipeline.infra.params import ChangeMethodsConfig, SemanticChangeConfig
from pipeline.reports.semantic_change_report import benchmark_lines, examples, markdown
from pipeline.semantic.change import analyse
from pipeline.semantic.scores import change_metrics
from stages._args import add_numerics_options, add_options, build, new_parser
from stages._cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    p = new_parser("python -m stages.semantic_change", __doc__)
    p.add_argument("--first", nargs="+", required=True,
                   help="the first group's periods (semantic_change.first, resolved)")
    p.add_argument("--last", nargs="+", required=True,
                   help="the last group's periods (semantic_change.last, resolved)")
    p.add_argument("--targets", default=None,
                   help="targets file (semantic_change.targets); default: the most frequent words")
    p.add_argument("--embeddings", required=True,
                   help="per-period embeddings folder (data/features/embeddings)")
    p.add_argument("--frequencies", required=True,
                   help="per-period frequency folder (data/features/frequencies)")
    p.add_argument("--tokenizer", required=True, help="LM tokenizer folder (data/tokenizer)")
    p.add_argument("--stopwords", required=True, help="stopword list (default targets skip them)")
    p.add_argument("--abstracts", required=True,
                   help="corpus table (the learned methods' texts, example sentences)")
    p.add_argument("--encoder", required=True,
                   help="tokenizer of a scratch temporal-attention MLM (embeddings.encoder)")
    p.add_argument("--benchmark", default=None,
                   help="the benchmark's JSON (reports/semantic_benchmark.json): its table")
    add_options(p, SemanticChangeConfig, "semantic change (params semantic_change.*)")
    add_options(p, ChangeMethodsConfig,
                "learned methods (params semantic_benchmark.temporal_*, .sgns_*)")
    add_numerics_options(p)
    p.add_argument("--scores", required=True, help="Parquet of every score")
    p.add_argument("--out", required=True, help="Markdown report (reports/semantic_change.md)")
    p.add_argument("--metrics", required=True, help="DVC metrics (metrics/semantic_change.json)")
    return p


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    config, learned = build(SemanticChangeConfig, args), build(ChangeMethodsConfig, args)
    first, last = in_time_order(args.first), in_time_order(args.last)
    configure_torch(kernels=args.kernels)
    done = analyse(first, last, args.frequencies, args.embeddings, args.abstracts, args.tokenizer,
                   load_stopwords(args.stopwords), args.targets, args.encoder, config, learned)
    run = done.run

    bench = None
    if args.benchmark:
        link = os.path.relpath(Path(args.benchmark).with_suffix(".md").resolve(),
                               Path(args.out).resolve().parent)
        bench = benchmark_lines(read_json(args.benchmark), link)
    write_parquet(run.frame, args.scores, {"first": " ".join(first), "last": " ".join(last)})
    with atomic_path(args.out) as tmp:
        tmp.write_text(markdown(done.targets, run.frame, first, last,
                                examples(run.frame, done.inputs.group_texts, config.top),
                                config.top, run.correlated, bench), encoding="utf-8")
    write_json(change_metrics(run.frame, run.correlated), args.metrics)
    print(f"wrote {args.scores}, {args.out} and {args.metrics}", file=sys.stderr)


if __name__ == "__main__":
    main()
