"""Stage `semantic_change`: which words changed meaning between two groups of periods.

Reads the per-period frequency and embedding files of both groups (--first, --last: period
labels of split.period's kind), the LM tokenizer (which targets are one token), the stopwords,
the abstracts (an example sentence per word and group) and optionally a targets file (.csv with
`word` and an optional graded `truth`, or one word per line). Scores every target by each
method of pipeline.reports.semantic_change (contextual: paper 003's Algorithm 1 on the pooled
embeddings; frequency: the log-frequency baseline). Writes data/semantic_change/scores.parquet
(method, word, token_id, score, rank, first_count, last_count), reports/semantic_change.md and
metrics/semantic_change.json (the methods' agreement; with truth, each one's Spearman rho).
"""

from __future__ import annotations

import sys
from pathlib import Path

from pipeline.corpus.by_period import period_abstracts
from pipeline.corpus.periods import in_time_order
from pipeline.evaluation.content import load_stopwords
from pipeline.evaluation.semantic_change import (averaged_embedding_change, log_frequency_change,
                                                 period_paths, read_group)
from pipeline.features.frequencies import read_period
from pipeline.features.tokenizer import load_tokenizer
from pipeline.features.words import token_texts
from pipeline.infra.errors import UserError
from pipeline.infra.io import atomic_path, write_json, write_parquet
from pipeline.infra.params import SemanticChangeConfig
from pipeline.reports.semantic_change import (choose_targets, example_sentence, markdown,
                                              metrics, scores_frame, truth_correlations)
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
    p.add_argument("--abstracts", required=True, help="corpus table (example sentences)")
    add_options(p, SemanticChangeConfig, "semantic change (params semantic_change.*)")
    p.add_argument("--scores", required=True, help="Parquet of every score")
    p.add_argument("--out", required=True, help="Markdown report (reports/semantic_change.md)")
    p.add_argument("--metrics", required=True, help="DVC metrics (metrics/semantic_change.json)")
    args = p.parse_args(argv)
    config = build(SemanticChangeConfig, args)
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
    methods = {"contextual": averaged_embedding_change(
                   read_group(period_paths(args.embeddings, first)),
                   read_group(period_paths(args.embeddings, last))),
               "frequency": log_frequency_change(*counts)}
    frame = scores_frame(targets, methods)
    correlated = truth_correlations(frame, targets.truth, config.seed) if targets.truth else {}

    shown = set(frame.groupby("method").head(config.top)["word"])
    groups = [[a for q in g for a in period_abstracts(args.abstracts, q)] for g in (first, last)]
    examples = {w: (example_sentence(groups[0], w), example_sentence(groups[1], w))
                for w in sorted(shown)}
    write_parquet(frame, args.scores, {"first": " ".join(first), "last": " ".join(last)})
    with atomic_path(args.out) as tmp:
        tmp.write_text(markdown(targets, frame, first, last, examples, config.top, correlated),
                       encoding="utf-8")
    write_json(metrics(frame, correlated), args.metrics)
    print(f"wrote {args.scores}, {args.out} and {args.metrics}", file=sys.stderr)


if __name__ == "__main__":
    main()
