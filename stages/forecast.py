"""Stage `forecast-<variant>-s<seed>`: one trained future LM's forecast of the next period.

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

import sys
import time
from pathlib import Path

from pipeline.infra.device import pick_device
from pipeline.infra.numerics import configure_torch
from pipeline.infra.errors import UserError
from pipeline.corpus.periods import in_time_order, shift
from pipeline.forecast.half import half_a_forecast, why_no_half
from pipeline.forecast.vocabulary import period_history, reference_texts, vocabulary_forecast
from pipeline.models.future_lm import load_future_lm
from pipeline.models.generation import GenerationSettings, generate_abstracts
from pipeline.infra.io import atomic_path, write_json, write_parquet
from pipeline.models.encoding import encode_for_model
from pipeline.infra.config import ScoreConfig
from pipeline.infra.precision import PRECISIONS, compute_precision
from pipeline.features.tokenizer import load_tokenizer
from pipeline.infra.params import ForecastConfig
from pipeline.training.run import attach_cache
from stages._args import add_options, add_runtime_options, build, new_parser, runtime_from
from stages._cli import stage_main


@stage_main
def main(argv: list[str] | None = None) -> None:
    p = new_parser("python -m stages.forecast", __doc__)
    p.add_argument("--model", required=True, help="trained model folder (data/models/<variant>-s<seed>)")
    p.add_argument("--abstracts", required=True,
                   help="corpus (data/corpus/abstracts.parquet): the reference contexts, period Y-1")
    p.add_argument("--tokenizer", required=True, help="LM tokenizer folder (data/tokenizer)")
    p.add_argument("--frequencies", default=None,
                   help="per-period frequency folder (history; models with a bias)")
    p.add_argument("--embeddings", default=None,
                   help="per-period embedding folder (history of the contextual variants)")
    p.add_argument("--cache", default=None,
                   help="train.base: frozen: the frozen LM's cached hidden states "
                        "(data/cache/base): the reference passes read them instead of running "
                        "the LM's body (generation runs the LM)")
    add_options(p, ForecastConfig, "forecast (params forecast.*)")
    p.add_argument("--out", required=True, help="output folder (data/forecast/<variant>-s<seed>)")
    add_options(p, GenerationSettings, "future abstracts of --period (the paper's decoding settings)")
    p.add_argument("--precision", choices=PRECISIONS, default=ScoreConfig.precision,
                   help="numeric precision of the forward passes and generation, as scoring's "
                        "(params score.precision; pipeline/infra/precision.py)")
    add_runtime_options(p)
    args = p.parse_args(argv)

    settings = build(GenerationSettings, args)
    runtime = runtime_from(args)
    configure_torch(runtime.threads, args.kernels)
    tok = load_tokenizer(args.tokenizer)
    model = load_future_lm(args.model, pick_device(runtime.device))
    memo = attach_cache(model, Path(args.cache), Path(args.tokenizer)) if args.cache else None
    if args.period is None:
        raise UserError("--period is required: the stage graph passes the resolved label",
                        fix="run `make graph` (forecast.period null becomes the period after the "
                            "last one known), or pass --period")
    target, backtests = args.period, in_time_order(args.backtest_periods)
    history = period_history(model, target, args.frequencies, args.embeddings,
                             f"forecast {target}", args.tokenizer)   # fail early: before any pass
    vocab, info = {}, {}
    with compute_precision(model.device, args.precision):   # as the score stage's passes
        for period in in_time_order({*backtests, target}):
            start, before = time.perf_counter(), shift(period, -1)
            encoded, _ = encode_for_model(tok, reference_texts(args.abstracts, period),
                                          model.context_length)
            vocab[period] = vocabulary_forecast(model, encoded, period, args.frequencies,
                                                args.embeddings, args.batch_size, tok.eos_token_id,
                                                args.tokenizer)
            n_positions = sum(len(ids) - 1 for ids in encoded)
            half = half_a_forecast(model, tok, args.abstracts, period, args.frequencies,
                                   args.batch_size, args.tokenizer)
            if half is not None:
                vocab[period] = vocab[period].join(half[0])
            info[period] = {"reference_period": before, "n_contexts": len(encoded),
                            "n_positions": n_positions,
                            "half_a": {"n_contexts": half[1]} if half else
                            {"n_contexts": None, "why_not": why_no_half(model)}}
            print(f"{model.variant}: vocabulary of {period} from {len(encoded)} abstracts of "
                  f"{before} ({n_positions} positions) in {time.perf_counter() - start:.1f} s",
                  file=sys.stderr)
        start = time.perf_counter()
        gens = generate_abstracts(model, tok, history, settings, desc=f"{target} generation")
    gens["period"] = target
    print(f"{model.variant}: {len(gens)} abstracts for {target} in "
          f"{time.perf_counter() - start:.1f} s", file=sys.stderr)

    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        for period, frame in vocab.items():
            write_parquet(frame, Path(tmp) / f"vocab_{period}.parquet",
                          metadata={"period": period, "variant": model.variant})
        write_parquet(gens, Path(tmp) / f"generations_{target}.parquet",
                      metadata={"generation_settings": settings.to_json(), "variant": model.variant})
        write_json({"variant": model.variant, "seed": model.seed, "forecast_period": target,
                    "backtest_periods": backtests, "periods": info,
                    "context_length": model.context_length}, Path(tmp) / "forecast.json")
    served = f" ({memo.hits} batches from the cache, {memo.misses} ran the LM)" if memo else ""
    print(f"wrote {args.out}{served}", file=sys.stderr)


if __name__ == "__main__":
    main()
