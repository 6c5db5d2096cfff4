"""Corpus readers: formats from content, column mapping, dates, every reject reason.

Every file here is real, written into ``tmp_path`` the way a user's export would be: CSV with a
quoted newline, TSV, JSON Lines plain and gzipped with a bad line, Parquet, and files that are
no corpus at all (random bytes, an HTML page, gzipped JSON Lines given a wrong mapping), which
must stop the download stage with what was found.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.corpus.dates import month_number, normalise_date
from pipeline.corpus.download import DownloadError, fetch
from pipeline.corpus.formats import FormatError, detect
from pipeline.corpus.tables import read_table, reason_kind
from pipeline.infra.errors import UserError
from pipeline.infra.schema.params import ColumnsConfig
from stages import download, parse

NEWS = ColumnsConfig(id="doc_id", date="published", title="headline", text="body")
TEXT = "Central banks raised interest rates again as inflation stayed above the target"


def news_rows() -> list[dict[str, object]]:
    return [
        {"doc_id": "n1", "published": "2020-03-02", "headline": "Rates", "body": TEXT},
        {"doc_id": "n2", "published": "2020-07", "headline": "Quoted, with comma",
         "body": "First line of the story\nsecond line, after a newline inside quotes"},
        {"doc_id": "n3", "published": "2021-01-05T09:30:00+01:00", "headline": "Time",
         "body": TEXT + " once more"},
    ]


def write_csv(path: Path, rows: list[dict[str, object]], sep: str = ",") -> Path:
    pd.DataFrame(rows).to_csv(path, sep=sep, index=False)
    return path


def write_jsonl(path: Path, lines: list[str], gz: bool = False) -> Path:
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return path


def read(path: Path, columns: ColumnsConfig = NEWS) -> tuple[pd.DataFrame, pd.DataFrame]:
    out = path.parent / (path.name + ".papers.parquet")
    result = read_table(path, detect(path), columns, out, batch_rows=2)
    papers = pd.read_parquet(out)
    assert len(papers) == result.papers
    return papers, result.rejects


# -- formats -----------------------------------------------------------------------------------

def test_each_format_is_recognised_from_content_not_name(tmp_path):
    rows = news_rows()
    csv = write_csv(tmp_path / "a.txt", rows)
    tsv = write_csv(tmp_path / "b.dat", rows, sep="\t")
    jsonl = write_jsonl(tmp_path / "c.csv", [json.dumps(r) for r in rows])
    jsonl_gz = write_jsonl(tmp_path / "d", [json.dumps(r) for r in rows], gz=True)
    parquet = tmp_path / "e.jsonl"
    pq.write_table(pa.Table.from_pylist(rows), parquet)
    bib = tmp_path / "f.csv"
    bib.write_text('@inproceedings{k, year = "2020", title = "T", abstract = "A b"}\n')
    found = {p.name: (detect(p).format, detect(p).gzipped)
             for p in (csv, tsv, jsonl, jsonl_gz, parquet, bib)}
    assert found == {"a.txt": ("csv", False), "b.dat": ("tsv", False), "c.csv": ("jsonl", False),
                     "d": ("jsonl", True), "e.jsonl": ("parquet", False),
                     "f.csv": ("bibtex", False)}


@pytest.mark.parametrize("content, found", [
    (os.urandom(4096), "binary data"),
    (b"<!DOCTYPE html>\n<html><head><title>404</title></head><body>gone (sorry), a, b</body>"
     b"</html>\n", "an HTML/XML document whose first line is '<!DOCTYPE html>'"),
    (gzip.compress(b"just one line of prose (no delimiter)\n", mtime=0),
     "gzip-compressed text whose first line is 'just one line of prose (no delimiter)'"),
    (b"", "an empty file"),
])
def test_a_file_that_is_no_corpus_stops_the_download_stage(content, found, tmp_path, capsys):
    if content[:1] != b"\x1f" and b"\0" not in content[:4096] and found == "binary data":
        content = b"\0" + content  # keep the random bytes binary-looking
    source = tmp_path / "corpus"
    source.write_bytes(content)
    out = tmp_path / "raw" / "corpus"
    with pytest.raises(DownloadError) as err:
        fetch(str(source), out)
    assert f"{source} is not a corpus file: found {found}" in str(err.value)
    assert "accepted formats: BibTeX (.bib), CSV, TSV, JSON Lines" in str(err.value)
    assert err.value.path == str(source) and "data.source" in err.value.fix
    assert not out.exists()


def test_gzipped_jsonl_with_a_wrong_mapping_stops_the_download_stage(tmp_path, capsys):
    # This once passed the download check (its text holds a "(") and parsed to 0 rows.
    lines = [json.dumps({"doc_id": "n1", "published": "2020-01-01", "body": "a (b) c"})]
    source = write_jsonl(tmp_path / "news.jsonl.gz", lines, gz=True)
    with pytest.raises(SystemExit) as done:
        download.main(["--source", str(source), "--out", str(tmp_path / "raw"),
                       "--info", str(tmp_path / "info.json")])  # default mapping: id, date, text
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "gzip-compressed JSON Lines without the column(s) 'id' (data.columns.id)" in err
    assert "its columns: 'doc_id', 'published', 'body'" in err and "Traceback" not in err
    assert not (tmp_path / "raw").exists()
    download.main(["--source", str(source), "--out", str(tmp_path / "raw"), "--info",
                   str(tmp_path / "info.json"), "--id", "doc_id", "--date", "published",
                   "--text", "body"])
    info = json.loads((tmp_path / "info.json").read_text())
    assert (info["format"], info["gzipped"]) == ("jsonl", True)
    assert (tmp_path / "raw").read_bytes() == source.read_bytes()  # the copy keeps the bytes


def test_gzipped_parquet_is_named_as_such(tmp_path):
    plain = tmp_path / "x.parquet"
    pq.write_table(pa.Table.from_pylist(news_rows()), plain)
    packed = tmp_path / "x.parquet.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    with pytest.raises(FormatError, match="found gzip-compressed Parquet"):
        detect(packed)


# -- readers and the column mapping ------------------------------------------------------------

def expected_papers(title: bool = True) -> pd.DataFrame:
    return pd.DataFrame({
        "key": ["n1", "n2", "n3"], "year": pd.array([2020, 2020, 2021], dtype="int32"),
        "date": ["2020-03-02", "2020-07", "2021-01-05"],
        "title": ["Rates", "Quoted, with comma", "Time"] if title else ["", "", ""],
        "abstract": [TEXT, news_rows()[1]["body"], TEXT + " once more"]})


@pytest.mark.parametrize("kind", ["csv", "tsv", "jsonl", "jsonl.gz", "parquet"])
def test_every_reader_gives_the_papers_contract(kind, tmp_path):
    rows = news_rows()
    path = tmp_path / f"news.{kind}"
    if kind in ("csv", "tsv"):
        write_csv(path, rows, sep="," if kind == "csv" else "\t")
    elif kind == "parquet":
        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        write_jsonl(path, [json.dumps(r) for r in rows], gz=kind.endswith("gz"))
    papers, rejects = read(path)
    pd.testing.assert_frame_equal(papers, expected_papers(), check_dtype=False)
    assert str(papers["year"].dtype) == "int32" and rejects.empty
    assert pq.read_schema(path.parent / (path.name + ".papers.parquet")).metadata == {
        b"format": kind.split(".")[0].encode()}


def test_title_is_optional(tmp_path):
    rows = [{k: v for k, v in r.items() if k != "headline"} for r in news_rows()]
    path = write_jsonl(tmp_path / "news.jsonl", [json.dumps(r) for r in rows])
    papers, _ = read(path)
    pd.testing.assert_frame_equal(papers, expected_papers(title=False), check_dtype=False)
    no_title = ColumnsConfig(id="doc_id", date="published", title=None, text="body")
    papers, _ = read(write_csv(tmp_path / "news.csv", news_rows()), no_title)
    assert papers["title"].tolist() == ["", "", ""]


@pytest.mark.parametrize("value, date", [
    ("2019", "2019"), (2019, "2019"), ("2019-3", "2019-03"), ("2019-03-02", "2019-03-02"),
    ("2019-03-02T23:59:59Z", "2019-03-02"), ("2019-03-02 10:00", "2019-03-02"),
    ("2019-03-02T10:00:00.123+05:30", "2019-03-02")])
def test_dates_are_normalised(value, date):
    assert normalise_date(value) == date


@pytest.mark.parametrize("value, why", [
    ("2019-13-02", "month 13 is not 1-12"), ("2019-02-30", "day 30 is not in 2019-02"),
    ("sometime in spring 2019", "does not parse"), ("03/02/2019", "does not parse"),
    (2019.5, "does not parse"), (True, "does not parse")])
def test_a_bad_date_says_its_value(value, why):
    with pytest.raises(ValueError, match=why) as err:
        normalise_date(value)
    assert repr(str(value) if not isinstance(value, (float, bool)) else value)[:6] in str(err.value)


# -- every reject reason -----------------------------------------------------------------------

def test_every_reject_reason_in_jsonl(tmp_path):
    good = news_rows()
    lines = [json.dumps(r) for r in good] + [
        '{"doc_id": "cut", "published": "2020-01-01", "body": "never closed',       # line 4
        json.dumps({"published": "2020-01-01", "body": TEXT}),                     # 5 no id
        json.dumps({"doc_id": "d", "body": TEXT}),                                 # 6 no date
        json.dumps({"doc_id": "m", "published": "2020-13-01", "body": TEXT}),      # 7
        json.dumps({"doc_id": "f", "published": "last spring", "body": TEXT}),     # 8
        json.dumps({"doc_id": "t", "published": "2020-01-01", "body": "  "}),      # 9 no text
        json.dumps({"doc_id": "n1", "published": "2020-01-01", "body": TEXT}),     # 10 dup
        "[1, 2, 3]",                                                               # 11
        "",                                                                        # blank
        json.dumps({"doc_id": 7, "published": 2020, "body": TEXT}),                # 13 kept
    ]
    papers, rejects = read(write_jsonl(tmp_path / "news.jsonl.gz", lines, gz=True))
    assert papers["key"].tolist() == ["n1", "n2", "n3", "7"]
    assert papers["date"].tolist()[-1] == "2020"
    got = dict(zip(rejects["line"].tolist(), rejects["reason"].tolist()))
    assert list(got) == [4, 5, 6, 7, 8, 9, 10, 11]
    assert got[4].startswith("malformed line: not valid JSON")
    assert got[5] == "missing id (column 'doc_id')"
    assert got[6] == "missing date (column 'published')"
    assert got[7] == "date '2020-13-01' does not parse: month 13 is not 1-12"
    assert got[8].startswith("date 'last spring' does not parse")
    assert got[9] == "missing text (column 'body')"
    assert got[10] == "duplicate id (first at line 1)"
    assert got[11] == "malformed line: a JSON list where an object was expected"
    keys = [k if isinstance(k, str) else None for k in rejects["key"].tolist()]
    assert keys == [None, None, "d", "m", "f", "t", "n1", None]
    assert rejects["raw"].iloc[0] == lines[3]
    assert [reason_kind(r) for r in rejects["reason"]] == [
        "malformed line: not valid JSON", "missing id", "missing date", "date does not parse",
        "date does not parse", "missing text", "duplicate id",
        "malformed line: a JSON list where an object was expected"]


def test_csv_wrong_field_count_and_quoted_newlines_keep_line_numbers(tmp_path):
    path = tmp_path / "news.csv"
    path.write_text('doc_id,published,headline,body\n'
                    'n1,2020-03-02,Rates,"two\nlines"\n'      # lines 2-3
                    'n2,2020-04-01,Extra,field,too many\n'    # line 4
                    'n3,2020-05-01\n'                         # line 5
                    '\n'
                    'n4,2020-06-01,Fine,"' + TEXT + '"\n')    # line 7
    papers, rejects = read(path)
    assert papers["key"].tolist() == ["n1", "n4"]
    assert papers["abstract"].iloc[0] == "two\nlines"
    assert rejects["line"].tolist() == [4, 5]
    assert rejects["reason"].tolist() == [
        "malformed line: wrong number of fields (5 where the header has 4)",
        "malformed line: wrong number of fields (2 where the header has 4)"]
    assert rejects["raw"].iloc[0] == "n2,2020-04-01,Extra,field,too many"


def test_zero_usable_rows_is_an_error_naming_the_file_and_reasons(tmp_path):
    lines = [json.dumps({"doc_id": f"n{i}", "published": "2020", "text": TEXT}) for i in range(3)]
    path = write_jsonl(tmp_path / "news.jsonl", lines)
    out = tmp_path / "papers.parquet"
    with pytest.raises(UserError) as err:
        read_table(path, detect(path), NEWS, out, source="data/news.jsonl")
    assert "data/news.jsonl (JSON Lines) holds no usable document: 3 × missing text" in str(
        err.value)
    assert "data.columns" in err.value.fix and not out.exists()


def test_parse_stage_prints_counts_per_reason(tmp_path, capsys):
    lines = [json.dumps(r) for r in news_rows()] + [
        json.dumps({"doc_id": "m", "published": "2020-13-01", "body": TEXT}),
        json.dumps({"doc_id": "x", "published": "2020-14", "body": TEXT}), "{oops"]
    source = write_jsonl(tmp_path / "news.jsonl", lines)
    parse.main(["--raw", str(source), "--papers", str(tmp_path / "p.parquet"), "--rejects",
                str(tmp_path / "r.parquet"), "--id", "doc_id", "--date", "published",
                "--title", "headline", "--text", "body"])
    out = capsys.readouterr().out
    assert "JSON Lines: 3 papers" in out and "3 rejects" in out
    assert "rejected 2: date does not parse" in out
    assert "rejected 1: malformed line: not valid JSON" in out
    assert pd.read_parquet(tmp_path / "r.parquet")["line"].tolist() == [4, 5, 6]


# -- BibTeX keeps year + month -----------------------------------------------------------------

@pytest.mark.parametrize("month, number", [
    ("October-November", 10), ("27–30 January", 1), ("7", 7), ("oct", 10), ("Sept.", 9),
    ("December 8–12", 12), ("May 31–June 2", 5), ("spring", None), ("27-30", None), ("", None),
    (None, None), (float("nan"), None), ("13", None)])
def test_bibtex_month_names_the_first_month(month, number):
    assert month_number(month) == number


def test_bibtex_date_from_year_and_month(tmp_path):
    entries = [('a', 'oct # "-" # nov'), ('b', '"27--30 " # jan'), ('c', '"7"'),
               ('d', '"spring"'), ('e', None)]
    text = "".join(
        f'@inproceedings{{{key},\n    title = "T {key}",\n    year = "2020",\n'
        + (f"    month = {month},\n" if month else "")
        + '    abstract = "Some words here.",\n}\n\n' for key, month in entries)
    bib = tmp_path / "x.bib"
    bib.write_text(text)
    parse.main(["--raw", str(bib), "--papers", str(tmp_path / "p.parquet"), "--rejects",
                str(tmp_path / "r.parquet")])
    papers = pd.read_parquet(tmp_path / "p.parquet")
    assert papers["date"].tolist() == ["2020-10", "2020-01", "2020-07", "2020", "2020"]
    assert pd.read_parquet(tmp_path / "r.parquet").empty  # a month that does not parse is kept
    assert pq.read_schema(tmp_path / "p.parquet").metadata[b"format"] == b"bibtex"


def test_parquet_timestamps_and_long_csv_fields(tmp_path):
    import datetime

    for when, date in [(datetime.datetime(2020, 5, 6, 7, 8), "2020-05-06"),
                       (datetime.date(2021, 1, 2), "2021-01-02")]:
        path = tmp_path / f"news-{date}.parquet"
        pq.write_table(pa.Table.from_pylist([{"doc_id": 1, "published": when, "body": TEXT}]),
                       path)
        papers, _ = read(path)
        assert (papers["key"].tolist(), papers["date"].tolist()) == (["1"], [date])
    long_text = "word " * 60_000   # 300 KB: over the csv module's default field limit
    papers, _ = read(write_csv(tmp_path / "long.csv", [
        {"doc_id": "l", "published": "2020", "headline": "", "body": long_text}]))
    assert papers["abstract"].tolist() == [long_text.strip()]


def test_a_nul_byte_in_csv_is_a_reject_not_a_traceback(tmp_path):
    path = tmp_path / "news.csv"
    good = b"".join(b"g%d,2020,fine text here\n" % i for i in range(300))  # > 4 KiB, no NUL
    path.write_bytes(b"doc_id,published,body\n" + good + b"n2,2020,bad \0 text\nn3,2021,more\n")
    papers, rejects = read(path)
    assert len(papers) + len(rejects) == 302 and "n3" in set(papers["key"])


def test_the_embedded_sample_gets_its_months_as_dates(tmp_path):
    sample = Path(__file__).resolve().parents[1] / "data" / "sample" / "anthology-sample.bib.gz"
    parse.main(["--raw", str(sample), "--papers", str(tmp_path / "p.parquet"), "--rejects",
                str(tmp_path / "r.parquet"), "--workers", "1"])
    papers = pd.read_parquet(tmp_path / "p.parquet")
    assert len(papers) == 1949 and papers.columns[:5].tolist() == [
        "key", "entry_type", "year", "month", "date"]
    with_month = papers["date"].str.len() == 7
    assert with_month.sum() == 1879   # the other 70 have no month: YYYY
    assert (papers["date"].str[:4].astype(int) == papers["year"]).all()


def test_bibtex_without_a_usable_entry_names_the_reasons(tmp_path, capsys):
    bib = tmp_path / "x.bib"
    bib.write_text('@inproceedings{a, title = "T", year = "2020"}\n'
                   '@inproceedings{b, title = "T", abstract = "A"}\n')
    with pytest.raises(SystemExit) as done:
        parse.main(["--raw", str(bib), "--papers", str(tmp_path / "p.parquet"), "--rejects",
                    str(tmp_path / "r.parquet")])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "(BibTeX) holds no usable document: 1 × missing abstract; 1 × missing year" in err
    assert not (tmp_path / "p.parquet").exists()


def test_tsv_whose_texts_hold_commas_is_still_tsv(tmp_path):
    path = tmp_path / "news.tsv"
    path.write_text("doc_id\tpublished\tbody\n"
                    + "".join(f"n{i}\t2020-01-0{i}\tone, two, three, four\n" for i in range(1, 8)))
    found = detect(path)
    assert (found.format, found.delimiter) == ("tsv", "\t")
    papers, rejects = read(path, ColumnsConfig(id="doc_id", date="published", text="body"))
    assert len(papers) == 7 and rejects.empty
