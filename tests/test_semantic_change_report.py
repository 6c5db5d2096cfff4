"""Semantic-change report: targets, scores table, examples, truth correlations,
and the `semantic_change` stage end to end on real feature files and a real BPE tokenizer."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pipeline.features.embeddings import write_period as write_embeddings
from pipeline.features.frequencies import write_period as write_frequencies
from pipeline.features.tokenizer import train_scratch_tokenizer
from pipeline.features.words import token_texts
from pipeline.infra.errors import UserError
from pipeline.infra.io import read_parquet, write_parquet
from pipeline.models.hub import MINILM
from pipeline.reports.semantic_change_report import benchmark_lines, example_sentence
from pipeline.semantic.change import scores_frame
from pipeline.semantic.methods.interface import MethodResult
from pipeline.semantic.scores import agreement_matrix, change_metrics, truth_correlations
from pipeline.semantic.targets import Targets, choose_targets, frequent_targets, read_targets
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
    words = ["data", "model", "parser"]
    # the contextual method has counts of its own; frequency none: the groups' counts by token
    contextual = MethodResult(np.array([np.nan, 0.2, 0.5]), np.array([0, 3, 4]),
                              np.array([0, 5, 6]))
    frequency = MethodResult(np.array([np.nan, 0.3, 0.3]))
    frame = scores_frame(targets, words, {"contextual": contextual, "frequency": frequency},
                         (np.arange(8) * 10, np.arange(8) * 20))
    rows = frame[["method", "word", "token_id", "score", "rank", "first_count",
                  "last_count"]].values.tolist()
    assert rows == [["contextual", "parser", 5, 0.5, 1, 4, 6],
                    ["contextual", "model", 1, 0.2, 2, 3, 5],
                    # a tie is ranked by word; data's NaN is not a score
                    ["frequency", "model", 1, 0.3, 1, 10, 20],
                    ["frequency", "parser", 5, 0.3, 2, 50, 100]]
    assert change_metrics(frame, {}) == {"agreement": None}   # 2 targets: no rank correlation
    # no counts anywhere: -1
    alone = scores_frame(targets, words, {"frequency": frequency})
    assert alone["first_count"].tolist() == [-1, -1]


def test_the_agreement_matrix_and_truth_correlations():
    frame = pd.DataFrame({"method": ["a"] * 4 + ["b"] * 4 + ["c"] * 2,
                          "word": ["w", "x", "y", "z"] * 2 + ["w", "x"],
                          "score": [1, 2, 3, 4, 4, 3, 1, 2, 5, 6]})
    m = agreement_matrix(frame)
    assert list(m.index) == ["a", "b", "c"] and m.loc["a", "a"] == 1.0
    assert m.loc["a", "b"] == m.loc["b", "a"] == pytest.approx(
        stats.spearmanr([1, 2, 3, 4], [4, 3, 1, 2])[0])
    assert np.isnan(m.loc["a", "c"])                      # 2 shared words: no correlation
    # every listed method is in the correlations, one without a scored word with the reason
    out = truth_correlations(frame, {"w": 0.1, "x": 0.5, "y": 0.2, "z": 0.9}, ["b", "a", "d"])
    assert list(out) == ["b", "a", "d", "c"] and out["d"] == {"n": 0, "error": "no target scored"}
    assert out["a"]["spearman"] == pytest.approx(stats.spearmanr([1, 2, 3, 4], [.1, .5, .2, .9])[0])


def test_benchmark_section():
    correlated = truth_correlations(pd.DataFrame({"method": "sgns", "word": list("abcd"),
                                                  "score": [0.1, 0.3, 0.2, 0.4]}),
                                    dict(zip("abcd", [0.0, 0.5, 0.2, 0.9])))
    text = "\n".join(benchmark_lines({"first": ["2017"], "last": ["2021"],
                                      "correlations": correlated}, "semantic_benchmark.md"))
    assert "pseudo-words of known graded change, 2017 → 2021" in text
    assert "[the benchmark's report](semantic_benchmark.md)" in text
    assert f"| sgns | 4 | {correlated['sgns']['spearman']:.3f} [" in text
    assert "\n\n\n" not in text and "## Against" not in text
    # the table in the methods' order, whatever the JSON's key order
    both = {"sgns": correlated["sgns"], "contextual": correlated["sgns"]}
    table = "\n".join(benchmark_lines({"correlations": both}, "b.md"))
    assert table.index("| contextual |") < table.index("| sgns |")
    assert "SemEval-2020 Task 1 targets of `data/semeval/english`" in "\n".join(benchmark_lines(
        {"semeval": "data/semeval/english", "correlations": correlated}, "b.md"))
    skipped = "\n".join(benchmark_lines({"skipped": "No benchmark: too few words."}, "b.md"))
    assert "The benchmark was skipped ([its report](b.md)): No benchmark: too few words." in skipped


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
    out = truth_correlations(frame, truth)["contextual"]
    assert out["n"] == 6
    assert out["spearman"] == pytest.approx(stats.spearmanr(scores, list(truth.values()))[0])
    assert out["pearson"] == pytest.approx(stats.pearsonr(scores, list(truth.values()))[0])
    assert out["spearman_ci"][0] <= out["spearman"] <= out["spearman_ci"][1]
    two = truth_correlations(frame.head(2), truth)["contextual"]
    assert two["n"] == 2 and "at least 4" in two["error"]


def _write_features(root, tok, vocab):
    rng = np.random.default_rng(0)
    for period, scale in (("2017", 0.0), ("2019", 1.0)):
        counts = np.full(vocab, 30)
        write_frequencies(root / "freq" / f"{period}.parquet", period, counts)
        vectors = rng.normal(size=(vocab, 8)) * scale + np.arange(8)   # 2017: all alike
        write_embeddings(root / "emb" / f"{period}.safetensors", period, np.arange(vocab),
                         counts, vectors, encoder="test", layer=1, vocab_size=vocab)


LEARNED = ["--encoder", MINILM, "--layer", "-1", "--max-length", "64", "--batch-size", "8",
           "--temporal-steps", "2", "--temporal-hidden", "32",
           "--temporal-max-length", "32", "--sgns-dim", "8", "--sgns-epochs", "1"]


@pytest.mark.slow
def test_stage_end_to_end(tmp_path):
    corpus = ["Neural parsers translate text quickly.", "We translate text with neural parsers."]
    tok = train_scratch_tokenizer(corpus * 30, vocab_size=400)
    tok.save_pretrained(tmp_path / "tok")
    vocab = len(tok)
    _write_features(tmp_path, tok, vocab)
    # each group's words often enough for sgns (min_count 5) and the temporal MLM
    write_parquet(pd.DataFrame({"key": [f"k{i}" for i in range(13)],
                                "year": [2017] * 6 + [2019] * 7,
                                "abstract": [corpus[0]] * 6 + [corpus[1]] * 6 + ["Text is text."]}),
                  tmp_path / "abstracts.parquet")
    (tmp_path / "stop.txt").write_text("1\twith\t10\n", encoding="utf-8")
    words = [t[1:] for t in token_texts(tok, vocab) if t.startswith(" ") and t[1:].isalpha()]
    truth = tmp_path / "targets.csv"
    # words both groups' texts hold: with a targets file the contextual method encodes them
    both = ["neural", "parsers", "translate", "text"]
    assert set(both) <= set(words)
    pd.DataFrame({"word": [*both, "unknownword"],
                  "truth": [0.1, 0.9, 0.4, 0.3, 0.0]}).to_csv(truth, index=False)
    bench = tmp_path / "reports" / "semantic_benchmark.json"
    bench.parent.mkdir()
    bench.write_text(json.dumps({"first": ["2017"], "last": ["2019"], "correlations": {
        "temporal-attention": {"n": 2, "error": "needs at least 3 pairs"}}}), encoding="utf-8")
    out = tmp_path / "out"

    def run(*extra):
        cli.main(["--first", "2017", "--last", "2019", "--embeddings", str(tmp_path / "emb"),
                  "--frequencies", str(tmp_path / "freq"), "--tokenizer", str(tmp_path / "tok"),
                  "--stopwords", str(tmp_path / "stop.txt"), "--abstracts",
                  str(tmp_path / "abstracts.parquet"), "--n-targets", "50", "--min-count", "5",
                  "--top", "3", "--seed", "0", "--scores", str(out / "scores.parquet"),
                  "--out", str(out / "report.md"), "--metrics", str(out / "m.json"), *LEARNED,
                  *extra])

    run("--benchmark", str(bench))
    # every count is equal, so the frequency scores are constant: no agreement to compute
    assert json.loads((out / "m.json").read_text()) == {"agreement": None}
    scores = read_parquet(out / "scores.parquet")
    n_words = len([w for w in words if len(w) >= 3 and w != "with"])
    assert set(scores["method"]) == {"contextual", "apd", "apd-corrected", "temporal-attention",
                                     "time-token", "sgns", "frequency"}
    assert (scores.groupby("method").size()[["contextual", "frequency"]] == n_words).all()
    # the learned methods score the words both groups' texts hold (neural, parsers, ...)
    for method in ("temporal-attention", "time-token", "sgns"):
        scored = set(scores.loc[scores["method"] == method, "word"])
        assert {"translate", "text"} <= scored and "quickly" not in scored, (method, scored)
        assert (scores.loc[scores["method"] == method, "score"] > 0).all()
    # the apd methods score the words both groups' texts hold, from their encoded usages
    apd_words = set(scores.loc[scores["method"] == "apd", "word"])
    assert {"translate", "text"} <= apd_words and "quickly" not in apd_words, apd_words
    assert apd_words == set(scores.loc[scores["method"] == "apd-corrected", "word"])
    # every count is equal, so no word changed in frequency; every vector moved
    assert (scores.loc[scores["method"] == "frequency", "score"] == 0).all()
    assert (scores.loc[scores["method"] == "contextual", "score"] > 0).all()
    text = (out / "report.md").read_text()
    assert "No graded truth" in text and "## How the methods agree" in text
    assert ("| method | scored | contextual | apd | apd-corrected | temporal-attention | "
            "time-token | sgns | frequency |" in text)
    for method in ("temporal-attention", "time-token", "sgns"):
        assert f"## {method}: " in text
    assert "## The methods on words of known change" in text
    assert "[the benchmark's report](../reports/semantic_benchmark.md)" in text
    assert "| temporal-attention | 2 | needs at least 3 pairs |" in text

    run("--targets", str(truth))
    m = json.loads((out / "m.json").read_text())
    assert "contextual" in m["spearman"] and "frequency" not in m["spearman"]   # constant
    text = (out / "report.md").read_text()
    assert "5 words, 4 are one LM token and scored, 1 are not" in text
    assert "## Against the graded truth" in text and "unknownword" in text
    truth_table = text.split("## Against the graded truth")[1].split("\n\n")[1]
    for method in ("contextual", "apd", "apd-corrected", "temporal-attention", "time-token",
                   "sgns", "frequency"):
        assert f"| {method} | " in truth_table          # every method, scored or why not
    # the frequency scores are all 0: constant, so no correlation, said in words
    assert "constant" in text
    # no --benchmark: the section says where the benchmark's report is made
    pointer = text.split("## The methods on words of known change")[1]
    assert "`dvc repro semantic_benchmark` writes [its report](" in pointer
    assert pointer.strip().endswith("reports/semantic_benchmark.md).")

    run("--min-count", "1000")          # a corpus too small for the default targets
    assert json.loads((out / "m.json").read_text()) == {"agreement": None}
    assert read_parquet(out / "scores.parquet").empty
    assert "No word qualified" in (out / "report.md").read_text()
    (tmp_path / "none.txt").write_text("unknownword\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        run("--targets", str(tmp_path / "none.txt"))
