"""Semantic-change report (issue 19 §4): targets, scores table, examples, truth correlations,
and the `semantic_change` stage end to end on real feature files and a real BPE tokenizer."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pipeline.evaluation.semantic_scores import ChangeScores
from pipeline.features.embeddings import write_period as write_embeddings
from pipeline.features.frequencies import write_period as write_frequencies
from pipeline.features.tokenizer import train_scratch_tokenizer
from pipeline.features.words import token_texts
from pipeline.infra.errors import UserError
from pipeline.infra.io import read_parquet, write_parquet
from pipeline.reports.semantic_change import (Targets, choose_targets, example_sentence,
                                              frequent_targets, metrics, read_targets,
                                              scores_frame, truth_correlations)
from stages import semantic_change as cli

# ids: 0 eos, 1 " model", 2 " the" (stopword), 3 "ing", 4 " BERT2" (not alphabetic),
# 5 " parser", 6 " of" (too short), 7 " data"
TEXTS = ["<|endoftext|>", " model", " the", "ing", " BERT2", " parser", " of", " data"]


def test_read_targets(tmp_path):
    txt = tmp_path / "t.txt"
    txt.write_text("# targets\nmodel\n\n  parser \n", encoding="utf-8")
    assert read_targets(txt) == (["model", "parser"], {})
    csv = tmp_path / "t.csv"
    csv.write_text("word,truth\nmodel,0.5\nparser,0.1\n", encoding="utf-8")
    assert read_targets(csv) == (["model", "parser"], {"model": 0.5, "parser": 0.1})
    (tmp_path / "bad.csv").write_text("term\nmodel\n", encoding="utf-8")
    with pytest.raises(UserError, match="no `word` column"):
        read_targets(tmp_path / "bad.csv")
    (tmp_path / "nan.csv").write_text("word,truth\nmodel,high\n", encoding="utf-8")
    with pytest.raises(UserError, match="not a number"):
        read_targets(tmp_path / "nan.csv")
    with pytest.raises(UserError, match="does not exist"):
        read_targets(tmp_path / "missing.txt")


def test_frequent_targets_by_hand():
    first = np.array([99, 30, 99, 99, 99, 25, 99, 19])
    last = np.array([99, 40, 99, 99, 99, 50, 99, 80])
    # " the" stopword, "ing" no word start, " BERT2" not alphabetic, " of" too short,
    # " data" under min_count in the first group; parser (75) before model (70)
    assert frequent_targets(TEXTS, first, last, frozenset({"the"}), 5, 20) == ["parser", "model"]
    assert frequent_targets(TEXTS, first, last, frozenset({"the"}), 1, 20) == ["parser"]
    targets = choose_targets(TEXTS, first, last, frozenset({"the"}), 5, 20, None)
    assert targets.ids == {"parser": 5, "model": 1} and not targets.rejected


def test_scores_frame_ranks_and_skips():
    targets = Targets(["model", "parser", "data", "nope"], {"model": 1, "parser": 5, "data": 7},
                      {}, {"nope": "not a single word-starting token"}, "test")
    contextual = ChangeScores(np.array([1, 5]), np.array([0.2, 0.5]), np.array([3, 4]),
                              np.array([5, 6]))
    frequency = ChangeScores(np.arange(8), np.array([0, 0.3, 0, 0, 0, 0.3, 0, np.nan]),
                             np.arange(8) * 10, np.arange(8) * 20)
    frame = scores_frame(targets, {"contextual": contextual, "frequency": frequency})
    rows = frame[["method", "word", "token_id", "score", "rank", "first_count",
                  "last_count"]].values.tolist()
    assert rows == [["contextual", "parser", 5, 0.5, 1, 4, 6],
                    ["contextual", "model", 1, 0.2, 2, 3, 5],
                    # a tie is ranked by word; data's NaN is not a score
                    ["frequency", "model", 1, 0.3, 1, 10, 20],
                    ["frequency", "parser", 5, 0.3, 2, 50, 100]]
    assert metrics(frame, {}) == {"agreement": None}     # 2 targets: no rank correlation


def test_example_sentence():
    assert example_sentence(["We use pre-trained models. Then x."], "pre") == \
        "We use pre-trained models."
    assert example_sentence(["Apre x. The prefix."], "pre") is None
    long = "a " * 150 + "networks are " + "b " * 150 + "."
    cut = example_sentence([long], "networks", width=60)
    assert "networks" in cut and cut.startswith("…") and cut.endswith("…")
    assert len(cut) == 62


def test_truth_correlations_match_scipy():
    words = [f"w{i}" for i in range(6)]
    scores = [0.1, 0.4, 0.2, 0.8, 0.5, 0.3]
    truth = {w: t for w, t in zip(words, [0.0, 0.5, 0.1, 0.9, 0.3, 0.4])}
    frame = pd.DataFrame({"method": "contextual", "word": words, "score": scores})
    out = truth_correlations(frame, truth, seed=1)["contextual"]
    assert out["n"] == 6
    assert out["spearman"] == pytest.approx(stats.spearmanr(scores, list(truth.values()))[0])
    assert out["pearson"] == pytest.approx(stats.pearsonr(scores, list(truth.values()))[0])
    assert out["spearman_ci"][0] <= out["spearman"] <= out["spearman_ci"][1]
    two = truth_correlations(frame.head(2), truth, seed=1)["contextual"]
    assert two["n"] == 2 and "at least 3" in two["error"]


def _write_features(root, tok, vocab):
    rng = np.random.default_rng(0)
    for period, scale in (("2017", 0.0), ("2019", 1.0)):
        counts = np.full(vocab, 30)
        write_frequencies(root / "freq" / f"{period}.parquet", period, counts)
        vectors = rng.normal(size=(vocab, 8)) * scale + np.arange(8)   # 2017: all alike
        write_embeddings(root / "emb" / f"{period}.safetensors", period, np.arange(vocab),
                         counts, vectors, encoder="test", layer=1, vocab_size=vocab)


def test_stage_end_to_end(tmp_path):
    corpus = ["Neural parsers translate text quickly.", "We translate text with neural parsers."]
    tok = train_scratch_tokenizer(corpus * 30, vocab_size=400)
    tok.save_pretrained(tmp_path / "tok")
    vocab = len(tok)
    _write_features(tmp_path, tok, vocab)
    write_parquet(pd.DataFrame({"key": ["a", "b", "c"], "year": [2017, 2019, 2019],
                                "abstract": [corpus[0], corpus[1], "Text is text."]}),
                  tmp_path / "abstracts.parquet")
    (tmp_path / "stop.txt").write_text("1\twith\t10\n", encoding="utf-8")
    words = [t[1:] for t in token_texts(tok, vocab) if t.startswith(" ") and t[1:].isalpha()]
    truth = tmp_path / "targets.csv"
    pd.DataFrame({"word": [*words[:4], "unknownword"],
                  "truth": [0.1, 0.9, 0.4, 0.3, 0.0]}).to_csv(truth, index=False)
    out = tmp_path / "out"

    def run(*extra):
        cli.main(["--first", "2017", "--last", "2019", "--embeddings", str(tmp_path / "emb"),
                  "--frequencies", str(tmp_path / "freq"), "--tokenizer", str(tmp_path / "tok"),
                  "--stopwords", str(tmp_path / "stop.txt"), "--abstracts",
                  str(tmp_path / "abstracts.parquet"), "--n-targets", "50", "--min-count", "5",
                  "--top", "3", "--seed", "0", "--scores", str(out / "scores.parquet"),
                  "--out", str(out / "report.md"), "--metrics", str(out / "m.json"), *extra])

    run()
    # every count is equal, so the frequency scores are constant: no agreement to compute
    assert json.loads((out / "m.json").read_text()) == {"agreement": None}
    scores = read_parquet(out / "scores.parquet")
    n_words = len([w for w in words if len(w) >= 3 and w != "with"])
    assert (scores.groupby("method").size() == n_words).all()
    # every count is equal, so no word changed in frequency; every vector moved
    assert (scores.loc[scores["method"] == "frequency", "score"] == 0).all()
    assert (scores.loc[scores["method"] == "contextual", "score"] > 0).all()
    assert "No graded truth" in (out / "report.md").read_text()

    run("--targets", str(truth))
    m = json.loads((out / "m.json").read_text())
    assert set(m["spearman"]) == {"contextual"}          # frequency: constant, no correlation
    text = (out / "report.md").read_text()
    assert "5 words, 4 are one LM token and scored, 1 are not" in text
    assert "## Against the graded truth" in text and "unknownword" in text
    # the frequency scores are all 0: constant, so no correlation, said in words
    assert "constant" in text

    run("--min-count", "1000")          # a corpus too small for the default targets
    assert json.loads((out / "m.json").read_text()) == {"agreement": None}
    assert read_parquet(out / "scores.parquet").empty
    assert "No word qualified" in (out / "report.md").read_text()
    (tmp_path / "none.txt").write_text("unknownword\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        run("--targets", str(tmp_path / "none.txt"))
