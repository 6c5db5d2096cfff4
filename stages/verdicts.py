"""Stage `verdicts`: every report's verdict records in one file, reports/verdicts.json.

Each report stage (report, forecast_report, ...) judges its own claims with the verdict engine
(pipeline/stats/verdict.py: the test, what was resampled, Holm within each family) and writes the
records under "verdicts" in its JSON output. This stage collects them (pipeline/stats/collect.py),
checks their schema (docs/verdicts.md) and that no two share an id, and writes
reports/verdicts.json: {"format_version", "counts": {family: {verdict: n}}, "verdicts": [...]}.
The README and the reports quote records of this file by their id.
"""

from __future__ import annotations

import argparse
import sys

from pipeline.infra.io import read_json, write_json
from pipeline.stats.collect import collect, summary_lines
from pipeline.interfaces.verdicts import INTERFACE
from stages._lib.args import parser_for
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    document = collect({path: read_json(path) for path in args.inputs})
    write_json(document, args.out)
    print("\n".join([f"wrote {args.out}: {len(document['verdicts'])} verdicts",   # type: ignore[arg-type]
                     *summary_lines(document)]), file=sys.stderr)


if __name__ == "__main__":
    main()
