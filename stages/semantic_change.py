"""Stage `semantic_change`: which words changed meaning between two groups of periods.

Reads the per-period frequency and embedding files of both groups (--first, --last: period
labels of split.period's kind), the LM tokenizer (which targets are one token), the stopwords,
the abstracts (the learned methods' texts, an example sentence per word and group), optionally a
targets file (.csv with `word` and an optional graded `truth`, or one word per line) and the
benchmark's reports/semantic_benchmark.json. Scores every target by each method of
pipeline.reports.semantic_change (contextual: paper 003's Algorithm 1 on the pooled embeddings;
temporal-attention: paper 003's temporal-attention MLM trained on the two groups' abstracts, then
Algorithm 1; time-token: the same MLM with a period token per text instead, Rosin et al. 2022; sgns: SGNS per group, Procrustes-aligned; frequency: the log-frequency baseline),
with the learned methods' settings of the benchmark (params semantic_benchmark.temporal_*,
.sgns_*). Writes data/semantic_change/scores.parquet (method, word, token_id, score, rank,
first_count, last_count), reports/semantic_change.md (with the benchmark's table) and
metrics/semantic_change.json (contextual vs frequency agreement; with truth, each method's rho).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pipeline.corpus.by_period import period_abstracts
from pipeline.corpus.periods import in_time_order
from pipeline.evaluation.content import load_stopwords
from pipeline.evaluation.semantic_change import (averaged_embedding_change, log_frequency_change,
                                                 period_paths, read_group)
from pipeline.evaluation.sgns import sgns_change
from pipeline.evaluation.temporal_mlm import (TEMPORAL_ATTENTION, TIME_TOKEN, settings_from,
                                              texts_change)
from pipeline.features.frequencies import read_period
from pipeline.features.tokenizer import load_tokenizer
from pipeline.features.words import token_texts
from pipeline.infra.errors import UserError
from pipeline.infra.io import atomic_path, read_json, write_json, write_parquet
from pipeline.infra.numerics import configure_torch
from pipeline.infra.params import ChangeMethodsConfig, SemanticChangeConfig
from pipeline.reports.semantic_change import (benchmark_lines, choose_targets, example_sentence,
                                              markdown, metrics, scores_frame, truth_correlations,
                                              word_scores)
from stages._args import add_options, build, new_parser
from stages._cli import stage_main


@stage_main
def main(argv: list[str] | None = None) -> None:
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
    p.add_argument("--scores", required=True, help="Parquet of every score")
    p.add_argument("--out", required=True, help="Markdown report (reports/semantic_change.md)")
    p.add_argument("--metrics", required=True, help="DVC metrics (metrics/semantic_change.json)")
    args = p.parse_args(argv)
    config, learned = build(SemanticChangeConfig, args), build(ChangeMethodsConfig, args)
    if config.n_targets < 1 or config.min_count < 1 or config.top < 1:
        raise UserError("semantic_change.n_targets, min_count and top must be >= 1",
                        path="params.yaml: semantic_change")
    first, last = in_time_order(args.first), in_time_order(args.last)

    freq_dir = Path(args.frequencies)
    counts = [[read_period(freq_dir / f"{q}.parquet").counts for q in g] for g in (first, last)]
    summed = [sum(c) for c in counts]
    texts = token_texts(load_tokenizer(args.tokenizer), summed[0].size)
    targets = choose_targets(texts, *summed, load_stopwords(args.stopwords), config.n_targets,
                             config.min_count, args.targets)
    if not targets.ids and args.targets:
        raise UserError(f"no target word is one LM token ({len(targets.words)} given, "
                        f"{len(targets.rejected)} rejected)", path=args.targets or "params.yaml",
                        fix="list words that the tokenizer keeps whole (one per line)")
    print(f"scoring {len(targets.ids)} targets, {' '.join(first)} -> {' '.join(last)}",
          file=sys.stderr)
    configure_torch()
    by_period = [[period_abstracts(args.abstracts, q) for q in g] for g in (first, last)]
    groups = [[a for texts in g for a in texts] for g in by_period]
    words = sorted(targets.ids)
    frequency = log_frequency_change(*counts)
    methods = {"contextual": averaged_embedding_change(
        read_group(period_paths(args.embeddings, first)),
        read_group(period_paths(args.embeddings, last)))}
    for method in ((TEMPORAL_ATTENTION, TIME_TOKEN) if words else ()):   # trained here
        scores, trained = texts_change(*by_period, words, settings_from(learned, config.seed),
                                       args.encoder, method=method)
        print(f"{method}: {trained['train_s']:.0f} s training, {trained['total_s']:.0f} s in all",
              file=sys.stderr)
        methods[method] = word_scores(targets, words, scores, frequency)
    if words:
        sgns = sgns_change(*groups, words, dim=learned.sgns_dim, epochs=learned.sgns_epochs,
                           seed=config.seed)
        methods["sgns"] = word_scores(targets, words, sgns, frequency)
    methods["frequency"] = frequency
    frame = scores_frame(targets, methods)
    correlated = (truth_correlations(frame, targets.truth, config.seed, list(methods))
                  if targets.truth else {})

    shown = set(frame.groupby("method").head(config.top)["word"])
    examples = {w: (example_sentence(groups[0], w), example_sentence(groups[1], w))
                for w in sorted(shown)}
    bench = None
    if args.benchmark:
        link = os.path.relpath(Path(args.benchmark).with_suffix(".md").resolve(),
                               Path(args.out).resolve().parent)
        bench = benchmark_lines(read_json(args.benchmark), link)
    write_parquet(frame, args.scores, {"first": " ".join(first), "last": " ".join(last)})
    with atomic_path(args.out) as tmp:
        tmp.write_text(markdown(targets, frame, first, last, examples, config.top, correlated,
                                bench), encoding="utf-8")
    write_json(metrics(frame, correlated), args.metrics)
    print(f"wrote {args.scores}, {args.out} and {args.metrics}", file=sys.stderr)


if __name__ == "__main__":
    main()
