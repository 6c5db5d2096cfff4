"""Every verdict the README quotes is a record of the committed reports/verdicts.json, and every
record of it is rendered by its report (issue 31 §1: prose quotes records, none is hand-written)."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VERDICTS = json.loads((REPO / "reports" / "verdicts.json").read_text())
IDS = {r["id"]: r for r in VERDICTS["verdicts"]}
CITED = re.compile(r"`((?:results|forecast|semantic_benchmark)/[^`]+)`")
REPORT_FILE = {"results": "results.md", "forecast": "forecast.md",
               "semantic_benchmark": "semantic_benchmark.md"}


def test_the_readme_cites_only_records_that_exist() -> None:
    cited = CITED.findall((REPO / "README.md").read_text().replace("\n  ", " "))
    assert cited, "the README's results quote no verdict record"
    missing = [c for c in cited if c not in IDS]
    assert not missing, missing


def test_every_record_is_in_its_report() -> None:
    """Each report renders its records: their pair and verdict appear in its tables."""
    for record in IDS.values():
        text = (REPO / "reports" / REPORT_FILE[record["report"]]).read_text()
        assert record["a"] in text and record["b"] in text and record["verdict"] in text, record["id"]


def test_counts_match_the_records() -> None:
    for family, counts in VERDICTS["counts"].items():
        for verdict, n in counts.items():
            assert n == sum(r["family"] == family and r["verdict"] == verdict
                            for r in IDS.values()), (family, verdict)
