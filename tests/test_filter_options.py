"""Corpus-specific filters are options: filter.language null, filter.acl_rules.

Also checks the route a ``null`` takes: DVC writes a YAML null as ``None`` in a stage command
(``${filter.language}``, and ``--title None`` when ``data.columns`` unpacks), so the generated
commands are resolved by DVC itself here and parsed by the stages' own parsers.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pandas as pd
import pytest
import yaml

from pipeline.corpus import language as language_module
from pipeline.corpus.language import filter_papers
from pipeline.infra.io import read_parquet, write_parquet
from stages import download, filter as filter_stage, parse

REPO = Path(__file__).resolve().parents[1]
LONG = "we study how the vocabulary of a research field moves over the years and what follows"
FRENCH = ("nous étudions comment le vocabulaire d'un domaine de recherche évolue au fil des "
          "années et ce qui en découle pour les modèles de langue")


def papers(with_url: bool = True) -> pd.DataFrame:
    frame = pd.DataFrame({
        "key": ["a", "b", "c", "d"], "year": [2020] * 4,
        "date": ["2020-01", "2020-02", "2020", "2020-03"],
        "title": ["A study", "Notre étude", "Findings of the WMT shared task", "Short"],
        "abstract": [LONG, FRENCH, LONG + " in translation", "too few words"]})
    if with_url:
        frame["url"] = [None, None, "https://aclanthology.org/W20-1.pdf", None]
    return frame


def test_language_null_keeps_every_language_without_running_langdetect(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("langdetect ran although filter.language is null")
    monkeypatch.setattr(language_module, "detect_languages", refuse)
    result = filter_papers(papers(), language=None, progress=False)
    assert result.kept["key"].tolist() == ["a", "b"]
    assert result.dropped["reason"].tolist() == ["shared_task", "too_short"]


def test_acl_rules_off_keeps_shared_task_papers():
    on = filter_papers(papers(), language="en", progress=False)
    off = filter_papers(papers(with_url=False), language="en", progress=False, acl_rules=False)
    assert dict(zip(on.dropped["key"], on.dropped["reason"])) == {
        "b": "language:fr", "c": "shared_task", "d": "too_short"}
    assert off.kept["key"].tolist() == ["a", "c"]
    assert dict(zip(off.dropped["key"], off.dropped["reason"])) == {
        "b": "language:fr", "d": "too_short"}


@pytest.mark.parametrize("source_format, rules, kept", [
    ("bibtex", "auto", ["a", "b"]), ("jsonl", "auto", ["a", "b", "c"]),
    ("jsonl", "true", ["a", "b"]), ("bibtex", "false", ["a", "b", "c"])])
def test_acl_rules_auto_follows_the_format_parse_recorded(source_format, rules, kept, tmp_path,
                                                          capsys):
    path = tmp_path / "papers.parquet"
    write_parquet(papers(), path, metadata={"format": source_format})
    filter_stage.main(["--papers", str(path), "--kept", str(tmp_path / "k.parquet"),
                       "--dropped", str(tmp_path / "d.parquet"), "--metrics",
                       str(tmp_path / "m.json"), "--counts", str(tmp_path / "c.json"),
                       "--language", "None", "--acl-rules", rules, "--workers", "1"])
    assert read_parquet(tmp_path / "k.parquet")["key"].tolist() == kept
    assert "language: any" in capsys.readouterr().out
    dropped = read_parquet(tmp_path / "d.parquet")
    assert "reason" in dropped.columns and "too_short" in dropped["reason"].tolist()


def resolved_commands(tmp_path: Path, params: dict) -> dict[str, list[str]]:
    """The download, parse and filter commands of the committed dvc.yaml, as DVC resolves them
    with ``params`` (the project's .dvc/config: parsing.bool, parsing.list)."""
    from dvc.repo import Repo

    Repo.init(str(tmp_path), no_scm=True)
    config = (REPO / ".dvc" / "config").read_text()
    (tmp_path / ".dvc" / "config").write_text(config.replace("[core]\n", "[core]\n    no_scm = true\n"))
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    names = ("download", "parse", "filter")
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump(
        {"stages": {n: {"cmd": stages[n]["cmd"]} for n in names}}))
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    return {s.name: shlex.split(s.cmd)[3:] for s in Repo(str(tmp_path)).index.stages}


def test_nulls_and_false_reach_the_stages_through_dvc(tmp_path):
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["data"]["columns"] = {"id": "doc_id", "date": "published", "title": None,
                                 "text": "body"}
    params["filter"].update(language=None, acl_rules=False, permute_first=2003,
                            permute_last=2019)
    argv = resolved_commands(tmp_path, params)
    args = filter_stage.build_parser().parse_args(argv["filter"])
    assert (args.language, args.acl_rules) == (None, "false")
    assert (args.permute_first, args.permute_last, args.permute_seed) == (2003, 2019, 0)
    for stage in (download, parse):
        args = stage.build_parser().parse_args(argv[stage.__name__.split(".")[-1]])
        assert (args.id, args.date, args.title, args.text) == ("doc_id", "published", None,
                                                               "body")


def test_the_defaults_reach_the_stages_through_dvc(tmp_path):
    argv = resolved_commands(tmp_path, yaml.safe_load((REPO / "params.yaml").read_text()))
    args = filter_stage.build_parser().parse_args(argv["filter"])
    assert (args.language, args.acl_rules, args.min_words) == ("en", "auto", 10)
    assert (args.permute_first, args.permute_last) == (None, None)   # the real dates
    args = parse.build_parser().parse_args(argv["parse"])
    assert (args.id, args.date, args.title, args.text) == ("id", "date", "title", "text")


def test_filter_counts_still_say_why(tmp_path):
    path = tmp_path / "papers.parquet"
    write_parquet(papers(), path, metadata={"format": "csv"})
    filter_stage.main(["--papers", str(path), "--kept", str(tmp_path / "k.parquet"),
                       "--dropped", str(tmp_path / "d.parquet"), "--metrics",
                       str(tmp_path / "m.json"), "--counts", str(tmp_path / "c.json"),
                       "--language", "en", "--workers", "1"])
    counts = json.loads((tmp_path / "c.json").read_text())
    assert counts["dropped"] == {"language": 1, "too_short": 1}
