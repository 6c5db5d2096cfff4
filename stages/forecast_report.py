"""Stage `forecast_report`: reports/forecast.md from every model's forecast.

Reads data/forecast/<variant>-s<seed>/ for every variant x seed (stage `forecast`), the observed
per-period counts (data/features/frequencies; those of --train-periods alone fit the stationary
baselines' smoothing), the tokenizer and stopwords (content tokens, words), the abstracts of the
period before the forecast period (which tokens are whole words) and those of every backtest
period and the period before it, tokenized as the frequencies stage counts (the documents the
backtests resample; half B of the period before is the trend test's reference).
Periods are labels of split.period's kind (2024, 2024H1, 2024Q3, 2024-07). Writes
reports/forecast.md (backtests: every forecaster against each stationary baseline and every
predicted change against chance, document-bootstrap verdicts; rising/falling terms, generated
abstracts), reports/forecast.json (the backtest numbers and the verdict records under
"verdicts"; plain JSON, not DVC
metrics: one line of `dvc metrics show` per number would not fit a terminal) and a PNG of the top
risers' history and forecast.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pipeline.evaluation.content import content_token_mask, load_stopwords
from pipeline.infra.errors import UserError
from pipeline.reports.figures import history_forecast_panels
from pipeline.forecast.vocabulary import reference_texts, whole_word_mask
from pipeline.reports.forecast import render
from pipeline.reports.forecast_inputs import load_forecasts, read_documents, read_frequencies
from pipeline.corpus.periods import in_time_order, shift
from pipeline.features.windows import history_periods
from pipeline.infra.io import atomic_path, write_json
from pipeline.infra.runs import run_name
from pipeline.features.tokenizer import encode_abstracts, load_tokenizer
from stages._args import new_parser
from stages._cli import stage_main

@stage_main
def main(argv: list[str] | None = None) -> None:
    p = new_parser("python -m stages.forecast_report", __doc__)
    p.add_argument("--forecasts", required=True, help="folder of forecast folders (data/forecast)")
    p.add_argument("--variants", nargs="+", required=True, help="variants, in table order")
    p.add_argument("--seeds", nargs="+", type=int, required=True, help="training seeds")
    p.add_argument("--period", required=True,
                   help="the forecast period, a label (forecast.period, resolved by the graph)")
    p.add_argument("--backtest-periods", nargs="*", default=[],
                   help="periods with known text to score the forecasts on "
                        "(forecast.backtest_periods)")
    p.add_argument("--window", type=int, required=True, help="history periods m (features.window)")
    p.add_argument("--train-periods", nargs="*", default=[],
                   help="the training periods (split.train_first..train_last): the only ones the "
                        "stationary baselines' smoothing is fitted on")
    p.add_argument("--dev-period", default=None,
                   help="the dev period (split.dev): with the training periods, what the models' "
                        "training read; a model makes no tested trend claim for a backtest whose "
                        "previous period it read")
    p.add_argument("--frequencies", required=True,
                   help="per-period frequency folder (observed counts)")
    p.add_argument("--tokenizer", required=True, help="LM tokenizer folder (data/tokenizer)")
    p.add_argument("--stopwords", required=True, help="the paper's stopword list (content tokens)")
    p.add_argument("--abstracts", required=True, help="corpus (data/corpus/abstracts.parquet)")
    p.add_argument("--out", required=True, help="Markdown report (reports/forecast.md)")
    p.add_argument("--json", required=True,
                   help="the backtest numbers as JSON (reports/forecast.json)")
    p.add_argument("--plot", required=True, help="PNG of the risers (plots/forecast_risers.png)")
    args = p.parse_args(argv)

    if args.window < 1:
        raise UserError(f"--window must be >= 1, got {args.window}", path="features.window")
    forecasts = load_forecasts(args.forecasts, args.variants, args.seeds)
    backtests = in_time_order(args.backtest_periods)
    for (v, s), f in forecasts.items():
        have = set(f.info["periods"])
        if f.info["forecast_period"] != args.period or not {*backtests, args.period} <= have:
            raise UserError(f"the forecast of {v} seed {s} covers {in_time_order(have)} for "
                            f"forecast period {f.info['forecast_period']}, not {args.period} with "
                            f"backtests {backtests}", path=Path(args.forecasts) / run_name(v, s),
                            fix=f"re-run `dvc repro forecast-{run_name(v, s)}`")
    needed = {p for by in backtests for p in (by, *history_periods(by, args.window))}
    needed |= set(history_periods(args.period, args.window))
    train = in_time_order(args.train_periods)
    needed |= set(train)
    # Exactly these periods are read (the stage's declared deps); the risers plot shows them all.
    freqs = read_frequencies(args.frequencies, in_time_order(needed), "the forecast report")

    tok = load_tokenizer(args.tokenizer)
    content = content_token_mask(tok, load_stopwords(args.stopwords))
    reference = encode_abstracts(tok, reference_texts(args.abstracts, args.period),
                                 max_length=sys.maxsize)
    whole = whole_word_mask(tok, content, reference)
    documents = read_documents(args.abstracts, tok, {q for b in backtests for q in (b, shift(b, -1))},
                               freqs)
    words = [w.strip() for w in tok.batch_decode([[i] for i in range(len(content))])]
    figure = os.path.relpath(Path(args.plot).resolve(), Path(args.out).resolve().parent)
    text, metrics, panels = render(forecasts, args.variants, args.seeds, args.period, backtests,
                                   freqs, content, whole, words, args.window, figure=figure,
                                   train_periods=train, documents=documents,
                                   dev_period=args.dev_period)
    with atomic_path(args.out) as tmp:
        tmp.write_text(text, encoding="utf-8")
    write_json(metrics, args.json)
    history_forecast_panels(panels, args.plot)
    print(f"wrote {args.out}, {args.json}, {args.plot}", file=sys.stderr)


if __name__ == "__main__":
    main()
