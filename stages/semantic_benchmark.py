"""Stage `semantic_benchmark`: the semantic-change methods scored on pseudo-words of known change.

Reads the abstracts of the first and last group of periods (--first, --last: semantic_change's
groups, resolved) and the stopwords; merges word pairs into pseudo-words whose mix of the two
usages shifts by a known amount (pipeline/corpus/pseudowords.py), scores them with the contextual
method (paper 003's Algorithm 1 with the embeddings stage's encoder and layer), the
temporal-attention method (a masked LM with paper 003's temporal attention trained on the two
groups, then Algorithm 1: pipeline/evaluation/temporal_mlm.py), the time-token method (the same
MLM with a period token per text, Rosin et al. 2022), SGNS per group aligned by
Procrustes (pipeline/evaluation/sgns.py) and the frequency baseline, and
correlates each with the truth (Spearman and Pearson, p-values, bootstrap intervals). Writes
reports/semantic_benchmark.md, reports/semantic_benchmark.json and plots/semantic_benchmark.csv
(method, word, kind, truth, score) with a PNG beside it. A corpus with too few frequent words
gets a report that says so, not a failed stage. With --semeval (semantic_benchmark.semeval: a
SemEval-2020 Task 1 language folder) the methods score its targets between its two corpora
against its graded truth instead of pseudo-words (--first/--last and --abstracts unused).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd

from pipeline.corpus.by_period import read_period
from pipeline.corpus.periods import in_time_order
from pipeline.evaluation.content import load_stopwords
from pipeline.infra.device import pick_device
from pipeline.infra.errors import UserError
from pipeline.infra.io import atomic_path, write_json
from pipeline.infra.numerics import configure_torch
from pipeline.infra.params import ChangeMethodsConfig, SemanticBenchmarkConfig
from pipeline.reports.figures import notice, scatter_panels
from pipeline.reports.semantic_benchmark import (METHODS, build as build_benchmark,
                                                 contextual_change, frequency_change, markdown,
                                                 scores_frame, semeval_benchmark)
from pipeline.reports.semantic_change import truth_correlations
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
    configure_torch(runtime.threads)
    first, last = in_time_order(args.first), in_time_order(args.last)
    try:
        if args.semeval:
            rewritten, truth, first, last = semeval_benchmark(args.semeval)
        else:
            texts = pd.concat([read_period(args.abstracts, q, ["abstract", "period"])
                               for q in [*first, *last]], ignore_index=True)
            rewritten, truth = build_benchmark(texts, first, last, config.n_targets,
                                               config.n_controls, config.min_count,
                                               config.max_shift, config.seed,
                                               load_stopwords(args.stopwords))
    except UserError as err:    # a small corpus: say so in the report, keep the pipeline going
        if args.semeval:
            raise               # a broken SemEval folder is the user's to fix
        message = f"No benchmark: {err.what}. Fix: {err.fix}."
        with atomic_path(args.out) as tmp:
            tmp.write_text(f"# Semantic-change benchmark\n\n{message}\n", encoding="utf-8")
        write_json({"skipped": message}, args.details)
        with atomic_path(args.plot) as tmp:       # the declared outputs exist, empty
            pd.DataFrame(columns=["method", "word", "kind", "truth", "score"]).to_csv(tmp, index=False)
        notice(Path(args.plot).with_suffix(".png"), "no benchmark: too few frequent words")
        print(message, file=sys.stderr)
        return

    from pipeline.evaluation.word_vectors import occurrence_sums   # torch: only when needed
    from pipeline.models.hub import load_encoder, load_tokenizer_for

    device = pick_device(runtime.device)
    encoder, tokenizer = load_encoder(args.encoder).to(device), load_tokenizer_for(args.encoder)
    words = truth["word"].tolist()
    groups, skipped = [], 0
    for periods in (first, last):
        part = rewritten[rewritten["period"].isin(periods)]["abstract"].tolist()
        sums, counts, missed = occurrence_sums(encoder, tokenizer, part, words, args.layer,
                                               args.max_length, args.batch_size, device)
        groups.append((part, sums, counts))
        skipped += missed
    from pipeline.evaluation.sgns import sgns_change
    from pipeline.evaluation.temporal_mlm import benchmark_change, settings_from
    settings = settings_from(learned, config.seed)
    trained = {m: benchmark_change(rewritten, first, last, words, settings, args.encoder, method=m)
               for m in ("temporal-attention", "time-token")}
    frame = scores_frame(truth, {
        "contextual": contextual_change(groups[0][1:], groups[1][1:]),
        **{m: scores for m, (scores, _) in trained.items()},
        "sgns": sgns_change(groups[0][0], groups[1][0], words, dim=learned.sgns_dim,
                            epochs=learned.sgns_epochs, seed=config.seed),
        "frequency": frequency_change(groups[0][0], groups[1][0], words)})
    correlated = truth_correlations(frame, dict(zip(truth["word"], truth["truth"])), config.seed,
                                    METHODS)
    png = Path(args.plot).with_suffix(".png")
    with atomic_path(args.plot) as tmp:
        frame.to_csv(tmp, index=False, float_format="%.6g")
    scatter_panels(frame, "truth", "score", "method", "kind", png,
                   {m: f"{m}: score vs truth" for m in frame["method"].unique()})
    link = os.path.relpath(png.resolve(), Path(args.out).resolve().parent)
    with atomic_path(args.out) as tmp:
        tmp.write_text(markdown(first, last, frame, truth, correlated, args.encoder, skipped,
                                link, args.semeval), encoding="utf-8")
    words_key = "targets" if args.semeval else "pseudo_words"
    write_json({"first": first, "last": last, "semeval": args.semeval,
                "skipped_occurrences": skipped,
                **{m.replace("-", "_"): {"skipped_occurrences": info["skipped"],
                                         "first_loss": info["losses"][0],
                                         "last_loss": info["losses"][-1]}
                   for m, (_, info) in trained.items()},
                "correlations": correlated, words_key: truth.astype(object).where(truth.notna(), None).to_dict(orient="records"),
                "scores": frame.to_dict(orient="records")}, args.details)
    for m, (_, info) in trained.items():
        print(f"{m}: {info['train_s']:.0f} s training, {info['total_s']:.0f} s in all",
              file=sys.stderr)
    print(f"wrote {args.out} and {args.details}", file=sys.stderr)


if __name__ == "__main__":
    main()
