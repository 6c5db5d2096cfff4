"""Stage `forecast-<variant>@s<seed>`: one trained future LM's forecast of the next period.

Periods are labels of split.period's kind (2024, 2024H1, 2024Q3, 2024-07); Y-1 is the period
before Y (the one before 2021Q1 is 2020Q4). For every period Y of --period and
--backtest-periods: the predicted vocabulary of Y (the mean next-token distribution with Y's bias
over the abstracts of Y-1, teacher-forced) and, on the same contexts, with Y-1's bias (the
reference for the predicted change); see pipeline/forecast/vocabulary.py. For --period also
--n-generate abstracts with the paper's decoding settings. Period Y's own text is never read, so
Y may lie beyond the corpus; its history (Y-m .. Y-1) and the abstracts of Y-1 must exist.
Forward passes and generation run in --precision (score.precision, as the score stage's).

For the trend test, also the predicted change from half A of Y-1 (pipeline/forecast/half.py):
contexts and Y-1's frequencies from half A's abstracts only; not for models without a history or
reading embeddings (forecast.json says why).

Writes one atomic folder: vocab_<label>.parquet (token_id, log_prob, log_prob_prev, and
log_prob_half, log_prob_prev_half where computed),
generations_<label>.parquet (index, seed, text, n_new_tokens, period) and forecast.json.
Backtest scores need every model and the observed counts: stage `forecast_report`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline.features.tokenizer import load_tokenizer
from pipeline.forecast.model_forecast import forecast_model, write_forecast
from pipeline.infra.device import pick_device
from pipeline.infra.errors import UserError
from pipeline.infra.numerics import configure_torch
from pipeline.models.future_lm import load_future_lm
from pipeline.models.generation import GenerationSettings
from pipeline.training.run import attach_cache
from pipeline.interfaces.forecast import INTERFACE
from stages._lib.args import parser_for, runtime_from
from stages._lib.options import build
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    settings = build(GenerationSettings, args, n=args.n_generate)
    runtime = runtime_from(args)
    configure_torch(runtime.threads, args.kernels)
    tok = load_tokenizer(args.tokenizer)
    model = load_future_lm(args.model, pick_device(runtime.device))
    memo = attach_cache(model, Path(args.cache), Path(args.tokenizer)) if args.cache else None
    if args.period is None:
        raise UserError("--period is required: the stage graph passes the resolved label",
                        fix="run `make graph` (forecast.period null becomes the period after the "
                            "last one known), or pass --period")
    result = forecast_model(model, tok, args.period, args.backtest_periods, args.abstracts,
                            args.frequencies, args.embeddings, args.tokenizer, args.batch_size,
                            args.precision, settings)
    write_forecast(args.out, result, model, settings)
    served = f" ({memo.hits} batches from the cache, {memo.misses} ran the LM)" if memo else ""
    print(f"wrote {args.out}{served}", file=sys.stderr)


if __name__ == "__main__":
    main()
