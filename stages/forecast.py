"""Stage `forecast-<variant>-s<seed>`: one trained future LM's forecast of the next period.

For every year Y of --year and --backtest-years: the predicted vocabulary of Y (the mean
next-token distribution with Y's bias over the abstracts of Y-1, teacher-forced) and, on the same
contexts, with Y-1's bias (the reference for the predicted change); see pipeline/forecast/vocabulary.py.
For --year also --n-generate abstracts with the paper's decoding settings. Year Y's own text is
never read, so Y may lie beyond the corpus; its history (Y-m .. Y-1) and the abstracts of Y-1
must exist. Forward passes and generation run in --precision (score.precision,
as the score stage's).

Writes one atomic folder: vocab_<year>.parquet (token_id, log_prob, log_prob_prev),
generations_<year>.parquet (index, seed, text, n_new_tokens, year) and forecast.json.
Backtest scores need every model and the observed counts: stage `forecast_report`.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

from pipeline.infra.device import pick_device
from pipeline.forecast.vocabulary import reference_texts, vocabulary_forecast, year_history
from pipeline.models.future_lm import load_future_lm
from pipeline.models.generation import GenerationSettings, generate_abstracts
from pipeline.infra.io import atomic_path, write_json, write_parquet
from pipeline.models.encoding import encode_for_model
from pipeline.infra.config import ScoreConfig
from pipeline.infra.precision import PRECISIONS, compute_precision
from pipeline.features.tokenizer import load_tokenizer
from pipeline.infra.params import ForecastConfig
from stages._args import add_options, add_runtime_options, build, new_parser, runtime_from
from stages._cli import stage_main


@stage_main
def main(argv: list[str] | None = None) -> None:
    p = new_parser("python -m stages.forecast", __doc__)
    p.add_argument("--model", required=True, help="trained model folder (data/models/<variant>-s<seed>)")
    p.add_argument("--abstracts", required=True,
                   help="corpus (data/corpus/abstracts.parquet): the reference contexts of Y-1")
    p.add_argument("--tokenizer", required=True, help="LM tokenizer folder (data/tokenizer)")
    p.add_argument("--frequencies", default=None,
                   help="per-year frequency folder (history; models with a bias)")
    p.add_argument("--embeddings", default=None,
                   help="per-year embedding folder (history of the contextual variants)")
    add_options(p, ForecastConfig, "forecast (params forecast.*)")
    p.add_argument("--out", required=True, help="output folder (data/forecast/<variant>-s<seed>)")
    add_options(p, GenerationSettings, "future abstracts of --year (the paper's decoding settings)")
    p.add_argument("--precision", choices=PRECISIONS, default=ScoreConfig.precision,
                   help="numeric precision of the forward passes and generation, as scoring's "
                        "(params score.precision; pipeline/infra/precision.py)")
    add_runtime_options(p)
    args = p.parse_args(argv)

    settings = build(GenerationSettings, args)
    runtime = runtime_from(args)
    if runtime.threads > 0:
        torch.set_num_threads(runtime.threads)
    tok = load_tokenizer(args.tokenizer)
    model = load_future_lm(args.model, pick_device(runtime.device))
    years = sorted({*args.backtest_years, args.year})
    history = year_history(model, args.year, args.frequencies, args.embeddings,
                           f"forecast {args.year}", args.tokenizer)   # fail early: before any pass
    vocab, info = {}, {}
    with compute_precision(model.device, args.precision):   # as the score stage's passes
        for year in years:
            start = time.perf_counter()
            encoded, _ = encode_for_model(tok, reference_texts(args.abstracts, year),
                                          model.context_length)
            vocab[year] = vocabulary_forecast(model, encoded, year, args.frequencies,
                                              args.embeddings, args.batch_size, tok.eos_token_id,
                                              args.tokenizer)
            n_positions = sum(len(ids) - 1 for ids in encoded)
            info[str(year)] = {"reference_year": year - 1, "n_contexts": len(encoded),
                               "n_positions": n_positions}
            print(f"{model.variant}: vocabulary of {year} from {len(encoded)} abstracts of "
                  f"{year - 1} ({n_positions} positions) in {time.perf_counter() - start:.1f} s",
                  file=sys.stderr)
        start = time.perf_counter()
        gens = generate_abstracts(model, tok, history, settings, desc=f"{args.year} generation")
    gens["year"] = args.year
    print(f"{model.variant}: {len(gens)} abstracts for {args.year} in "
          f"{time.perf_counter() - start:.1f} s", file=sys.stderr)

    with atomic_path(args.out) as tmp:
        tmp.mkdir()
        for year, frame in vocab.items():
            write_parquet(frame, Path(tmp) / f"vocab_{year}.parquet",
                          metadata={"year": str(year), "variant": model.variant})
        write_parquet(gens, Path(tmp) / f"generations_{args.year}.parquet",
                      metadata={"generation_settings": settings.to_json(), "variant": model.variant})
        write_json({"variant": model.variant, "seed": model.seed, "forecast_year": args.year,
                    "backtest_years": sorted(args.backtest_years), "years": info,
                    "context_length": model.context_length}, Path(tmp) / "forecast.json")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
