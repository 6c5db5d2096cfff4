import gzip
from pathlib import Path

import pandas as pd
import pytest
from conftest import SHARED_DATA

from pipeline.corpus.anthology import (
    PAPER_COLUMNS,
    REJECT_COLUMNS,
    parse_bibtex,
    parse_file,
    read_bib_text,
    split_entries,
)
from pipeline.corpus.bibfile import BibFileError
from pipeline.corpus.bibvalues import MalformedValue, resolve_value
from pipeline.infra.errors import UserError

FIXTURES = Path(__file__).parent / "fixtures"
DATA = Path(__file__).parent / "data"
REAL = FIXTURES / "real_entries.bib"
MALFORMED = FIXTURES / "malformed.bib"
FULL_EXPORT = SHARED_DATA / "anthology+abstracts.bib.gz"


@pytest.fixture(scope="module")
def real():
    return parse_file(REAL).papers.set_index("key")


@pytest.fixture(scope="module")
def malformed():
    return parse_file(MALFORMED)


# --- field values -----------------------------------------------------------------------------

@pytest.mark.parametrize("raw, expected", [
    ('"plain"', "plain"),
    ('{He said "hi"}', 'He said "hi"'),
    ('{outer {inner} text}', "outer {inner} text"),
    ('"with {braced "quote"} inside"', 'with {braced "quote"} inside'),
    ("2019", "2019"),
    ("nov", "November"),
    ('oct # "-" # nov', "October-November"),
    ('may # " 31--2 " # jun', "May 31--2 June"),
    ('"a\\{b"', "a\\{b"),
])
def test_resolve_value(raw, expected):
    assert resolve_value(raw) == expected


@pytest.mark.parametrize("raw, message", [
    ('"C" year = "2021"', "stray text"),
    ('"never closed', "unterminated quote"),
    ("{never closed", "unbalanced '{'"),
    ('oct # ', "dangling '#'"),
    ("", "empty value"),
])
def test_resolve_value_rejects_bad_syntax(raw, message):
    with pytest.raises(MalformedValue, match=message):
        resolve_value(raw)


# --- real Anthology entries -------------------------------------------------------------------

def test_real_entries_become_rows_in_file_order():
    result = parse_file(REAL)
    assert list(result.papers.columns) == PAPER_COLUMNS
    assert list(result.rejects.columns) == REJECT_COLUMNS
    assert result.rejects.empty
    assert result.papers["key"].tolist() == [
        "savinova-hoek-2024-subjectivity", "zhang-2018-joint", "smid-etal-2024-llama",
        "lent-sogaard-2021-common", "buet-yvon-2021-vers", "yu-etal-2021-ji",
        "oh-etal-2021-netmarble"]
    assert str(result.papers["year"].dtype) == "int32"


def test_brace_wrapped_abstract_is_unwrapped_and_decoded(real):
    abstract = real.loc["savinova-hoek-2024-subjectivity", "abstract"]
    assert abstract.startswith("In this paper, we address the issue of explainability")
    assert "native English speakers' judgements" in abstract
    assert abstract.endswith("might not be as salient for naïve speakers as it is in the theory.")
    assert not any(c in abstract for c in "{}\\")


def test_concatenated_month(real):
    row = real.loc["zhang-2018-joint"]
    assert row["month"] == "October-November"
    assert row["year"] == 2018
    assert row["title"] == "Joint models for NLP"
    assert row["venue"].endswith("Tutorial Abstracts")
    assert pd.isna(row["doi"])  # no doi field -> null


def test_escapes_in_titles_authors_and_abstracts(real):
    assert real.loc["smid-etal-2024-llama", "title"] == (
        "LLaMA-Based Models for Aspect-Based Sentiment Analysis")
    assert real.loc["smid-etal-2024-llama", "authors"] == "Šmíd, Jakub; Priban, Pavel; Kral, Pavel"
    assert real.loc["smid-etal-2024-llama", "venue"].endswith("Sentiment, & Social Media Analysis")
    assert real.loc["lent-sogaard-2021-common", "authors"] == "Lent, Heather; Søgaard, Anders"
    assert "such as, “Mary babysat Tom”: a state-of-the-art parser" in real.loc[
        "lent-sogaard-2021-common", "abstract"]
    assert real.loc["lent-sogaard-2021-common", "url"] == "https://aclanthology.org/2021.wnut-1.14"
    assert real.loc["lent-sogaard-2021-common", "doi"] == "10.18653/v1/2021.wnut-1.14"


def test_french_and_chinese_entries_keep_their_text_and_language_field(real):
    french = real.loc["buet-yvon-2021-vers"]
    assert french["language"] == "French"
    assert french["title"].startswith("Vers la production automatique de sous-titres adaptés à l'")
    assert french["authors"] == "Buet, François; Yvon, François"
    chinese = real.loc["yu-etal-2021-ji"]
    assert chinese["language"] == "Chinese"
    assert chinese["abstract"].startswith("本文利用知网(HowNet)中的知识")


# --- malformed input ----------------------------------------------------------------------------

def test_malformed_entries_become_rejects_with_reasons(malformed):
    assert malformed.papers["key"].tolist() == ["good-2020-first", "good-2020-second"]
    reasons = list(zip(malformed.rejects["key"], malformed.rejects["reason"]))
    assert reasons == [
        ("noyear-2020-x", "missing year"),
        ("noabstract-2020-x", "missing abstract"),
        ("badyear-x", "invalid year 'twenty twenty'"),
        ("strayfield-2020-x",
         "malformed field 'title': stray text after a value: 'year = \"2020\"'"),
        ("truncated-2020-x", "truncated entry: a field value or the entry is never closed"),
        ("good-2020-first", "duplicate key (first at line 12)"),
        ("truncated-eof-2021-x", "truncated entry: a field value or the entry is never closed"),
    ]


def test_rejects_carry_line_and_raw_text(malformed):
    lines = MALFORMED.read_text().splitlines()
    for line, raw in zip(malformed.rejects["line"], malformed.rejects["raw"]):
        assert lines[line - 1].startswith("@")
        assert raw.startswith(lines[line - 1])


def test_entry_after_a_truncated_one_is_parsed(malformed):
    second = malformed.papers.set_index("key").loc["good-2020-second"]
    assert second["venue"] == "Transactions of Somewhere"
    assert second["doi"] == "10.0000/fake.2"
    assert second["abstract"].startswith("The second good entry follows directly")


def test_result_does_not_depend_on_chunking():
    # Force tiny chunks so that duplicates and truncated entries straddle chunk boundaries.
    text = "\n".join(path.read_text() for path in (
        MALFORMED, REAL, DATA / "extra_close_brace.bib", DATA / "unbalanced_quoted_title.bib"))
    serial = parse_bibtex(text, workers=1)
    chunked = parse_bibtex(text, workers=4, min_chunk_chars=1)
    assert len(split_entries(text, 4, min_chunk_chars=1)) == 4
    assert serial.papers.equals(chunked.papers)
    assert serial.rejects.equals(chunked.rejects)


def test_string_macros_apply_to_every_entry():
    text = ('@string{acl = "Association for Computational Linguistics"}\n'
            + MALFORMED.read_text().replace('"Proceedings of a Workshop"', "acl"))
    assert len(split_entries(text, 4, min_chunk_chars=1)) == 1
    result = parse_bibtex(text, workers=4, min_chunk_chars=1)
    assert result.papers["venue"].tolist() == ["Association for Computational Linguistics",
                                               "Transactions of Somewhere"]


# --- text that used to be lost silently (hand-made inputs in tests/data/) ----------------------

def test_extra_closing_brace_in_an_abstract_is_a_reject_with_all_its_text():
    # Before: a paper with abstract "Our parser reaches 90.1 F1"; the rest, url and doi vanished.
    result = parse_file(DATA / "extra_close_brace.bib")
    assert result.papers["key"].tolist() == ["after-extra-brace-2020"]
    [reject] = result.rejects.to_dict("records")
    assert (reject["key"], reject["line"]) == ("extra-brace-2020", 4)
    assert reject["reason"] == ("text after the entry's closing '}' (line 8): an unbalanced '}' "
                                "inside a field ended the entry early")
    assert "the rest of this abstract must not be lost" in reject["raw"]
    assert reject["raw"].rstrip().endswith('doi = "10.0000/fake.3",\n}')


def test_unbalanced_braces_in_a_quoted_title_are_rejects():
    # Before: both titles were accepted with the stray brace dropped.
    result = parse_file(DATA / "unbalanced_quoted_title.bib")
    assert result.papers["key"].tolist() == ["balanced-2020"]
    assert result.papers["title"].tolist() == ["Cross-lingual BERT for Low-resource Parsing"]
    assert list(zip(result.rejects["key"], result.rejects["reason"])) == [
        ("open-brace-2020", "malformed field 'title': unbalanced '{' inside a quoted value"),
        ("close-brace-2020", "malformed field 'title': unbalanced '}' inside a quoted value"),
    ]


def test_text_outside_any_entry_is_a_reject_but_percent_comments_are_not():
    text = ("% a comment line is fine\n"
            "inproceedings{lost-at-sign-2020, title = \"T\", year = \"2020\", abstract = \"A\"}\n"
            + "@" + MALFORMED.read_text().split("\n@", 1)[1])
    result = parse_bibtex(text)
    first = result.rejects.iloc[0]
    assert pd.isna(first["key"]) and first["line"] == 2
    assert first["reason"].startswith("text outside any entry (line 2")
    assert "lost-at-sign-2020" in first["raw"]
    assert "good-2020-first" in result.papers["key"].tolist()


def test_an_entry_that_is_not_utf8_is_a_reject_and_the_rest_parses():
    # Before: the whole file failed with "is not UTF-8 text ... position 384".
    result = parse_file(DATA / "latin1_entry.bib")
    assert result.papers["key"].tolist() == ["utf8-before-2020", "utf8-after-2020"]
    assert result.papers["title"].tolist() == ["Café Before", "After"]
    [reject] = result.rejects.to_dict("records")
    assert (reject["key"], reject["line"]) == ("latin1-2020", 8)
    assert reject["reason"] == "not valid UTF-8: byte 0xe9 at line 10"
    assert 'author = "M\\xe9ndez, Jos\\xe9"' in reject["raw"]  # bad bytes shown, not dropped
    # chunked parsing in worker processes gives the same result
    text = read_bib_text(DATA / "latin1_entry.bib")
    chunked = parse_bibtex(text * 3, workers=2, min_chunk_chars=1)
    assert chunked.rejects["reason"].tolist()[:2] == ["not valid UTF-8: byte 0xe9 at line 10",
                                                     "duplicate key (first at line 2)"]


@pytest.mark.parametrize("name", ["empty.bib", "empty.bib.gz", "not_bibtex.txt.gz"])
def test_a_file_without_entries_stops_parsing(name):
    # Before: 0 papers, exit 0, and a misleading failure stages later at `split`.
    with pytest.raises(BibFileError, match=f"no BibTeX entries found in .*{name}") as err:
        parse_file(DATA / name)
    assert isinstance(err.value, UserError) and "data.source" in err.value.fix


def test_only_comments_is_no_entries():
    with pytest.raises(BibFileError, match="no BibTeX entries found in <text>"):
        parse_bibtex("% just a comment\n% and another\n")


# --- files --------------------------------------------------------------------------------------

def test_reads_gzip_and_plain_text(tmp_path):
    gz = tmp_path / "x.bib.gz"
    gz.write_bytes(gzip.compress(REAL.read_bytes()))
    assert read_bib_text(gz) == REAL.read_text()
    assert parse_file(gz).papers.equals(parse_file(REAL).papers)


def test_corrupt_gzip_is_a_clear_error(tmp_path):
    data = gzip.compress(REAL.read_bytes())
    corrupt = tmp_path / "corrupt.bib.gz"
    corrupt.write_bytes(data[: len(data) // 2])
    with pytest.raises(BibFileError, match=r"corrupt\.bib\.gz is not a valid gzip file.*"
                                           r"dvc repro -f download"):
        parse_file(corrupt)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(BibFileError, match="does not exist: run the `download` stage"):
        parse_file(tmp_path / "nope.bib.gz")


def test_sample_parses_completely(sample_bib):
    result = parse_file(sample_bib, workers=2)
    assert len(result.papers) == 1949 and result.rejects.empty
    assert result.papers["key"].is_unique
    assert set(result.papers["year"]) == set(range(2015, 2022))
    assert not result.papers["abstract"].str.contains(r"[\\{}]", regex=True).any()


@pytest.mark.slow
@pytest.mark.skipif(not FULL_EXPORT.exists(),
                    reason=f"full export {FULL_EXPORT} not present on this machine")
def test_full_export_has_every_entry():
    result = parse_file(FULL_EXPORT, workers=2)
    assert len(result.papers) == 54169
    assert result.rejects.empty
    counts = result.papers["year"].value_counts()
    # abstract counts per year documented in ../shared/GUIDE.md
    assert counts[2020] == 6668 and counts[2021] == 6013 and counts[2022] == 8139
    assert counts[2023] == 7992 and counts[range(2003, 2020)].sum() == 17374
    assert (result.papers["entry_type"] == "article").sum() == 945
