"""Long-tail report (paper 004's evaluation wired to the score folders): whole-word positions,
the per-model and baseline tables on a hand-computed example, and the `longtail` stage end to end
with a real byte-level BPE tokenizer."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pipeline.features.frequencies import write_period
from pipeline.features.tokenizer import encode_abstracts, train_scratch_tokenizer
from pipeline.features.words import WordPieces, token_texts, whole_word_positions
from pipeline.infra.io import write_parquet
from pipeline.reports.longtail_report import longtail_frame, markdown, metrics_json, plot_frame
from stages import longtail as cli

# id: 0 eos, 1-12 words " w0".." w11", 13 a continuation, 14 punctuation, 15 a first word
TEXTS = ["<|endoftext|>", *(f" w{i}" for i in range(12)), "ing", ",", "The"]
PIECES = WordPieces.from_texts(TEXTS)


def test_token_predicates():
    assert PIECES.starts.tolist() == [False] + [True] * 12 + [False, False, False]
    assert PIECES.continues[13] and not PIECES.continues[14] and not PIECES.continues[1]
    assert PIECES.word[15] and not PIECES.starts[15]
    pieces = WordPieces.from_texts([" state-of-the-art", " 2D", " -x", "'s", " a b"])
    assert pieces.starts.tolist() == [True, True, False, False, False]
    assert pieces.continues.tolist() == [False, False, False, True, False]


def test_whole_word_positions_by_hand():
    # abstract 0: "The w0 w1ing , w2" + eos; abstract 1: "w3 ..." starts with a spaced word
    abstract = [0, 0, 0, 0, 0, 0, 0, 1, 1]
    position = [1, 2, 3, 4, 5, 6, 7, 1, 2]
    target = [15, 1, 2, 13, 14, 3, 0, 4, 5]
    mask = whole_word_positions(abstract, position, target, PIECES)
    #          The   w0    w1(+ing) ing    ,      w2    eos    w3    w4
    assert mask.tolist() == [True, True, False, False, False, True, False, True, True]
    # "The" counts only as the first word of an abstract
    assert not whole_word_positions([0, 0], [1, 2], [1, 15], PIECES)[1]
    with pytest.raises(ValueError, match="sorted"):
        whole_word_positions([1, 0], [1, 1], [1, 1], PIECES)


def test_whole_word_positions_with_a_real_tokenizer():
    text = "Neural translation improves summarization quality, and parsers help."
    tok = train_scratch_tokenizer([text] * 30 + ["Neural parsers translate."] * 10, vocab_size=300)
    pieces = WordPieces.from_texts(token_texts(tok, len(tok)))
    ids = encode_abstracts(tok, [text], 64)[0]
    targets = np.asarray(ids[1:])
    mask = whole_word_positions(np.zeros(len(targets)), np.arange(1, len(targets) + 1), targets,
                                pieces)
    words = [tok.decode([t]).strip() for t in targets[mask]]
    # each selected target is a complete word of the text; every single-token word is selected
    assert set(words) <= set(text.replace(",", "").replace(".", "").split())
    single = [w for w in text.replace(",", " ").replace(".", " ").split()
              if len(tok.encode((" " if w != "Neural" else "") + w, add_special_tokens=False)) == 1]
    assert single and set(single) <= set(words)


def write_positions(root, run, period, abstract, position, target, top1, top10):
    frame = pd.DataFrame({"abstract": np.asarray(abstract, np.int32),
                          "position": np.asarray(position, np.int32),
                          "target_id": np.asarray(target, np.int32),
                          "nll": np.ones(len(target)), "top1": np.asarray(top1, bool),
                          "top10": np.asarray(top10, bool)})
    write_parquet(frame, root / run / f"positions_{period}.parquet")


# training counts: w0 200 (high), w1 50 and w2 20 (mid), w3 .. w11 9 .. 1 (low), others 0
COUNTS = np.array([0, 200, 50, 20, 9, 8, 7, 6, 5, 4, 3, 2, 1, 30, 40, 0])
EDGES = (100, 10)
# one abstract: w0 w1 w3 w3 w0 then "w2ing" (not a whole word) and eos
POSITIONS = dict(abstract=[0] * 8, position=list(range(1, 9)), target=[1, 2, 4, 4, 1, 3, 13, 0])


@pytest.fixture()
def scores(tmp_path):
    root = tmp_path / "scores"
    p = POSITIONS
    for period in ("2020", "2021"):
        # baseline (both seeds): top-1 right at w0 (both) and the first w3; top-10 also at w1
        for run in ("baseline-s0", "baseline-s1"):
            write_positions(root, run, period, p["abstract"], p["position"], p["target"],
                            [1, 0, 1, 0, 1, 1, 0, 0], [1, 1, 1, 0, 1, 1, 0, 0])
        # frequency, two seeds: seed 0 gets w1 at top-1, seed 1 nothing at top-1
        write_positions(root, "frequency-s0", period, p["abstract"], p["position"], p["target"],
                        [0, 1, 0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0, 0, 0])
        write_positions(root, "frequency-s1", period, p["abstract"], p["position"], p["target"],
                        [0, 0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0, 0, 0])
    return root


def test_tables_by_hand(scores):
    frame = longtail_frame(scores, ["baseline"], {"baseline": [0]}, {"test": "2021"}, PIECES,
                           COUNTS, EDGES, 0)
    rows = frame.set_index(["model", "bin"])
    # 5 whole-word positions (w0 w1 w3 w3 w0): high w0 x2, mid w1, low w3 x2
    assert rows.loc[("baseline", "all"), ["n", "n_types"]].tolist() == [5, 3]
    assert rows.loc[("baseline", "high"), ["n", "n_types", "T1", "T10"]].tolist() == [2, 1, 1, 1]
    assert rows.loc[("baseline", "all"), "acc@1"] == pytest.approx(3 / 5)     # w0, w3, w0
    assert rows.loc[("baseline", "all"), "acc@10"] == pytest.approx(4 / 5)
    assert rows.loc[("baseline", "low"), ["T1", "T10"]].tolist() == [1, 1]
    assert rows.loc[("baseline", "mid"), ["T1", "T10"]].tolist() == [0, 1]
    # freq proposes the 10 most frequent word-starting tokens: w0 .. w9 (not "ing" or ",")
    assert rows.loc[("freq", "all"), ["acc@1", "acc@10", "T1", "T10"]].tolist() == [
        pytest.approx(2 / 5), pytest.approx(1.0), 1, 3]
    assert rows.loc[("ugrm", "all"), "seeds"] == 1


def test_seed_means_metrics_markdown_and_plot(scores):
    # each variant's own seeds (experiment.other_seeds): the Baseline's one, Frequency's two
    frame = longtail_frame(scores, ["baseline", "frequency"],
                           {"baseline": [0], "frequency": [0, 1]}, {"test": "2021", "dev": "2020"}, PIECES, COUNTS, EDGES, 3)
    freq = frame[(frame["model"] == "frequency") & (frame["split"] == "test")].set_index("bin")
    assert freq.loc["all", "seeds"] == 2
    assert frame[frame["model"] == "baseline"]["seeds"].eq(1).all()
    assert freq.loc["all", "acc@1"] == pytest.approx((1 / 5 + 0) / 2)
    assert freq.loc["all", "T10"] == pytest.approx((3 + 0) / 2)
    metrics = metrics_json(frame)
    assert set(metrics) == {"baseline", "frequency", "freq", "ugrm"}
    assert metrics["frequency"] == {"test": {"acc1": 0.1, "acc10": 0.5, "T1": 0.5, "T10": 1.5}}
    text = markdown(frame, EDGES, 3)
    assert "| Frequency | 2 | 10.00 | 50.00 | 0.5 | 1.5 |" in text
    assert "high ≥ 100, mid 10–99, low < 10" in text and "(seed 3)" in text
    assert "high T1 / T10 (of 1 words, n = 2)" in text
    plot = plot_frame(frame)
    assert plot["bin"].unique().tolist() == ["1: high", "2: mid", "3: low"]
    assert set(plot["model"]) == {"Baseline-all", "Frequency", "freq", "ugrm"}


def test_stage_end_to_end(tmp_path):
    tok = train_scratch_tokenizer(["Neural parsers translate text quickly.",
                                   "We translate text with neural parsers."] * 30, vocab_size=400)
    ids = encode_abstracts(tok, ["Neural parsers translate text."], 64)[0]
    n = len(ids) - 1
    scores, freqs = tmp_path / "scores", tmp_path / "frequencies"
    for period in ("2020", "2021"):
        write_positions(scores, "baseline-s0", period, [0] * n, range(1, n + 1), ids[1:],
                        [True] * n, [True] * n)
    for period in ("2017", "2018", "2019"):
        write_period(freqs / f"{period}.parquet", period, np.arange(len(tok)) % 50)
    tok.save_pretrained(tmp_path / "tok")
    out = tmp_path / "out"
    cli.main(["--scores", str(scores), "--variants", "baseline", "--seeds", "0", "--dev", "2020",
              "--test", "2021", "--train-periods", "2017", "2019", "--tokenizer",
              str(tmp_path / "tok"), "--frequencies", str(freqs), "--high-min", "40",
              "--mid-min", "10", "--seed", "0", "--out", str(out / "longtail.md"),
              "--metrics-dir", str(out / "metrics"), "--details", str(out / "longtail.json"),
              "--plot", str(out / "plots" / "longtail.csv")])
    metrics = json.loads((out / "metrics" / "baseline.json").read_text())
    # "Neural parsers translate text": four single-token words, each its own type
    assert metrics["test"] == {"acc1": 1.0, "acc10": 1.0, "T1": 4.0, "T10": 4.0}
    assert "# Long-tail word prediction" in (out / "longtail.md").read_text()
    assert (out / "plots" / "longtail.png").stat().st_size > 0
    details = json.loads((out / "longtail.json").read_text())
    assert details["edges"] == {"high_min": 40, "mid_min": 10} and details["rows"]
    with pytest.raises(SystemExit):
        cli.main(["--scores", str(scores), "--variants", "baseline", "--seeds", "0", "--dev",
                  "2020", "--test", "2021", "--train-periods", "2017", "2019", "--tokenizer",
                  str(tmp_path / "tok"), "--frequencies", str(freqs), "--high-min", "5",
                  "--mid-min", "10", "--out", str(out / "x.md"), "--metrics-dir", str(out / "m2"),
                  "--details", str(out / "d.json"), "--plot", str(out / "p.csv")])
