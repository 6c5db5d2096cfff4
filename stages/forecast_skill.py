"""Stage `forecast_skill` (run by hand; not in the default graph): rolling-origin backtests of
every forecaster of next period's word distribution, against the best stationary one.

Reads a corpus table (the filter stage's abstracts.parquet: key, date, abstract), cuts it into
periods of --period's kind, counts its words (pipeline.forecast.words) and, for every target
period from --first to --last and every horizon, forecasts the target with every forecaster of
pipeline.forecast.forecasters from the periods up to h before it, choosing each forecaster's
setting and the reference on earlier origins only (every earlier target with enough history is a
warm-up origin: scored for those choices, no claim; --no-warmup: none). Writes --out-dir: verdicts.json (family
forecast-skill: per origin and pooled over origins; forecast-trend: split-half trend rankings),
words.json, skill.png, timing.json and README.md (pipeline.reports.forecast_skill).

    python -m stages.forecast_skill --abstracts data/corpus/abstracts.parquet \\
        --out-dir reports/forecast-skill
"""

from __future__ import annotations

import shlex
import sys
import time

from pipeline.evaluation.content import is_content_token, load_stopwords
from pipeline.forecast.forecasters.registry import all_forecasters, lookup
from pipeline.forecast.skill_inputs import read_skill_input
from pipeline.forecast.words import MIN_COUNT
from pipeline.infra.errors import UserError
from pipeline.reports.forecast_skill import run_skill, write_report
from stages._args import new_parser
from stages._cli import stage_main

STOPWORDS = "data/reference/stopwords.txt"


@stage_main
def main(argv: list[str] | None = None) -> None:
    p = new_parser("python -m stages.forecast_skill", __doc__)
    p.add_argument("--abstracts", required=True, help="corpus table (key, date, abstract)")
    p.add_argument("--out-dir", required=True, help="report folder to write")
    p.add_argument("--period", default="year", help="period kind: year, half, quarter, month")
    p.add_argument("--first", default="2008", help="the first target period (default 2008)")
    p.add_argument("--last", default=None,
                   help="the last target period (default: the corpus's last complete period)")
    p.add_argument("--horizons", nargs="+", type=int, default=[1, 2], help="steps ahead")
    p.add_argument("--forecasters", nargs="+", default=None,
                   help="forecaster names (default: every one of the registry)")
    p.add_argument("--min-count", type=int, default=MIN_COUNT,
                   help=f"words seen fewer times share one id (default {MIN_COUNT})")
    p.add_argument("--stopwords", default=STOPWORDS,
                   help="stopword list: the trend claims rank content words only, and "
                        "--drop-stopwords removes these words")
    p.add_argument("--drop-stopwords", action="store_true",
                   help="remove stopwords before counting (default: keep them)")
    p.add_argument("--no-warmup", action="store_true",
                   help="no warm-up origins: the first target chooses settings and reference "
                        "without earlier origins")
    args = p.parse_args(argv)
    if any(h < 1 for h in args.horizons):
        raise UserError(f"horizons must be at least 1, got {args.horizons}", path="--horizons")
    if args.min_count < 1:
        raise UserError(f"--min-count must be at least 1, got {args.min_count}")
    stopwords = load_stopwords(args.stopwords)
    forecasters = (all_forecasters() if args.forecasters is None
                   else [lookup(n) for n in args.forecasters])
    start = time.perf_counter()
    inp = read_skill_input(args.abstracts, args.period, args.min_count, stopwords,
                           args.drop_stopwords)
    content = inp.corpus.mask(lambda w: is_content_token(w, stopwords))
    read = time.perf_counter() - start
    run = run_skill(inp, forecasters, args.first, args.last, args.horizons, content,
                    warmup=not args.no_warmup,
                    log=lambda s: print(s, file=sys.stderr, flush=True))
    run.seconds["read"] = read
    run.seconds["total"] = time.perf_counter() - start
    argv_text = " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    write_report(run, args.out_dir, f"python -m stages.forecast_skill {argv_text}")
    print(f"{len(run.verdicts)} verdicts over {len(run.rolling.origins)} origins -> "
          f"{args.out_dir} ({run.seconds['total']:.0f} s)")


if __name__ == "__main__":
    main()
