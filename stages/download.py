"""Stage `download`: fetch the corpus (data.source) to data/raw/corpus, checked before any parse.

--source is an http(s) URL (the ACL Anthology's: https://aclanthology.org/anthology+abstracts.bib.gz)
or a local path (default: the embedded sample data/sample/anthology-sample.bib.gz). The format is
recognised from the content: BibTeX, CSV, TSV, JSON Lines (each optionally gzipped) or Parquet;
anything else stops here, naming what was found and the formats accepted. A table must have the
id, date and text columns given by the column mapping (params data.columns). The copy keeps the
bytes and is published atomically; its source, format, sha256 and size go to --info
(reports/download.json: plain JSON, not a DVC metric).
"""

from __future__ import annotations

import argparse

from pipeline.corpus.download import fetch
from pipeline.infra.io import write_json
from pipeline.infra.schema.params import ColumnsConfig
from pipeline.interfaces.download import INTERFACE
from stages._lib.args import parser_for
from stages._lib.options import build
from stages._lib.cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    return parser_for(INTERFACE, __doc__)


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)

    info = fetch(args.source, args.out, timeout=args.timeout,
                 columns=build(ColumnsConfig, args))  # a UserError names the source
    write_json(info.to_dict(), args.info)
    print(f"{args.source} -> {args.out}: {info.format}{' (gzip)' if info.gzipped else ''}, "
          f"{info.size:,} bytes, sha256 {info.sha256}")


if __name__ == "__main__":
    main()
