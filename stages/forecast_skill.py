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

    make forecast-skill     # the full export: parse, filter, then this stage
"""

from __future__ import annotations

import argparse
import shlex
import sys

from pipeline.graph.files import STOPWORDS
from pipeline.evaluation.content import load_stopwords
from pipeline.interfaces.forecast_skill import INTERFACE
from pipeline.reports.forecast_skill import forecast_skill, write_report
from stages._lib.args import parser_for
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    run = forecast_skill(args.abstracts, args.period, args.first, args.last, args.horizons,
                         args.forecasters, args.min_count,
                         load_stopwords(args.stopwords or STOPWORDS), args.drop_stopwords,
                         warmup=not args.no_warmup,
                         log=lambda s: print(s, file=sys.stderr, flush=True))
    argv_text = " ".join(shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    write_report(run, args.out_dir, f"python -m stages.forecast_skill {argv_text}")
    print(f"{len(run.verdicts)} verdicts over {len(run.rolling.origins)} origins -> "
          f"{args.out_dir} ({run.seconds['total']:.0f} s)")


if __name__ == "__main__":
    main()
