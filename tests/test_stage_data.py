"""The data stages' command lines: download -> parse -> filter -> split, on real fixture data."""

import gzip
import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pipeline.infra.io import read_parquet, write_parquet
from stages import download, filter as filter_stage, parse, split

FIXTURES = Path(__file__).parent / "fixtures"
REPO = Path(__file__).resolve().parents[1]

OPTIONS = {
    download: ["--source", "--out", "--info", "--timeout", "--id", "--date", "--title", "--text"],
    parse: ["--raw", "--papers", "--rejects", "--workers", "--id", "--date", "--title", "--text"],
    filter_stage: ["--papers", "--kept", "--dropped", "--metrics", "--counts", "--language", "--seed",
                   "--min-words", "--acl-rules", "--workers", "--permute-first", "--permute-last",
                   "--permute-seed"],
    split: ["--abstracts", "--out-dir", "--period", "--train-first", "--train-last", "--dev",
            "--test", "--min-documents", "--window", "--needs", "--rejects", "--counts-plot"],
}


@pytest.mark.parametrize("module", list(OPTIONS), ids=lambda m: m.__name__)
def test_help_explains_every_option(module, capsys):
    actions = [a for a in module.build_parser()._actions if a.dest not in ("help", "debug")]
    assert sorted(a.option_strings[0] for a in actions) == sorted(OPTIONS[module])
    assert all(a.help and len(a.help) > 10 for a in actions)
    with pytest.raises(SystemExit) as exit_:
        module.main(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert all(option in text for option in OPTIONS[module])


def test_stage_runs_as_module():
    proc = subprocess.run([sys.executable, "-m", "stages.split", "--help"], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and "history window" in proc.stdout


def test_download_parse_filter_chain(tmp_path):
    source = tmp_path / "export.bib.gz"
    bib = (FIXTURES / "real_entries.bib").read_text() + (FIXTURES / "malformed.bib").read_text()
    source.write_bytes(gzip.compress(bib.encode()))
    raw = tmp_path / "data/raw/anthology+abstracts.bib.gz"
    info = tmp_path / "reports/download.json"
    download.main(["--source", str(source), "--out", str(raw), "--info", str(info)])
    recorded = json.loads(info.read_text())
    assert recorded["size"] == source.stat().st_size and len(recorded["sha256"]) == 64

    papers, rejects = tmp_path / "corpus/papers.parquet", tmp_path / "corpus/rejects.parquet"
    parse.main(["--raw", str(raw), "--papers", str(papers), "--rejects", str(rejects),
                "--workers", "1"])
    assert len(read_parquet(papers)) == 7 + 2
    assert read_parquet(rejects)["reason"].str.startswith("truncated entry").sum() == 2

    kept, dropped = tmp_path / "corpus/abstracts.parquet", tmp_path / "corpus/dropped.parquet"
    metrics, details = tmp_path / "metrics/corpus.json", tmp_path / "reports/corpus.json"
    filter_stage.main(["--papers", str(papers), "--kept", str(kept), "--dropped", str(dropped),
                       "--metrics", str(metrics), "--counts", str(details), "--language", "en",
                       "--seed", "0", "--min-words", "10", "--workers", "1"])
    assert json.loads(metrics.read_text()) == {"papers": 9, "kept": 6, "dropped": 3}
    counts = json.loads(details.read_text())
    assert counts["papers"] == 9
    assert counts["kept"] == len(read_parquet(kept)) == 6
    assert counts["per_year"]["2021"]["dropped"] == {"language": 2, "shared_task": 1}
    assert set(read_parquet(dropped)["reason"]) == {"language:fr", "language:zh-cn",
                                                     "shared_task"}


def test_download_failure_exits_with_the_fix_and_writes_nothing(tmp_path, capsys):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/anthology+abstracts.bib.gz"
    out, info = tmp_path / "raw/a.bib.gz", tmp_path / "reports/download.json"
    with pytest.raises(SystemExit) as done:
        download.main(["--source", url, "--out", str(out), "--info", str(info), "--timeout", "5"])
    assert done.value.code == 2
    assert re.search(rf"could not download {re.escape(url)}(.|\n)*data\.source",
                     capsys.readouterr().err)
    assert not out.exists() and not info.exists()


@pytest.fixture()
def abstracts(tmp_path, sample_bib) -> Path:
    """The real sample's parsed papers (2015-2021) as an abstracts table."""
    from pipeline.corpus.anthology import parse_file

    path = tmp_path / "abstracts.parquet"
    write_parquet(parse_file(sample_bib).papers, path)
    return path


def split_args(abstracts: Path, out: Path, **periods: int) -> list[str]:
    periods = {"train_first": 2017, "train_last": 2019, "dev": 2020, "test": 2021,
               "window": 2} | periods
    return ["--abstracts", str(abstracts), "--out-dir", str(out / "splits"),
            "--train-first", str(periods["train_first"]),
            "--train-last", str(periods["train_last"]),
            "--dev", str(periods["dev"]), "--test", str(periods["test"]),
            "--window", str(periods["window"]), "--rejects", str(out / "period_rejects.parquet"),
            "--counts-plot", str(out / "plots/counts.csv")]


def test_split_stage_writes_splits_and_plot(abstracts, tmp_path):
    split.main(split_args(abstracts, tmp_path))
    frames = {n: read_parquet(tmp_path / "splits" / f"{n}.parquet") for n in ("train", "dev",
                                                                               "test")}
    assert set(frames["train"]["period"]) == {"2017", "2018", "2019"}
    assert list(frames["dev"].columns) == ["key", "period", "title", "abstract"]
    assert len(frames["train"]) == 900 and len(frames["dev"]) == len(frames["test"]) == 300
    plot = pd.read_csv(tmp_path / "plots/counts.csv")
    assert list(plot.columns) == ["period", "abstracts", "split"]
    assert dict(zip(plot["period"], plot["split"])) == {
        2015: "history", 2016: "history", 2017: "train", 2018: "train", 2019: "train",
        2020: "dev", 2021: "test"}
    assert plot["abstracts"].sum() == 1949


def test_split_stage_names_a_missing_history_year(abstracts, tmp_path, capsys):
    # train from 2016 with a 2-year window needs 2014, which the sample does not have
    with pytest.raises(SystemExit) as done:
        split.main(split_args(abstracts, tmp_path, train_first=2016))
    assert done.value.code == 2
    assert "1 year the run reads has no documents: 2014 (history)" in capsys.readouterr().err
    assert not (tmp_path / "splits").exists()
