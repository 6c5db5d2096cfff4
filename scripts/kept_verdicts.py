"""Every kept profile run's verdict records in one file:

    python scripts/kept_verdicts.py reports/anthology/test-2021 reports/anthology/test-2023 \
        reports/anthology/forecast-2023 --out reports/anthology/verdicts.json

Each folder is a run kept by scripts/run_profile.sh; its verdicts.json holds every record its run
judged (results, forecasts, semantic change). Two runs of one corpus judge some of the
same claims under the same id (both judge their own Baseline against the CM anchors, for
instance, with a different Holm family each), so every record's ``report`` and ``id`` are
prefixed with its folder's name here: ``test-2023/results/temporal-gain/2023/...``. Inside a
folder's own verdicts.json the ids are unprefixed, as its run wrote them. The schema checks and
the ordering are the verdicts stage's (pipeline/stats/collect.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

from pipeline.infra.io import read_json, write_json
from pipeline.stats.collect import collect, summary_lines


def labelled(document: Mapping[str, object], label: str) -> dict[str, object]:
    """``document`` with each verdict record's ``report`` and ``id`` prefixed by ``label/``."""
    records = [{**r, "report": f"{label}/{r['report']}", "id": f"{label}/{r['id']}"}
               for r in document.get("verdicts", [])]                    # type: ignore[union-attr]
    return {**document, "verdicts": records}


def merged(runs: list[Path]) -> dict[str, object]:
    """The collected file of every kept run's verdicts.json (module doc)."""
    sources = {}
    for run in runs:
        path = run / "verdicts.json"
        if not path.is_file():
            raise SystemExit(f"error: {path} not found: is {run} a kept run (make profile-report)?")
        sources[str(path)] = labelled(read_json(path), run.name)
    return collect(sources)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="kept run folders (make profile-report DEST)")
    p.add_argument("--out", type=Path, required=True, help="the merged verdicts.json to write")
    args = p.parse_args(argv)
    names = [r.name for r in args.runs]
    if len(set(names)) != len(names):
        raise SystemExit(f"error: two runs share a folder name ({', '.join(names)}); their ids "
                         "would collide")
    document = merged(args.runs)
    write_json(document, args.out)
    print("\n".join([f"wrote {args.out}: {len(document['verdicts'])} verdicts "   # type: ignore[arg-type]
                     f"of {len(args.runs)} runs", *summary_lines(document)]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
