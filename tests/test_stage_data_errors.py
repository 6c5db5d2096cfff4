"""The data stages end in one message, not a traceback, on hand-made inputs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.infra.errors import UserError
from pipeline.infra.io import read_parquet, write_parquet
from stages import download, filter as filter_stage, parse, split

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parents[1]


def fails_with(capsys, main, argv: list[str]) -> str:
    """Run a stage expecting the user-error exit (2); return its stderr."""
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "fix:" in err
    return err


@pytest.mark.parametrize("name", ["empty.bib", "empty.bib.gz", "not_bibtex.txt.gz"])
def test_download_and_parse_stop_on_a_file_without_entries(name, tmp_path, capsys):
    source = str(DATA / name)
    err = fails_with(capsys, download.main, ["--source", source, "--out", str(tmp_path / "raw.gz"),
                                             "--info", str(tmp_path / "info.json")])
    assert f"{source} is not a corpus file: found " in err
    err = fails_with(capsys, parse.main, ["--raw", source, "--papers", str(tmp_path / "p.parquet"),
                                          "--rejects", str(tmp_path / "r.parquet")])
    assert f"{source} is not a corpus file: found " in err
    assert list(tmp_path.iterdir()) == []


def test_parse_stage_writes_a_non_utf8_entry_as_a_reject(tmp_path):
    papers, rejects = tmp_path / "papers.parquet", tmp_path / "rejects.parquet"
    parse.main(["--raw", str(DATA / "latin1_entry.bib"), "--papers", str(papers),
                "--rejects", str(rejects), "--workers", "1"])
    assert read_parquet(papers)["key"].tolist() == ["utf8-before-2020", "utf8-after-2020"]
    assert read_parquet(rejects)["reason"].tolist() == ["not valid UTF-8: byte 0xe9 at line 10"]


def test_parse_stage_output_folder_that_cannot_be_written(tmp_path, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the output folder should be")
    err = fails_with(capsys, parse.main, [
        "--raw", str(DATA / "latin1_entry.bib"), "--papers", str(blocker / "papers.parquet"),
        "--rejects", str(tmp_path / "rejects.parquet")])
    assert "error (stages.parse)" in err and str(blocker) in err


def test_debug_shows_the_traceback(tmp_path):
    argv = ["--raw", str(DATA / "empty.bib"), "--papers", str(tmp_path / "p.parquet"),
            "--rejects", str(tmp_path / "r.parquet")]
    with pytest.raises(UserError, match="is not a corpus file: found an empty file"):
        parse.main(argv + ["--debug"])
    proc = subprocess.run([sys.executable, "-m", "stages.parse", *argv], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "is not a corpus file: found an empty file" in proc.stderr


@pytest.fixture()
def papers(tmp_path) -> Path:
    path = tmp_path / "papers.parquet"
    write_parquet(parse.parse_file(DATA / "fuzz_base.bib").papers, path)
    return path


def filter_args(papers: Path, out: Path) -> list[str]:
    return ["--papers", str(papers), "--kept", str(out / "kept.parquet"), "--dropped",
            str(out / "dropped.parquet"), "--metrics", str(out / "corpus.json"),
            "--counts", str(out / "counts.json")]


def test_filter_workers_come_from_the_runtime_settings(papers, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FUTURELM_WORKERS", "0")  # read from the runtime settings, not a param
    err = fails_with(capsys, filter_stage.main, filter_args(papers, tmp_path))
    assert "workers must be at least 1" in err and "FUTURELM_WORKERS" in err
    monkeypatch.setenv("FUTURELM_WORKERS", "1")
    filter_stage.main(filter_args(papers, tmp_path))
    assert len(read_parquet(tmp_path / "kept.parquet")) == 6
    filter_stage.main(filter_args(papers, tmp_path) + ["--workers", "2"])  # the flag wins


def test_split_stage_refuses_inverted_years(papers, tmp_path, capsys):
    err = fails_with(capsys, split.main, [
        "--abstracts", str(papers), "--out-dir", str(tmp_path / "splits"), "--train-first",
        "2021", "--train-last", "2019", "--dev", "2020", "--test", "2021",
        "--window", "1", "--rejects", str(tmp_path / "rejects.parquet"),
        "--counts-plot", str(tmp_path / "counts.csv")])
    assert "train_first <= train_last < dev < test" in err
    assert "params.yaml: split" in err
    assert not (tmp_path / "splits").exists()


def test_split_stage_lists_every_missing_year(papers, tmp_path, capsys):
    # fuzz_base.bib has 2019-2021; training 2019 with a 2-year window needs 2017 and 2018
    err = fails_with(capsys, split.main, [
        "--abstracts", str(papers), "--out-dir", str(tmp_path / "splits"), "--train-first",
        "2019", "--train-last", "2019", "--dev", "2020", "--test", "2021",
        "--window", "2", "--rejects", str(tmp_path / "rejects.parquet"),
        "--counts-plot", str(tmp_path / "counts.csv")])
    assert "2 years the run reads have no documents: 2017 (history), 2018 (history)" in err
