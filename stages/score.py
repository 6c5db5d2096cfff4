"""Stage `score-<variant>@s<seed>`: evaluate one trained future LM on the dev, test and later periods.

Periods are labels of split.period's kind: 2021, 2021H1, 2021Q3 or 2021-07. For each evaluated
period (the dev and test periods, plus --periods, e.g. for staleness curves), with that period's
own history: PPL and CPL over every abstract (§4.4-4.5), cut at the model's context length (the
--max-length it was trained with); a per-position NLL table; and, for the dev and test periods
(or --generate-periods), N generated abstracts with the period's bias (§4.6) and their content
METEOR against the period's gold abstracts (their content words from --gold-words, the gold_words
stage's folder, when given). Writes <out>/metrics.json and per period
tokens_<label>.parquet (per-abstract NLL sums, for paired tests), positions_<label>.parquet (one
row per predicted token) and generations_<label>.parquet (seed, text, CM; decoding settings in
the file metadata), all in one atomic folder (docs/formats.md, "Scores").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.infra.schema.config import ScoreConfig
from pipeline.evaluation.content import load_stopwords
from pipeline.infra.device import pick_device
from pipeline.infra.numerics import configure_torch
from pipeline.evaluation.evaluate import evaluate_model, read_eval_periods, write_evaluation
from pipeline.models.future_lm import load_future_lm
from pipeline.models.generation import GenerationSettings
from pipeline.infra.io import atomic_path
from pipeline.features.tokenizer import load_tokenizer
from pipeline.training.run import attach_cache
from pipeline.interfaces.score import INTERFACE
from stages._lib.args import parser_for, runtime_from
from stages._lib.options import build
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    runtime = runtime_from(args)
    configure_torch(runtime.threads, args.kernels)
    config, settings = build(ScoreConfig, args), build(GenerationSettings, args)
    model = load_future_lm(args.model, pick_device(runtime.device))
    memo = attach_cache(model, Path(args.cache), Path(args.tokenizer)) if args.cache else None
    data = read_eval_periods(args.dev, args.test, config.periods, args.abstracts)
    evaluation = evaluate_model(model, load_tokenizer(args.tokenizer), data,
                                frequencies=args.frequencies, embeddings=args.embeddings,
                                config=config, settings=settings,
                                stopwords=load_stopwords(args.stopwords),
                                tokenizer_dir=args.tokenizer, gold_words=args.gold_words)
    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        write_evaluation(evaluation, tmp)
    served = f" ({memo.hits} batches from the cache, {memo.misses} ran the LM)" if memo else ""
    print(f"wrote {args.out}{served}", file=sys.stderr)


if __name__ == "__main__":
    main()
