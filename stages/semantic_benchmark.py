"""Stage `semantic_benchmark`: the semantic-change methods scored on pseudo-words of known change.

Reads the abstracts of the first and last group of periods (--first, --last: semantic_change's
groups, resolved) and the stopwords; merges word pairs into pseudo-words whose mix of the two
usages shifts by a known amount (pipeline/corpus/pseudowords.py), scores them with each method of
the method registry (pipeline/evaluation/change_methods/method_registry.py: contextual, paper
003's Algorithm 1 with the embeddings stage's encoder and layer; temporal-attention, a masked LM
with paper 003's temporal attention trained on the two groups, then Algorithm 1; time-token, the
same MLM with a period token per text, masked more often than words, Rosin et al. 2022; sgns,
SGNS per group aligned by Procrustes; frequency, the baseline) and correlates each with the
truth (Spearman and Pearson, p-values, bootstrap intervals). Writes reports/semantic_benchmark.md,
reports/semantic_benchmark.json and plots/semantic_benchmark.csv (method, word, kind, truth,
score) with a PNG beside it. A corpus with too few frequent words gets a report that says so,
not a failed stage. With --semeval (semantic_benchmark.semeval: a SemEval-2020 Task 1 language
folder) the methods score its targets between its two corpora against its graded truth instead
of pseudo-words (--first/--last and --abstracts unused).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd

from pipeline.corpus.periods import in_time_order
from pipeline.evaluation.change_methods.interface import EncoderSettings
from pipeline.evaluation.content import load_stopwords
from pipeline.evaluation.semantic_benchmark import (benchmark_inputs, details,
                                                    pseudo_word_benchmark, score_benchmark,
                                                    semeval_benchmark)
from pipeline.infra.device import pick_device
from pipeline.infra.errors import UserError
from pipeline.infra.io import atomic_path, write_json
from pipeline.infra.numerics import configure_torch
from pipeline.infra.params import ChangeMethodsConfig, SemanticBenchmarkConfig
from pipeline.reports.figures import notice, scatter_panels
from pipeline.reports.semantic_benchmark_report import (benchmark_claims, markdown, method_notes,
                                                       skipped_markdown)
from pipeline.stats.verdict import judge, to_records
from stages._args import add_options, add_runtime_options, build, new_parser, runtime_from
from stages._cli import stage_main


@stage_main
def main(argv: list[str] | None = None) -> None:
    p = new_parser("python -m stages.semantic_benchmark", __doc__)
    p.add_argument("--first", nargs="+", required=True, help="the first group's periods")
    p.add_argument("--last", nargs="+", required=True, help="the last group's periods")
    p.add_argument("--semeval", default=None,
                   help="SemEval-2020 Task 1 language folder (semantic_benchmark.semeval)")
    p.add_argument("--abstracts", required=True, help="corpus table (data/corpus/abstracts.parquet)")
    p.add_argument("--stopwords", required=True, help="stopword list (never merged)")
    p.add_argument("--encoder", required=True, help="encoder (embeddings.encoder)")
    p.add_argument("--layer", type=int, required=True, help="hidden layer (embeddings.layer)")
    p.add_argument("--max-length", type=int, required=True,
                   help="encoder tokens per sentence (embeddings.max_length)")
    p.add_argument("--batch-size", type=int, required=True,
                   help="sentences per encoder batch (embeddings.batch_size)")
    add_options(p, SemanticBenchmarkConfig, "pseudo-word benchmark (params semantic_benchmark.*)")
    add_options(p, ChangeMethodsConfig,
                "learned methods (params semantic_benchmark.temporal_*, .sgns_*)")
    add_runtime_options(p)
    p.add_argument("--out", required=True, help="Markdown report (reports/semantic_benchmark.md)")
    p.add_argument("--details", required=True, help="JSON (reports/semantic_benchmark.json)")
    p.add_argument("--plot", required=True,
                   help="CSV of the scores (plots/semantic_benchmark.csv; + .png beside it)")
    args = p.parse_args(argv)
    config, learned = build(SemanticBenchmarkConfig, args), build(ChangeMethodsConfig, args)
    if not 0 < config.max_shift < 0.9 or config.n_targets < 3:
        raise UserError("semantic_benchmark needs 0 < max_shift < 0.9 and n_targets >= 3 "
                        f"(got {config.max_shift}, {config.n_targets})",
                        path="params.yaml: semantic_benchmark")
    runtime = runtime_from(args)
    configure_torch(runtime.threads, args.kernels)
    first, last = in_time_order(args.first), in_time_order(args.last)
    png = Path(args.plot).with_suffix(".png")
    try:
        if args.semeval:
            texts, truth, first, last = semeval_benchmark(args.semeval)
        else:
            texts, truth = pseudo_word_benchmark(
                args.abstracts, first, last, config.n_targets, config.n_controls,
                config.min_count, config.max_shift, config.seed, load_stopwords(args.stopwords))
    except UserError as err:    # a small corpus: say so in the report, keep the pipeline going
        if args.semeval:
            raise               # a broken SemEval folder is the user's to fix
        message = f"No benchmark: {err.what}. Fix: {err.fix}."
        with atomic_path(args.out) as tmp:
            tmp.write_text(skipped_markdown(message), encoding="utf-8")
        write_json({"skipped": message}, args.details)
        with atomic_path(args.plot) as tmp:       # the declared outputs exist, empty
            pd.DataFrame(columns=["method", "word", "kind", "truth", "score"]).to_csv(tmp, index=False)
        notice(png, "no benchmark: too few frequent words")
        print(message, file=sys.stderr)
        return

    encoding = EncoderSettings(args.layer, args.max_length, args.batch_size,
                               pick_device(runtime.device))
    inputs = benchmark_inputs(texts, first, last, args.encoder, encoding, learned, config.seed)
    run = score_benchmark(inputs, truth, config.seed)
    with atomic_path(args.plot) as tmp:
        run.frame.to_csv(tmp, index=False, float_format="%.6g")
    scatter_panels(run.frame, "truth", "score", "method", "kind", png,
                   {m: f"{m}: score vs truth" for m in run.frame["method"].unique()})
    link = os.path.relpath(png.resolve(), Path(args.out).resolve().parent)
    verdicts = judge(benchmark_claims(run.correlated))
    with atomic_path(args.out) as tmp:
        tmp.write_text(markdown(first, last, run.frame, truth, run.correlated,
                                method_notes(run.results, args.encoder), link, args.semeval,
                                verdicts), encoding="utf-8")
    write_json({**details(first, last, args.semeval, truth, run),
                "verdicts": to_records(verdicts)}, args.details)
    for method, result in run.results.items():
        if result.log:
            print(f"{method}: {result.log}", file=sys.stderr)
    print(f"wrote {args.out} and {args.details}", file=sys.stderr)


if __name__ == "__main__":
    main()
