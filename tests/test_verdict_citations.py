"""Every result the project's prose states is a record of a committed verdicts.json, cited by its
id, and every record of it is rendered by its report (prose quotes records, none is hand-written).

- README.md quotes numbers of the results page and cites no record id;
- the results page reports/README.md and every docs/*.md cite only records of the
  default run's reports/verdicts.json, except a section of the two pages naming another report's
  verdicts file, which cites that file's;
- every reports/<name>/README.md cites only records of its own reports/<name>/verdicts.json; a
  report without one (made before the verdict engine) cites none, starts with the historical
  note, and its text carries none of the verdict words below (a short list: a floor, not a proof
  that no result is claimed).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VERDICTS = json.loads((REPO / "reports" / "verdicts.json").read_text())
IDS = {r["id"]: r for r in VERDICTS["verdicts"]}
REPORT_FILE = {"results": "results.md", "forecast": "forecast.md",
               "semantic_benchmark": "semantic_benchmark.md", "signal": "signal.md"}
# a record id in a code span: `<report>/<family>/...`, for any report that makes records, or the
# same with a kept run's folder before it (`test-2021/results/...` of reports/anthology/verdicts.json;
# a folder of reports/anthology/ names its test year)
CITED = re.compile(r"`((?:[a-z][a-z-]*-\d{4}(?:-[a-z]+)*/)?(?:%s)/[^`]+)`"
                   % "|".join(map(re.escape, REPORT_FILE)))
HISTORICAL_NOTE = ("Historical record: made before the verdict engine; its comparisons are not judged "
                   "and carry no verdict (see")
VERDICT_WORDS = re.compile(r"\b(?:better|worse|beats?|helps?)\b|significan|\bp ?[=<≤] ?\d", re.I)
REPORT_READMES = sorted(p.parent.name for p in (REPO / "reports").glob("*/README.md"))
HISTORICAL = [name for name in REPORT_READMES if not (REPO / "reports" / name / "verdicts.json").exists()]
DOCS = sorted(p.name for p in (REPO / "docs").glob("*.md"))
# the front door and the results page it links: the pages whose sections may quote any report
RESULT_PAGES = ("README.md", "reports/README.md")


def _sections() -> list[str]:
    return [s for page in RESULT_PAGES
            for s in re.split(r"^## ", (REPO / page).read_text(), flags=re.M)]


def cited(text: str) -> list[str]:
    """The record ids a Markdown text cites; a code span wrapped across lines reads as one line."""
    return CITED.findall(re.sub(r"[ \t]*\n[ \t]*(?:> ?)?", " ", text))


def _unquoted(text: str) -> str:
    """The text with a leading block quote's markers and its link syntax removed (one line)."""
    text = re.sub(r"^> ?", "", text, flags=re.M)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return " ".join(text.split())


# a report's verdicts file named in a code span: the records a README section quoting it cites
NAMED_FILE = re.compile(r"`(reports/[\w./-]+/verdicts\.json)`")


def test_the_result_pages_cite_only_records_that_exist() -> None:
    """A section (``## ``) that names a report's verdicts file in a code span cites records of
    that file (the full-export runs reuse the default run's ids for other numbers); every other
    section cites the default run's."""
    found, missing = 0, []
    for section in _sections():
        named = NAMED_FILE.findall(section)
        ids = {r["id"] for f in named for r in json.loads((REPO / f).read_text())["verdicts"]} \
            if named else set(IDS)
        quoted = cited(section)
        found += len(quoted)
        missing += [c for c in quoted if c not in ids]
    assert found, "the result pages quote no verdict record"
    assert not missing, missing


def test_a_section_naming_another_verdicts_file_is_checked_against_it() -> None:
    """The rule above is not vacuous: some section naming a file cites ids the default lacks."""
    assert any(c not in IDS for s in _sections() if NAMED_FILE.search(s) for c in cited(s))


def test_the_front_door_quotes_the_results_page_without_record_ids() -> None:
    """The README's short answer carries no record id (the results page does): every signed
    percentage it quotes is one the results page states, so the two cannot drift apart."""
    readme = (REPO / "README.md").read_text()
    answer = next(s for s in re.split(r"^## ", readme, flags=re.M) if s.startswith("The answer"))
    assert not cited(readme)
    quoted = re.findall(r"[+−-]\d+\.\d+ %", answer)
    assert quoted, "the README's answer quotes no number"
    results = " ".join((REPO / "reports" / "README.md").read_text().split())
    assert not [q for q in quoted if q not in results], quoted


@pytest.mark.parametrize("name", DOCS)
def test_every_docs_page_cites_only_records_that_exist(name: str) -> None:
    missing = [c for c in cited((REPO / "docs" / name).read_text()) if c not in IDS]
    assert not missing, f"docs/{name} cites records that reports/verdicts.json lacks: {missing}"


def test_the_docs_cite_records() -> None:
    """The check above is not vacuous: at least one page cites a record."""
    assert any(cited((REPO / "docs" / name).read_text()) for name in DOCS)


@pytest.mark.parametrize("name", REPORT_READMES)
def test_every_report_readme_cites_only_its_own_records(name: str) -> None:
    folder = REPO / "reports" / name
    text = (folder / "README.md").read_text()
    found = cited(text)
    if (folder / "verdicts.json").exists():
        own = {r["id"] for r in json.loads((folder / "verdicts.json").read_text())["verdicts"]}
        missing = [c for c in found if c not in own]
        assert not missing, f"reports/{name}/README.md cites records its verdicts.json lacks: {missing}"
    else:
        assert not found, f"reports/{name} has no verdicts.json, yet its README cites {found}"
        assert _unquoted(text).startswith(HISTORICAL_NOTE), \
            f"reports/{name}/README.md has no verdicts.json and does not start with the historical note"


def test_historical_readmes_carry_no_verdict_words() -> None:
    assert HISTORICAL, "no report without a verdicts.json: this check would hold vacuously"
    found = {name: VERDICT_WORDS.findall((REPO / "reports" / name / "README.md").read_text())
             for name in HISTORICAL}
    assert not any(found.values()), found


@pytest.mark.parametrize("sentence", [
    "| Frequency | 248.65 | 1901.70 | 0.1602 | better by 0.04 % (p = 2e-74) |",
    "With the LM held fixed, the temporal bias helps a little, and consistently.",
    "No model beats persistence (last year's unigram distribution).",
    "Frequency-NoLSTM and Frequency do not change test PPL significantly.",
    "Baseline-2 and Baseline-3 are much worse (PPL 400 and 334).",
])
def test_the_verdict_word_scan_finds_what_the_historical_readmes_used_to_say(sentence: str) -> None:
    assert VERDICT_WORDS.search(sentence)


def test_the_scan_passes_plain_measurements() -> None:
    assert not VERDICT_WORDS.search("| Baseline-all | 248.76 | 1901.03 | 0.1510 |")
    assert not VERDICT_WORDS.search("A unigram model of the training years scores 1,086.92.")


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


# The forecast-skill report (make forecast-skill, outside the default run) keeps its records in
# its own verdicts.json; the README may cite them too.
SKILL_IDS = {r["id"] for r in json.loads(
    (REPO / "reports" / "forecast-skill" / "verdicts.json").read_text())["verdicts"]}
SKILL_CITED = re.compile(r"`(forecast-skill/forecast-skill/[^`]+)`")


def test_the_result_pages_cite_only_forecast_skill_records_that_exist() -> None:
    text = re.sub(r"[ \t]*\n[ \t]*(?:> ?)?", " ",
                  "\n".join((REPO / page).read_text() for page in RESULT_PAGES))
    found = SKILL_CITED.findall(text)
    assert found, "the result pages quote no forecast-skill record"
    missing = [c for c in found if c not in SKILL_IDS]
    assert not missing, missing


def test_a_record_id_means_one_thing_on_the_result_pages() -> None:
    """Across the verdicts files the front door and the results page cite (the default run's and
    every file a section names), an id that appears twice carries the same numbers and verdict:
    a reader who looks a cited id up finds one record, whichever file they open."""
    files = {"reports/verdicts.json"} | {f for page in RESULT_PAGES
                                         for f in NAMED_FILE.findall((REPO / page).read_text())}
    seen: dict[str, tuple[str, tuple]] = {}
    clashes = []
    for f in sorted(files):
        for r in json.loads((REPO / f).read_text())["verdicts"]:
            value = (r["effect"], tuple(r["ci"]), r["verdict"])
            if r["id"] in seen and seen[r["id"]][1] != value:
                clashes.append(f"{r['id']}: {seen[r['id']][0]} and {f}")
            seen.setdefault(r["id"], (f, value))
    assert len(files) > 1 and not clashes, clashes
