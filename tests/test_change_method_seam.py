"""The method seam of semantic change: the registry's table, its checks, and a toy
method (tests/toy_change_method.py) registered from the test suite alone that flows through the
semantic_change report and the benchmark — its rows in the scores table, its section in the
Markdown, its column and correlations in the benchmark — with no other file touched."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from pipeline.features.tokenizer import train_scratch_tokenizer
from pipeline.features.words import token_texts
from pipeline.infra.io import read_parquet, write_parquet
from pipeline.semantic.methods import registry
from pipeline.semantic.methods.interface import (INPUT_FIELDS, ChangeInputs, ChangeMethod,
                                                 MethodResult)
from stages import semantic_benchmark as benchmark_cli
from stages import semantic_change as change_cli
from tests import toy_change_method as toy
from tests.test_semantic_benchmark import _args as benchmark_args
from tests.test_semantic_benchmark import semeval_fixture
from tests.test_semantic_change_report import LEARNED, _write_features

TOY = "tests.toy_change_method"


@pytest.fixture
def with_toy(monkeypatch):
    """The registry with one more row, the toy's, for this test only."""
    monkeypatch.setattr(registry, "METHODS", dict(registry.METHODS))
    registry.register(toy.NAME, TOY)
    return registry.lookup(toy.NAME)


def test_the_table_in_report_order_and_its_checks(monkeypatch):
    assert registry.names() == ["contextual", "apd", "apd-corrected", "temporal-attention",
                                "time-token", "sgns", "frequency"]
    for method in registry.methods():       # each module's METHOD is its row's
        assert method.reads <= INPUT_FIELDS and method.description and method.benchmark_note
    assert set(registry.AGREEMENT) <= set(registry.names())
    with pytest.raises(ValueError, match="already registered"):
        registry.register("sgns", TOY)
    with pytest.raises(ValueError, match="unknown semantic-change method"):
        registry.lookup("nope")
    monkeypatch.setattr(registry, "METHODS", {"other": TOY})   # module of another name
    with pytest.raises(ValueError, match="a ChangeMethod named 'other'"):
        registry.lookup("other")
    with pytest.raises(ValueError, match="reads unknown inputs"):
        ChangeMethod("bad", "d", "n", frozenset({"gpu"}), toy.score)


def test_time_token_rows_differ_only_by_time_masking(monkeypatch):
    """``time-token`` (Rosin et al. 2022's time masking) is a default row; ``time-token-unmasked``
    an optional one (one more MLM: not run unless enabled) whose score is the same call with
    ``time_mask_prob`` 0, the one setting that tells them apart."""
    from pipeline.semantic import temporal_mlm

    assert "time-token" in registry.names()
    assert "time-token-unmasked" not in registry.names()
    assert set(registry.OPTIONAL) == {"time-token-unmasked"}
    monkeypatch.setattr(registry, "METHODS", dict(registry.METHODS))
    registry.enable("time-token-unmasked")
    registry.enable("time-token-unmasked")                  # enabled once: no error
    assert registry.names()[-1] == "time-token-unmasked"
    with pytest.raises(ValueError, match="no optional semantic-change method"):
        registry.enable("sgns")
    masked, unmasked = (registry.lookup(n) for n in ("time-token", "time-token-unmasked"))
    assert masked.reads == unmasked.reads and masked.description != unmasked.description
    calls = []
    def record(inputs, targets, method, **overrides):
        calls.append((inputs, tuple(targets), method, overrides))
        return MethodResult.empty()

    monkeypatch.setattr(temporal_mlm, "score_targets", record)
    inputs = ChangeInputs(("a",), ("b",), ([["x"]], [["y"]]), "enc")
    masked.score(inputs, ["x"])
    unmasked.score(inputs, ["x"])
    assert calls == [(inputs, ("x",), temporal_mlm.TIME_TOKEN, {}),
                     (inputs, ("x",), temporal_mlm.TIME_TOKEN, {"time_mask_prob": 0.0})]
    assert temporal_mlm.TemporalMLMSettings().time_mask_prob == temporal_mlm.TIME_MASK_PROB > 0


def test_run_refuses_a_method_that_scores_the_wrong_number(monkeypatch, with_toy):
    monkeypatch.setattr(registry, "METHODS", {toy.NAME: TOY})
    inputs = ChangeInputs(("a",), ("b",), ([["x is here"]], [["y"]]), "enc")
    assert registry.run(inputs, ["x", "y"])[toy.NAME].scores.tolist() == [1.0, 1.0]
    monkeypatch.setattr(toy, "METHOD", dataclasses.replace(
        toy.METHOD, score=lambda inputs, targets: MethodResult(np.zeros(1))))
    with pytest.raises(ValueError, match="returned 1 scores for 2 targets"):
        registry.run(inputs, ["x", "y"])


def test_a_registered_method_flows_through_the_report(tmp_path, with_toy):
    """The semantic_change stage, unchanged, scores, ranks, correlates and reports the toy."""
    corpus = ["Neural parsers translate text quickly.", "We translate text with neural parsers."]
    tok = train_scratch_tokenizer(corpus * 30, vocab_size=400)
    tok.save_pretrained(tmp_path / "tok")
    _write_features(tmp_path, tok, len(tok))
    first = [corpus[0]] * 6
    last = [corpus[1]] * 6 + ["Text is text."]
    write_parquet(pd.DataFrame({"key": [f"k{i}" for i in range(13)],
                                "year": [2017] * 6 + [2019] * 7, "abstract": first + last}),
                  tmp_path / "abstracts.parquet")
    (tmp_path / "stop.txt").write_text("1\twith\t10\n", encoding="utf-8")
    words = ["text", "parsers", "quickly", "with", "neural"]       # each one LM token
    assert set(words) <= {t[1:] for t in token_texts(tok, len(tok))}
    truth = tmp_path / "targets.csv"
    pd.DataFrame({"word": words, "truth": [0.1, 0.5, 0.9, 0.7, 0.3]}).to_csv(truth, index=False)
    out = tmp_path / "out"
    change_cli.main(["--first", "2017", "--last", "2019", "--embeddings", str(tmp_path / "emb"),
                     "--frequencies", str(tmp_path / "freq"), "--tokenizer", str(tmp_path / "tok"),
                     "--stopwords", str(tmp_path / "stop.txt"), "--abstracts",
                     str(tmp_path / "abstracts.parquet"), "--targets", str(truth), "--top", "3",
                     "--n-targets", "50", "--min-count", "5", "--seed", "0",
                     "--scores", str(out / "scores.parquet"), "--out", str(out / "report.md"),
                     "--metrics", str(out / "m.json"), *LEARNED])
    scores = read_parquet(out / "scores.parquet")
    mine = scores[scores["method"] == toy.NAME].set_index("word")
    assert len(mine) == 5 and mine["rank"].tolist() == [1, 2, 3, 4, 5]
    for word, row in mine.iterrows():           # the toy's own scores, the groups' counts
        assert row["score"] == pytest.approx(abs(toy.share(last, word) - toy.share(first, word)))
        assert row["first_count"] == 30 and row["last_count"] == 30
    assert list(dict.fromkeys(scores["method"]))[-1] == toy.NAME        # after the table's rows
    text = (out / "report.md").read_text()
    assert f"## {toy.NAME}: {toy.METHOD.description}" in text
    assert f"| sgns | frequency | {toy.NAME} |" in text          # the agreement matrix's header
    assert f"| {toy.NAME} | 5 | " in text.split("## Against the graded truth")[1]
    top = mine.sort_values("rank").index[0]
    assert f"| 1 | {top} | {mine.loc[top, 'score']:.4f} | 30 | 30 |" in text
    assert toy.NAME in json.loads((out / "m.json").read_text())["spearman"]


@pytest.mark.slow
def test_a_registered_method_flows_through_the_benchmark(tmp_path, with_toy):
    """The semantic_benchmark stage, unchanged, scores the toy on a SemEval folder: its column,
    its sentence, its correlations and its details."""
    folder = semeval_fixture(tmp_path / "semeval" / "english")
    (tmp_path / "stop.txt").write_text("1\tthe\t10\n", encoding="utf-8")
    benchmark_cli.main(["--semeval", str(folder), *benchmark_args(
        tmp_path, tmp_path / "absent.parquet", ["2017"], ["2021"], 4)])
    details = json.loads((tmp_path / "out" / "b.json").read_text())
    assert list(details["correlations"])[-1] == toy.NAME
    assert details["correlations"][toy.NAME]["n"] == 4
    assert details[toy.NAME.replace("-", "_")] == {"texts_first": 32, "texts_last": 50}
    text = (tmp_path / "out" / "b.md").read_text()
    assert f"*{toy.NAME}* = {toy.METHOD.benchmark_note}." in text
    assert f"| word | kind | truth | contextual | apd | apd-corrected | temporal-attention | " \
           f"time-token | sgns | " \
           f"frequency | {toy.NAME} |" in text
    plot = pd.read_csv(tmp_path / "plots" / "b.csv")
    mine = plot[plot["method"] == toy.NAME].set_index("word")["score"]
    texts = pd.DataFrame(details["scores"])
    assert len(mine) == 4 and set(texts["method"]) >= {toy.NAME}
    assert f"| plane_nn | target | 0.900 | " in text


def test_the_registry_finds_the_method_modules_by_their_order(tmp_path, monkeypatch):
    """Discovery: a module's name is its method's (``_`` written ``-``), the table is in ``ORDER``,
    ``OPTIONAL = True`` keeps a method out of the default rows, and a module without ``ORDER`` is
    refused by name."""
    import importlib
    import sys

    pkg = tmp_path / "toy_methods"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "late_one.py").write_text("ORDER = 20\n")
    (pkg / "early.py").write_text("ORDER = 10\n")
    (pkg / "opt_in.py").write_text("ORDER = 5\nOPTIONAL = True\n")
    (pkg / "interface.py").write_text("")   # not a method
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(registry, "_package", importlib.import_module("toy_methods"))
    default, optional = registry._discovered()
    assert default == {"early": "toy_methods.early", "late-one": "toy_methods.late_one"}
    assert list(default) == ["early", "late-one"]
    assert optional == {"opt-in": "toy_methods.opt_in"}
    (pkg / "no_order.py").write_text("METHOD = None\n")
    with pytest.raises(ValueError, match="toy_methods.no_order needs ORDER"):
        registry._discovered()
    for name in [m for m in sys.modules if m.startswith("toy_methods")]:
        monkeypatch.delitem(sys.modules, name)
