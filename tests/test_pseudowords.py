"""Pseudo-word benchmark: hand-counted truth, determinism, the SemEval layout."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.corpus.anthology import parse_file
from pipeline.corpus.pseudowords import (
    Pair,
    choose_pairs,
    count_words,
    js_distance,
    load_semeval,
    make_benchmark,
)
from pipeline.infra.errors import UserError

REPO = Path(__file__).resolve().parents[1]


def corpus(rows: list[tuple[str, str]]) -> pd.DataFrame:
    return pd.DataFrame({"key": [f"k{i}" for i in range(len(rows))],
                         "period": [p for p, _ in rows], "abstract": [t for _, t in rows]})


def tiny() -> pd.DataFrame:
    """Per period: cat ×8, dog ×8, sun ×4, moon ×8, plus look-alikes that are other words."""
    rows = []
    for period in ("2000", "2001", "2002"):
        rows += [(period, "The cat and a dog. Cat-like cats!")] * 2       # 2 cat, 2 dog each
        rows += [(period, "cat dog cat dog cat dog")] * 2                  # 3 cat, 3 dog each
        rows += [(period, "sun moon moon, Sun Moon moon.")] * 2            # 2 sun, 4 moon each
        rows += [(period, "Nothing here at all.")]
    return corpus(rows)


def test_whole_word_case_insensitive_counts():
    counts = count_words(tiny().query("period == '2000'")["abstract"])
    # "Cat-like" is a compound and "cats" another word; "Cat" at a sentence start is "cat".
    assert (counts["cat"], counts["dog"], counts["cats"]) == (8, 8, 2)
    assert (counts["sun"], counts["moon"], counts["like"]) == (4, 8, 0)
    assert "a" not in counts   # shorter than 3 letters


def test_truth_by_hand():
    texts = tiny()
    pairs = [Pair("cat", "dog", "changed"), Pair("sun", "moon", "control")]
    out, truth = make_benchmark(texts, ["2000"], ["2002"], pairs, [0.3], seed=1, base_share=0.2)
    changed, control = truth.iloc[0], truth.iloc[1]
    # First: all 8 cats + round(0.2·8/0.8) = 2 dogs -> share 2/10. Last: share 0.5 -> 8 dogs of 8.
    assert (changed["n_first"], changed["share_first"]) == (10, 0.2)
    assert (changed["n_last"], changed["share_last"]) == (16, 0.5)
    m = (0.65, 0.35)
    kl_p = 0.8 * math.log2(0.8 / m[0]) + 0.2 * math.log2(0.2 / m[1])
    kl_q = 0.5 * math.log2(0.5 / m[0]) + 0.5 * math.log2(0.5 / m[1])
    assert changed["truth"] == pytest.approx(math.sqrt((kl_p + kl_q) / 2))
    assert changed["truth"] == pytest.approx(0.2704, abs=1e-4)   # sqrt((0.0782 + 0.0680) / 2)
    # Control share 0.2 + 0.3/2 = 0.35 in every period: round(0.35·4/0.65) = 2 moons of 8 -> 2/6.
    assert control["n_first"] == control["n_last"] == 6
    assert control["share_first"] == control["share_last"] == pytest.approx(1 / 3)
    assert control["truth"] == 0.0
    assert list(truth.columns) == ["word", "truth", "kind", "a", "b", "n_first", "n_last",
                                   "share_first", "share_last"]
    assert truth["word"].tolist() == ["psw000", "psw001"]
    # The middle period gets the interpolated share 0.35: round(0.35·8/0.65) = 4 dogs replaced.
    left = count_words(out.query("period == '2001'")["abstract"])
    assert (left["dog"], left["cat"], left["cats"]) == (4, 0, 2)
    by_period = {p: sum(t.count("psw000") for t in out.query(f"period == '{p}'")["abstract"])
                 for p in ("2000", "2001", "2002")}
    assert by_period == {"2000": 10, "2001": 12, "2002": 16}
    assert out["abstract"].str.endswith("Cat-like cats!").sum() == 6   # compounds, plurals kept
    assert out["key"].tolist() == texts["key"].tolist() and len(out) == len(texts)


def test_js_distance_bounds():
    assert js_distance(0.3, 0.3) == 0.0
    assert js_distance(0.0, 1.0) == pytest.approx(1.0)
    assert js_distance(0.2, 0.5) == pytest.approx(js_distance(0.5, 0.2))
    assert math.isnan(js_distance(float("nan"), 0.5))


def many_words(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    vocab = [f"w{chr(97 + i)}{chr(97 + j)}x" for i in range(8) for j in range(8)]  # 64 words
    rows = [(p, " ".join(rng.choice(vocab, 30))) for p in ("2010", "2011", "2012")
            for _ in range(40)]
    return corpus(rows)


def test_determinism_and_disjoint_pairs():
    texts = many_words()
    c1 = count_words(texts.query("period == '2010'")["abstract"])
    c2 = count_words(texts.query("period == '2012'")["abstract"])

    def run(seed: int) -> tuple[list[Pair], bytes, bytes]:
        pairs = choose_pairs(c1, c2, 5, 5, min_count=5, seed=seed)
        out, truth = make_benchmark(texts, ["2010"], ["2012"], pairs, [0.1, 0.2, 0.3, 0.35, 0.4],
                                    seed=seed)
        return pairs, out.to_csv().encode(), truth.to_csv().encode()

    first, again, other = run(3), run(3), run(4)
    assert first == again
    assert first[0] != other[0] and first[1] != other[1]
    words = [w for p in first[0] for w in (p.a, p.b)]
    assert len(words) == len(set(words)) == 20
    assert [p.kind for p in first[0]].count("control") == 5
    with pytest.raises(ValueError, match="disjoint"):
        make_benchmark(texts, ["2010"], ["2012"], [Pair(words[0], words[1], "changed"),
                                                   Pair(words[1], words[2], "control")], [0.2], 0)


def test_same_pairs_other_seed_replaces_other_occurrences():
    texts = many_words()
    pairs = [Pair("waax", "wabx", "changed")]
    a = make_benchmark(texts, ["2010"], ["2012"], pairs, [0.3], seed=0)
    b = make_benchmark(texts, ["2010"], ["2012"], pairs, [0.3], seed=1)
    assert not a[0].equals(b[0])
    pd.testing.assert_frame_equal(a[1], b[1])   # same counts, so the same truth


def test_too_few_candidates_says_how_many_and_which_min_count():
    texts = tiny()
    c1 = count_words(texts.query("period == '2000'")["abstract"])
    c2 = count_words(texts.query("period == '2002'")["abstract"])
    with pytest.raises(UserError) as err:
        choose_pairs(c1, c2, 2, 1, min_count=4, seed=0, stopwords=["the"])
    text = str(err.value)
    assert "4 candidate words found" in text and "min_count=4" in text and "6 needed" in text
    assert "lower min_count below 4" in text
    assert {w for p in choose_pairs(c1, c2, 1, 1, 4, 0, ["the"]) for w in (p.a, p.b)} == {
        "cat", "dog", "sun", "moon"}


def test_periods_must_exist_and_be_ordered():
    pairs = [Pair("cat", "dog", "changed")]
    with pytest.raises(UserError, match="before every last"):
        make_benchmark(tiny(), ["2002"], ["2000"], pairs, [0.2], 0)
    with pytest.raises(UserError, match="among the corpus periods"):
        make_benchmark(tiny(), ["1999"], ["2002"], pairs, [0.2], 0)
    with pytest.raises(ValueError, match="shifts"):
        make_benchmark(tiny(), ["2000"], ["2002"], pairs, [], 0)


def semeval_folder(root: Path, graded_at_root: bool = False) -> Path:
    (root / "corpus1" / "lemma").mkdir(parents=True)
    (root / "corpus2" / "lemma").mkdir(parents=True)
    (root / "corpus1" / "lemma" / "ccoha1.txt.gz").write_bytes(
        gzip.compress(b"the plane fly high\n\nan attack on the plane\n"))
    (root / "corpus2" / "lemma" / "ccoha2.txt").write_text("a heart attack\nthe plane land\n")
    (root / "targets.txt").write_text("attack\nplane\n")
    graded = root / "graded.txt" if graded_at_root else root / "truth" / "graded.txt"
    graded.parent.mkdir(exist_ok=True)
    graded.write_text("attack\t0.144\nplane\t0.882\n")
    return root


@pytest.mark.parametrize("at_root", [False, True])
def test_load_semeval(tmp_path, at_root):
    texts, targets = load_semeval(semeval_folder(tmp_path, at_root))
    assert texts["period"].tolist() == ["corpus1", "corpus1", "corpus2", "corpus2"]
    assert texts["abstract"].tolist()[1] == "an attack on the plane"
    assert texts["key"].tolist()[:2] == ["corpus1:ccoha1.txt.gz:1", "corpus1:ccoha1.txt.gz:3"]
    assert targets.to_dict("list") == {"word": ["attack", "plane"], "truth": [0.144, 0.882]}
    # The loaded layout feeds the benchmark directly: periods corpus1 -> corpus2.
    out, truth = make_benchmark(texts, ["corpus1"], ["corpus2"],
                                [Pair("attack", "plane", "changed")], [0.4], 0)
    assert truth["n_first"].iloc[0] == 1 and len(out) == 4


def test_semeval_errors_name_the_missing_file_and_layout(tmp_path):
    root = semeval_folder(tmp_path)
    (root / "targets.txt").unlink()
    with pytest.raises(UserError, match="targets.txt is missing") as err:
        load_semeval(root)
    assert "expected layout" in str(err.value) and "truth/graded.txt" in str(err.value)
    (root / "corpus2" / "lemma" / "ccoha2.txt").unlink()
    with pytest.raises(UserError, match=r"no \.txt or \.txt\.gz file in corpus2/"):
        load_semeval(root)


@pytest.mark.slow
def test_sample_corpus_first_to_last_year():
    papers = parse_file(REPO / "data" / "sample" / "anthology-sample.bib.gz").papers
    texts = pd.DataFrame({"key": papers["key"], "period": papers["year"].astype(str),
                          "abstract": papers["abstract"]})
    first, last = min(texts["period"]), max(texts["period"])
    stop = [line.split("\t")[1] for line in
            (REPO / "data" / "reference" / "stopwords.txt").read_text().splitlines()]
    c1 = count_words(texts.query("period == @first")["abstract"])
    c2 = count_words(texts.query("period == @last")["abstract"])
    pairs = choose_pairs(c1, c2, 10, 10, min_count=10, seed=0, stopwords=stop)
    out, truth = make_benchmark(texts, [first], [last], pairs,
                                list(np.linspace(0.1, 0.4, 10)), seed=0)
    assert len(out) == len(texts) == 1949 and out["key"].equals(texts["key"])
    assert not {w for p in pairs for w in (p.a, p.b)} & {w.lower() for w in stop}
    before, after = count_words(texts["abstract"]), count_words(out["abstract"])
    for p, row in zip(pairs, truth.itertuples()):
        made = sum(t.count(row.word) for t in out["abstract"])
        assert before[p.a] + before[p.b] == after[p.a] + after[p.b] + made   # nothing lost
        first_texts = out.loc[out["period"] == first, "abstract"]
        assert sum(t.count(row.word) for t in first_texts) == row.n_first
        assert row.n_first >= 10 and row.n_last >= 10 and 0 <= row.truth <= 1
    changed, control = truth.query("kind == 'changed'"), truth.query("kind == 'control'")
    assert (control["truth"] < 0.06).all()          # rounding only
    assert changed["truth"].min() > control["truth"].max()
    assert (changed["share_last"] > changed["share_first"]).all()


def test_a_rare_b_replaces_fewer_a_to_keep_the_share():
    texts = corpus([("2000", "cat " * 8 + "dog"), ("2001", "cat " * 8 + "dog " * 8)])
    out, truth = make_benchmark(texts, ["2000"], ["2001"], [Pair("cat", "dog", "changed")],
                                [0.4], seed=0, base_share=0.1)
    # First share 0.1: round(0.1·8/0.9) = 1 dog (of 1) + 8 cats. Last 0.5: 8 dogs of 8 + 8 cats.
    assert truth[["n_first", "share_first", "n_last", "share_last"]].iloc[0].tolist() == [
        9, 1 / 9, 16, 0.5]
    texts = corpus([("2000", "cat " * 8 + "dog " * 8), ("2001", "cat " * 8 + "dog")])
    out, truth = make_benchmark(texts, ["2000"], ["2001"], [Pair("cat", "dog", "changed")],
                                [0.4], seed=0, base_share=0.1)
    # Now the last period is short of dogs: 8 wanted > 1, so its 1 dog + round(1·0.5/0.5) = 1 cat.
    assert truth[["n_last", "share_last"]].iloc[0].tolist() == [2, 0.5]
    assert count_words(out["abstract"].iloc[1:])["cat"] == 7
