"""The pseudo-word benchmark, scored: occurrence vectors from the real packaged
MiniLM encoder against a direct computation, the two change scores by hand, and the stage end to
end on the embedded sample (and on a corpus too small for it)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from pipeline.corpus.anthology import parse_file
from pipeline.corpus.pseudowords import word_pattern
from pipeline.infra.errors import UserError
from pipeline.infra.io import write_parquet
from pipeline.infra.schema.params import (ChangeMethodsConfig, SemanticBenchmarkConfig,
                                    SemanticChangeConfig)
from pipeline.models.hub import MINILM, load_encoder, load_tokenizer_for
from pipeline.semantic.benchmark import benchmark_inputs, run_benchmark
from pipeline.semantic.methods import contextual
from pipeline.semantic.methods.contextual import occurrence_change
from pipeline.semantic.methods.interface import EncoderSettings
from pipeline.semantic.methods.frequency import text_frequency_change
from pipeline.semantic.word_vectors import occurrence_sums, occurrence_vectors, target_sentences
from stages import semantic_benchmark as cli

CPU = torch.device("cpu")


def test_sentences_and_pattern():
    pattern = word_pattern(["psw001", "model"])
    texts = ["A Model here. Nothing. A psw001-like word. The psw001 works!", "model-based"]
    assert target_sentences(texts, pattern) == ["A Model here.", "The psw001 works!"]


@pytest.mark.slow
def test_occurrence_vectors_match_a_direct_computation():
    encoder, tok = load_encoder(MINILM).eval(), load_tokenizer_for(MINILM)
    texts = ["We train psw003 models. Nothing here.", "The PSW003 works and psw003 fails."]
    sums, counts, skipped = occurrence_sums(encoder, tok, texts, ["psw003", "works"], -1, 64, 2,
                                            CPU)
    assert counts.tolist() == [3, 1] and skipped == 0
    expected = np.zeros_like(sums)
    for sentence in ("We train psw003 models.", "The PSW003 works and psw003 fails."):
        enc = tok(sentence, return_offsets_mapping=True, return_tensors="pt")
        with torch.inference_mode():
            states = encoder(input_ids=enc["input_ids"],
                             attention_mask=enc["attention_mask"]).last_hidden_state[0].double()
        for word, row in (("psw003", 0), ("PSW003", 0), ("works", 1)):
            at = 0
            while (start := sentence.find(word, at)) >= 0:
                at = start + 1
                end = start + len(word)
                tokens = [j for j, (a, b) in enumerate(enc["offset_mapping"][0].tolist())
                          if b > a and a < end and b > start]
                assert len(tokens) >= 1
                expected[row] += states[tokens].mean(0).numpy()
    np.testing.assert_allclose(sums, expected, rtol=1e-5, atol=1e-6)
    # a window too short for the word: the occurrence is skipped, not guessed
    _, counts, skipped = occurrence_sums(encoder, tok, ["a b c d e f g h psw003."], ["psw003"],
                                         -1, 6, 2, CPU)
    assert counts.tolist() == [0] and skipped == 1


def test_occurrences_come_in_sentence_order_whatever_the_length_sorted_batches():
    """The encoder runs on batches sorted by length; each occurrence still comes in sentence
    order, with the vector its sentence gets encoded alone (no padding), up to float noise."""
    encoder, tok = load_encoder(MINILM).eval(), load_tokenizer_for(MINILM)
    sentences = ["A long sentence about the psw003 model that we trained for many days.",
                 "psw003 works.", "Here psw003 and works meet in a middling sentence.",
                 "Short psw003.", "works"]
    words = ["psw003", "works"]
    batched = list(occurrence_vectors(encoder, tok, sentences, words, -1, 64, 2, CPU))
    alone = [o for s in sentences
             for o in occurrence_vectors(encoder, tok, [s], words, -1, 64, 1, CPU)]
    assert [i for i, _ in batched] == [i for i, _ in alone] == [0, 0, 1, 0, 1, 0, 1]
    for (_, a), (_, b) in zip(batched, alone):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert list(occurrence_vectors(encoder, tok, [], words, -1, 64, 2, CPU)) == []


def test_change_scores_by_hand():
    # running words: words of >= 3 letters and the pseudo-words ("of" does not count)
    first = ["psw1 one two six", "psw1 psw2 ten of"]   # 7 running words: psw1 2, psw2 1
    last = ["PSW1 abc def", "ghi jkl mno"]            # 6 running words: psw1 1, psw2 0
    got = text_frequency_change(first, last, ["psw1", "psw2"])
    want = np.abs(np.log(np.array([2, 1]) / 7) - np.log(np.array([3, 2]) / 8))
    np.testing.assert_allclose(got, want)
    sums1, sums2 = np.array([[1.0, 0.0], [1.0, 1.0]]), np.array([[0.0, 2.0], [0.0, 0.0]])
    change = occurrence_change((sums1, np.array([1, 2])), (sums2, np.array([3, 0])))
    assert change[0] == pytest.approx(1.0) and np.isnan(change[1])


def _args(tmp_path, abstracts, first, last, n):
    return ["--first", *first, "--last", *last, "--abstracts", str(abstracts), "--stopwords",
            str(tmp_path / "stop.txt"), "--encoder", MINILM, "--layer", "-1", "--max-length",
            "128", "--batch-size", "16", "--n-targets", str(n), "--n-controls", "3",
            "--min-count", "5", "--max-shift", "0.8", "--seed", "0",
            # the learned methods, and the usages the contextual ones encode, small enough for a
            # test (their defaults are the sample's)
            "--temporal-steps", "2", "--temporal-hidden", "32", "--sgns-dim", "8",
            "--sgns-epochs", "1", "--max-usages", "20", "--apd-usages", "10", "--out",
            str(tmp_path / "out" / "b.md"), "--details", str(tmp_path / "out" / "b.json"),
            "--plot", str(tmp_path / "plots" / "b.csv")]


@pytest.mark.slow
def test_the_contextual_method_encodes_at_most_max_usages_per_word_and_period():
    """On a large corpus a pseudo-word of two frequent words holds thousands of sentences: the
    benchmark caps them as semantic_change caps a targets file's (semantic_change.max_usages)."""
    table = pd.DataFrame({"period": ["2017"] * 6 + ["2021"] * 6,
                          "abstract": [f"The psw000 works {k}. A psw001 fails {k}." for k in
                                       range(12)]})
    words, encoding = ["psw000", "psw001"], EncoderSettings(-1, 64, 8, CPU)
    capped = contextual.score(benchmark_inputs(table, ["2017"], ["2021"], MINILM, encoding,
                                               ChangeMethodsConfig(), 0, max_usages=2), words)
    assert capped.first_counts.tolist() == [2, 2] and capped.last_counts.tolist() == [2, 2]
    whole = contextual.score(benchmark_inputs(table, ["2017"], ["2021"], MINILM, encoding,
                                              ChangeMethodsConfig(), 0), words)
    assert whole.first_counts.tolist() == [6, 6] and whole.last_counts.tolist() == [6, 6]
    # the stage's option is semantic_change's param, with its default and its null
    parser = cli.build_parser()
    assert parser.get_default("max_usages") == SemanticChangeConfig().max_usages
    assert parser.parse_args([*_args(Path("."), "a.parquet", ["2017"], ["2021"], 4),
                              "--max-usages", "None"]).max_usages is None
    with pytest.raises(UserError, match="max_usages"):
        run_benchmark(["2017"], ["2021"], None, "absent.parquet", frozenset(), MINILM, encoding,
                      SemanticBenchmarkConfig(), ChangeMethodsConfig(), max_usages=0)


@pytest.mark.slow
def test_stage_end_to_end(tmp_path, sample_bib):
    papers = parse_file(sample_bib).papers
    abstracts = tmp_path / "abstracts.parquet"
    write_parquet(papers[papers.year.isin([2017, 2021])][["key", "year", "abstract"]]
                  .reset_index(drop=True), abstracts)
    (tmp_path / "stop.txt").write_text("1\tthe\t10\n2\tof\t9\n", encoding="utf-8")
    cli.main(_args(tmp_path, abstracts, ["2017"], ["2021"], 4))
    details = json.loads((tmp_path / "out" / "b.json").read_text())
    kinds = [p["kind"] for p in details["pseudo_words"]]
    assert sorted(kinds) == ["changed"] * 4 + ["control"] * 3
    methods = {"contextual", "apd", "apd-corrected", "temporal-attention", "time-token", "sgns",
               "frequency"}
    assert set(details["correlations"]) == methods
    assert details["correlations"]["contextual"]["n"] == 7
    assert details["correlations"]["apd"]["n"] == details["correlations"]["apd-corrected"]["n"] == 7
    # each method's smallest detectable rho and its power, at its number of words
    assert set(details["power"]) == methods and details["power"]["contextual"]["words"] == 7
    assert 0 < details["power"]["contextual"]["mde"] < details["power"]["contextual"]["mde_family"]
    assert set(details["power"]["contextual"]["power_at"]) == {"0.3", "0.5"}
    assert "## What the benchmark could see" in (tmp_path / "out" / "b.md").read_text()
    text = (tmp_path / "out" / "b.md").read_text()
    assert "## Against the graded truth" in text and "| psw000 |" in text
    assert set(details["time_token"]) == {"skipped_occurrences", "first_loss", "last_loss"}
    assert "![scores against the truth](../plots/b.png)" in text
    plot = pd.read_csv(tmp_path / "plots" / "b.csv")
    assert set(plot["method"]) == methods
    # every scored word once per method; a learned method may leave a rare word unscored (NaN)
    assert len(plot[plot["method"] == "contextual"]) == 7 and len(plot) <= 49
    assert (tmp_path / "plots" / "b.png").stat().st_size > 0

    # a corpus too small for the pairs: a report that says so, and no failed stage
    tiny = tmp_path / "tiny.parquet"
    write_parquet(pd.DataFrame({"key": ["a", "b"], "year": [2017, 2021],
                                "abstract": ["Models train.", "Models fail."]}), tiny)
    cli.main(_args(tmp_path, tiny, ["2017"], ["2021"], 4))
    assert "No benchmark" in (tmp_path / "out" / "b.md").read_text()
    assert "lower min_count" in json.loads((tmp_path / "out" / "b.json").read_text())["skipped"]
    assert pd.read_csv(tmp_path / "plots" / "b.csv").empty
    assert (tmp_path / "plots" / "b.png").stat().st_size > 0


def semeval_fixture(root):
    """A SemEval-2020 Task 1 folder (lemma corpora, POS-tagged targets as in the English data):
    four targets often enough for every method (sgns: 5 a group), graded truth."""
    import gzip

    contexts = {0: ["the {} fly over the field", "a {} land near the town"],
                1: ["the {} sell stock at the bank", "a {} fund the market loan"]}
    truth = {"plane_nn": 0.9, "attack_nn": 0.6, "tree_nn": 0.3, "record_nn": 0.0}
    for n, name in ((1, "ccoha1.txt.gz"), (2, "ccoha2.txt")):
        lines = []
        for word, change in truth.items():
            for k in range(8 + (n - 1) * round(10 * change)):   # and grow in frequency
                side = 1 if n == 2 and k < 8 * change else 0      # changed words move context
                lines.append(contexts[side][k % 2].format(word))
        text = "\n".join(lines) + "\n"
        folder = root / f"corpus{n}" / "lemma"
        folder.mkdir(parents=True)
        (folder / name).write_bytes(gzip.compress(text.encode()) if name.endswith(".gz")
                                    else text.encode())
    (root / "targets.txt").write_text("\n".join(truth) + "\n")
    (root / "truth").mkdir()
    (root / "truth" / "graded.txt").write_text("".join(f"{w}\t{t}\n" for w, t in truth.items()))
    return root


@pytest.mark.slow
def test_stage_on_a_semeval_folder(tmp_path):
    folder = semeval_fixture(tmp_path / "semeval" / "english")
    (tmp_path / "stop.txt").write_text("1\tthe\t10\n", encoding="utf-8")
    # the abstracts and groups are not read with --semeval (a missing table is no error)
    cli.main(["--semeval", str(folder), *_args(tmp_path, tmp_path / "absent.parquet", ["2017"],
                                                ["2021"], 4)])
    details = json.loads((tmp_path / "out" / "b.json").read_text())
    assert details["semeval"] == str(folder)
    assert (details["first"], details["last"]) == (["corpus1"], ["corpus2"])
    assert [t["word"] for t in details["targets"]] == ["plane_nn", "attack_nn", "tree_nn",
                                                       "record_nn"]
    assert {t["kind"] for t in details["targets"]} == {"target"} and "pseudo_words" not in details
    methods = ["contextual", "apd", "apd-corrected", "temporal-attention", "time-token", "sgns",
               "frequency"]
    assert set(details["correlations"]) == set(methods)
    for method in methods:         # every target scored by every method, correlated with truth
        assert details["correlations"][method]["n"] == 4, (method, details["correlations"])
        assert -1 <= details["correlations"][method]["spearman"] <= 1
    text = (tmp_path / "out" / "b.md").read_text()
    assert "# Semantic-change benchmark: SemEval-2020 Task 1, corpus1 → corpus2" in text
    assert "| plane_nn | target | 0.900 |" in text and "merged words" not in text
    plot = pd.read_csv(tmp_path / "plots" / "b.csv")
    assert len(plot) == 28 and set(plot["kind"]) == {"target"}
    assert "*apd-corrected* = APD minus its mean over 20 random splits" in text

    (folder / "truth" / "graded.txt").unlink()           # a broken folder: the user's to fix
    with pytest.raises(SystemExit):
        cli.main(["--semeval", str(folder), *_args(tmp_path, tmp_path / "absent.parquet",
                                                    ["2017"], ["2021"], 4)])
