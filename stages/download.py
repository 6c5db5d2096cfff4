"""Stage `download`: fetch the ACL Anthology export to data/raw/anthology+abstracts.bib.gz.

--source is an http(s) URL (official: https://aclanthology.org/anthology+abstracts.bib.gz) or a
local path (default: the embedded sample data/sample/anthology-sample.bib.gz). The copy is checked
to be complete gzip holding BibTeX entries and published atomically; its source, sha256 and size
go to --info (reports/download.json: plain JSON, not a DVC metric).
"""

from __future__ import annotations

import argparse

from pipeline.corpus.download import fetch
from pipeline.infra.io import write_json
from stages._cli import stage_main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m stages.download", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", required=True,
                        help="http(s) URL or local path of an anthology+abstracts.bib.gz export "
                             "(params data.source)")
    parser.add_argument("--out", required=True, help="where to write the .bib.gz (atomically)")
    parser.add_argument("--info", required=True,
                        help="JSON file recording source, sha256, size and uncompressed size")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="network timeout in seconds for URL sources (default: 60)")
    return parser


@stage_main
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)

    info = fetch(args.source, args.out, timeout=args.timeout)  # a UserError names the source
    write_json(info.to_dict(), args.info)
    print(f"{args.source} -> {args.out}: {info.size:,} bytes, sha256 {info.sha256}")


if __name__ == "__main__":
    main()
