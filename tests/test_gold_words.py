"""The gold abstracts' content words computed once (stage `gold_words`) and read by the score
stage: the same CM as computing them in the score stage, and a stale file is refused."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from pipeline.evaluation.content import content_words, load_stopwords
from pipeline.evaluation.gold_words import read_gold_words
from pipeline.evaluation.meteor import content_meteor
from pipeline.infra.errors import UserError
from pipeline.infra.io import read_json, read_parquet, write_parquet
from stages import gold_words, score
from tests.conftest import stage_help
from tests.test_stage_score import STOPWORDS, args, project, run_failing  # noqa: F401 (fixture)


def run_gold_words(root: Path, out: Path) -> None:
    gold_words.main(["--dev", str(root / "dev.parquet"), "--test", str(root / "test.parquet"),
                     "--stopwords", str(STOPWORDS), "--out", str(out)])


def test_one_file_per_split_with_each_abstracts_content_words(project, tmp_path):
    out = tmp_path / "gold_words"
    run_gold_words(project, out)
    assert sorted(p.name for p in out.iterdir()) == ["2020.parquet", "2021.parquet"]
    stopwords = load_stopwords(STOPWORDS)
    for split, year in (("dev", "2020"), ("test", "2021")):
        abstracts = read_parquet(project / f"{split}.parquet")
        table = read_parquet(out / f"{year}.parquet")
        assert table["key"].tolist() == abstracts["key"].tolist()
        assert [list(w) for w in table["words"]] == [content_words(t, stopwords)
                                                     for t in abstracts["abstract"]]
        assert sum(map(len, table["words"])) > 0


def test_content_meteor_with_precomputed_gold_words_is_the_same(project):
    stopwords = load_stopwords(STOPWORDS)
    gold = read_parquet(project / "test.parquet")["abstract"].tolist()
    generated = [gold[0][:200], "neural machine translation of low resource languages",
                 read_parquet(project / "dev.parquet")["abstract"].iloc[3]]
    words = [content_words(t, stopwords) for t in gold]
    assert content_meteor(generated, gold, stopwords, words) == content_meteor(generated, gold,
                                                                               stopwords)
    with pytest.raises(ValueError, match="2 lists of gold content words for 25"):
        content_meteor(generated, gold, stopwords, words[:2])


def test_a_file_of_other_abstracts_is_refused_and_a_missing_one_is_none(project, tmp_path):
    out = tmp_path / "gold_words"
    run_gold_words(project, out)
    keys = read_parquet(project / "test.parquet")["key"].tolist()
    assert len(read_gold_words(out, "2021", keys)) == 25
    with pytest.raises(UserError, match="rerun `dvc repro gold_words`"):
        read_gold_words(out, "2021", keys[::-1])
    assert read_gold_words(out, "2019", ["any"]) is None


@pytest.mark.slow
def test_the_score_stage_gives_the_same_scores_reading_them(project, tmp_path, capsys):
    words = tmp_path / "gold_words"
    run_gold_words(project, words)
    computed, read = tmp_path / "computed", tmp_path / "read"
    score.main(args(project, computed))
    score.main(args(project, read, **{"gold-words": words}))
    assert read_json(read / "metrics.json") == read_json(computed / "metrics.json")
    for year in ("2020", "2021"):
        pd.testing.assert_frame_equal(read_parquet(read / f"generations_{year}.parquet"),
                                      read_parquet(computed / f"generations_{year}.parquet"))
    # a file whose abstracts are not the split's stops the stage with the fix
    table = read_parquet(words / "2021.parquet")
    write_parquet(table.iloc[::-1].reset_index(drop=True), words / "2021.parquet")
    err = run_failing(args(project, tmp_path / "stale", **{"gold-words": words}), capsys)
    assert "2021.parquet" in err and "rerun `dvc repro gold_words`" in err
    assert not (tmp_path / "stale").exists()


def test_help_explains_every_option(capsys):
    text = stage_help(capsys, gold_words.main)
    for option in ("--dev", "--test", "--stopwords", "--out"):
        assert option in text
