"""`python -m stages.score` end to end on real sample abstracts with a tiny saved future LM."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from transformers import GPT2Config, GPT2LMHeadModel

from pipeline.features.frequencies import count_tokens, write_period
from pipeline.models.future_lm import make_future_lm, save_future_lm
from pipeline.infra.identity import tokenizer_identity
from pipeline.infra.io import parquet_metadata, read_json, read_parquet, write_parquet
from pipeline.features.tokenizer import load_tokenizer, train_scratch_tokenizer
from stages import score
from tests.conftest import stage_help

REPO = Path(__file__).resolve().parents[1]
STOPWORDS = REPO / "data" / "reference" / "stopwords.txt"


def sample_by_year() -> dict[int, list[tuple[str, str]]]:
    """(key, abstract) per year of the embedded sample, read with a plain regex."""
    text = gzip.open(REPO / "data" / "sample" / "anthology-sample.bib.gz", "rt").read()
    out: dict[int, list[tuple[str, str]]] = {}
    for entry in text.split("\n@")[1:]:
        key = re.match(r"\w+\{([^,]+),", entry)
        year = re.search(r'^\s*year = "(\d{4})"', entry, flags=re.M)
        abstract = re.search(r'^\s*abstract = [{"](.*?)["}],?$', entry, flags=re.M)
        if key and year and abstract:
            out.setdefault(int(year.group(1)), []).append((key.group(1), abstract.group(1)))
    return out


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """Tokenizer, per-year frequencies (2016-2020), a tiny Frequency model, dev 2020 / test 2021,
    and a corpus table with 2019's abstracts (an extra evaluated period)."""
    root = tmp_path_factory.mktemp("score")
    years = sample_by_year()
    tok = train_scratch_tokenizer([a for y in (2017, 2018, 2019) for _, a in years[y]], 512)
    tok.save_pretrained(root / "tokenizer")
    for y in (2016, 2017, 2018, 2019, 2020):
        write_period(root / "frequencies" / f"{y}.parquet", str(y),
                   count_tokens(tok, [a for _, a in years[y]]),
                   tokenizer_id=tokenizer_identity(root / "tokenizer"))

    def table(y: int, n: int) -> pd.DataFrame:
        rows = years[y][:n]
        return pd.DataFrame({"key": [k for k, _ in rows], "period": str(y), "title": "t",
                             "abstract": [a for _, a in rows]})

    for split, y in (("dev", 2020), ("test", 2021)):
        write_parquet(table(y, 25), root / f"{split}.parquet")
    corpus = pd.concat([table(2018, 3), table(2019, 7), table(2020, 4)])
    write_parquet(corpus.assign(date=corpus.pop("period")), root / "abstracts.parquet")
    torch.manual_seed(0)
    lm = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_layer=1, n_head=2, n_embd=32,
                                    n_positions=128, bos_token_id=0, eos_token_id=0))
    model = make_future_lm(lm, "frequency-nolstm", window=2)
    with torch.no_grad():
        model.bias.a.fill_(0.5)
    save_future_lm(model, root / "model")
    return root


def args(root: Path, out: Path, **overrides) -> list[str]:
    values = {"model": root / "model", "dev": root / "dev.parquet", "test": root / "test.parquet",
              "tokenizer": root / "tokenizer", "frequencies": root / "frequencies",
              "embeddings": root / "embeddings", "stopwords": STOPWORDS, "batch-size": 4,
              "n-generate": 2, "max-new-tokens": 12, "device": "cpu", "out": out}
    values.update(overrides)
    return [x for k, v in values.items() for x in (f"--{k}", str(v))]


@pytest.mark.slow
def test_score_writes_the_documented_folder(project, tmp_path):
    out = tmp_path / "scores" / "frequency-nolstm-s0"
    score.main(args(project, out))
    assert sorted(p.name for p in out.iterdir()) == [
        "generations_2020.parquet", "generations_2021.parquet", "metrics.json",
        "positions_2020.parquet", "positions_2021.parquet",
        "tokens_2020.parquet", "tokens_2021.parquet"]
    metrics = read_json(out / "metrics.json")
    assert metrics["variant"] == "frequency-nolstm" and metrics["seed"] is None
    assert (metrics["dev_period"], metrics["test_period"]) == ("2020", "2021")
    assert list(metrics["periods"]) == ["2020", "2021"]
    for split, year in (("dev", "2020"), ("test", "2021")):
        m = metrics[split]
        assert m == metrics["periods"][year]
        assert set(m) == {"period", "ppl", "cpl", "cm", "n_abstracts", "n_tokens",
                          "n_content_tokens", "n_truncated", "context_length", "top10",
                          "n_generated", "n_gold"}
        assert m["period"] == year and m["n_abstracts"] == 25 and m["n_generated"] == 2
        assert m["context_length"] == 128
        tokens = read_parquet(out / f"tokens_{year}.parquet")
        positions = read_parquet(out / f"positions_{year}.parquet")
        # one pass per period, with its own history: no second (wrong-history) columns
        assert list(tokens.columns) == ["key", "period", "n_tokens", "nll_sum", "n_content",
                                        "content_nll_sum"]
        assert len(positions) == m["n_tokens"]
        assert positions["nll"].sum() == pytest.approx(tokens["nll_sum"].sum())
        assert m["top10"] == pytest.approx(positions["top10"].mean())
        assert len(tokens) == 25 and (tokens["period"] == year).all()
        assert m["n_tokens"] == tokens["n_tokens"].sum()
        assert m["ppl"] == pytest.approx(np.exp(tokens["nll_sum"].sum() / m["n_tokens"]))
        assert m["cpl"] == pytest.approx(np.exp(tokens["content_nll_sum"].sum()
                                                / tokens["n_content"].sum()))
        assert 0 < tokens["n_content"].sum() < tokens["n_tokens"].sum()
        # long abstracts are cut to the model's 128 positions (127 predicted tokens) and counted
        assert tokens["n_tokens"].max() == 127
        assert m["n_truncated"] == (tokens["n_tokens"] == 127).sum() > 0
        gens = read_parquet(out / f"generations_{year}.parquet")
        assert gens["index"].tolist() == [0, 1] and gens["seed"].tolist() == [0, 0]   # one chunk
        assert m["cm"] == pytest.approx(gens["cm"].mean())
        assert gens["cm"].between(0, 1).all()
        settings = json.loads(parquet_metadata(out / f"generations_{year}.parquet")
                              ["generation_settings"])
        assert settings["num_beams"] == 5 and settings["max_new_tokens"] == 12
    # the test period is scored with its own history, so its model differs from the dev period's
    assert metrics["dev"]["ppl"] != metrics["test"]["ppl"]


@pytest.mark.slow
def test_later_periods_each_with_their_own_history_and_generation_only_where_asked(project, tmp_path):
    out = tmp_path / "out"
    score.main(args(project, out, abstracts=project / "abstracts.parquet")
               + ["--periods", "2021", "2020", "2019"])
    metrics = read_json(out / "metrics.json")
    assert list(metrics["periods"]) == ["2019", "2020", "2021"]          # time order
    m = metrics["periods"]["2019"]
    assert m["n_abstracts"] == 7 and m["n_generated"] == 0 and m["cm"] is None
    assert read_parquet(out / "tokens_2019.parquet")["key"].tolist() == sample_by_year_keys(2019, 7)
    assert (out / "positions_2019.parquet").exists()
    assert not (out / "generations_2019.parquet").exists()   # default: dev and test only
    # Generation only for 2019; the dev and test periods are scored without.
    only = tmp_path / "only"
    score.main(args(project, only, abstracts=project / "abstracts.parquet")
               + ["--periods", "2019", "--generate-periods", "2019"])
    assert sorted(p.name for p in only.glob("generations_*")) == ["generations_2019.parquet"]
    again = read_json(only / "metrics.json")
    assert again["dev"]["cm"] is None and again["periods"]["2019"]["n_generated"] == 2
    assert again["periods"]["2019"]["ppl"] == m["ppl"]


def test_each_later_period_reads_its_own_history(project, tmp_path, capsys):
    """2019's history is 2017-2018 and nothing else: without 2016's frequencies 2019 is scored;
    without 2017's, 2019's own history fails and a run of 2020-2021 (2018-2020) does not."""
    freq = tmp_path / "frequencies"
    shutil.copytree(project / "frequencies", freq)
    (freq / "2016.parquet").unlink()

    def scoring_2019(out: Path) -> list[str]:
        return args(project, out, frequencies=freq, abstracts=project / "abstracts.parquet",
                    **{"n-generate": 1}) + ["--periods", "2019"]

    score.main(scoring_2019(tmp_path / "out"))
    assert list(read_json(tmp_path / "out" / "metrics.json")["periods"]) == ["2019", "2020",
                                                                             "2021"]
    (freq / "2017.parquet").unlink()
    score.main(args(project, tmp_path / "ok", frequencies=freq, **{"n-generate": 1}))
    err = run_failing(scoring_2019(tmp_path / "fails"), capsys)
    assert "frequencies of 2017 are missing: the history of 2019 needs them" in err


@pytest.mark.slow
def test_every_model_is_scored_once_with_its_own_history(project, tmp_path):
    """A temporal model, its time-free control and a baseline: one pass per period, no
    wrong-history columns or metrics (one other period's history is one unit, not a test; the
    control is the history check)."""
    tok = load_tokenizer(project / "tokenizer")
    lm = GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_layer=1, n_head=2, n_embd=32,
                                    n_positions=128, bos_token_id=0, eos_token_id=0))
    static = make_future_lm(lm, "frequency-nolstm-static", window=2,
                            static_periods=["2017", "2018", "2019"])
    with torch.no_grad():
        static.bias.a.fill_(0.5)
    save_future_lm(static, tmp_path / "static")
    save_future_lm(make_future_lm(lm, "baseline", window=2), tmp_path / "baseline")
    for name in ("static", "baseline"):
        score.main(args(project, tmp_path / f"{name}-scores", model=tmp_path / name,
                        **{"n-generate": 1}))
    score.main(args(project, tmp_path / "temporal-scores", **{"n-generate": 1}))
    for name in ("temporal", "static", "baseline"):
        m = read_json(tmp_path / f"{name}-scores" / "metrics.json")["periods"]["2020"]
        assert not [k for k in m if "shifted" in k]
        tokens = read_parquet(tmp_path / f"{name}-scores" / "tokens_2020.parquet")
        assert not [c for c in tokens.columns if c.endswith("_shifted")]
        assert m["ppl"] == pytest.approx(np.exp(tokens["nll_sum"].sum()
                                                / tokens["n_tokens"].sum()))
    # the control's (time-free) bias is applied: it scores otherwise than the plain LM
    scores = {n: read_json(tmp_path / f"{n}-scores" / "metrics.json")["dev"]["ppl"]
              for n in ("static", "baseline")}
    assert scores["static"] != scores["baseline"]


def sample_by_year_keys(year: int, n: int) -> list[str]:
    return [k for k, _ in sample_by_year()[year][:n]]


def run_failing(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        score.main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_test_period_needs_its_own_history(project, tmp_path, capsys):
    # Test period 2021 reads 2019-2020; without 2020's frequencies it must fail, naming it.
    freq = project / "frequencies" / "2020.parquet"
    moved = project / "2020.parquet.bak"
    freq.rename(moved)
    try:
        err = run_failing(args(project, tmp_path / "out", **{"n-generate": 1}), capsys)
    finally:
        moved.rename(freq)
    assert "frequencies of 2020 are missing" in err and "dvc repro frequencies@2020" in err
    assert not (tmp_path / "out").exists()                 # nothing half-written


def test_bad_inputs_are_messages(project, tmp_path, capsys):
    empty = tmp_path / "empty.parquet"
    write_parquet(pd.DataFrame({"key": pd.Series([], dtype=str), "period": pd.Series([], dtype=str),
                                "title": pd.Series([], dtype=str),
                                "abstract": pd.Series([], dtype=str)}), empty)
    err = run_failing(args(project, tmp_path / "out", test=empty), capsys)
    assert "exactly one period, found no rows" in err and str(empty) in err
    err = run_failing(args(project, tmp_path / "out") + ["--periods", "2019"], capsys)
    assert "pass --abstracts" in err
    err = run_failing(args(project, tmp_path / "out", abstracts=project / "abstracts.parquet")
                      + ["--periods", "2016"], capsys)
    assert "the corpus has no documents in 2016" in err and "score.periods" in err
    err = run_failing(args(project, tmp_path / "out", **{"max-new-tokens": 128}), capsys)
    assert "exceeds the model's context length 128" in err
    damaged = tmp_path / "model"
    shutil.copytree(project / "model", damaged)
    (damaged / "model.safetensors").write_bytes((damaged / "model.safetensors").read_bytes()[:100])
    err = run_failing(args(project, tmp_path / "out", model=damaged), capsys)
    assert "weights cannot be read" in err and str(damaged / "model.safetensors") in err
    assert not (tmp_path / "out").exists()


def test_help_explains_every_option(capsys):
    text = stage_help(capsys, score.main)
    for option in ("--n-generate", "--min-new-tokens", "--top-p", "--stopwords", "--threads",
                   "--periods", "--generate-periods", "--abstracts", "--device"):
        assert option in text


@pytest.mark.slow
def test_scores_across_a_quarter_boundary(project, tmp_path):
    """Dev 2020Q4, test 2021Q1, staleness 2021Q2 from dated corpus rows: each scored with its own
    history across the year boundary (2021Q1 reads 2020Q3, 2020Q4), files and keys by label; no
    period reads the history of the period before it (2020Q1's frequencies are not written)."""
    years = sample_by_year()
    freq = tmp_path / "frequencies"
    tok = load_tokenizer(project / "tokenizer")
    for label, source in (("2020Q2", 2017), ("2020Q3", 2018), ("2020Q4", 2019), ("2021Q1", 2020)):
        write_period(freq / f"{label}.parquet", label,
                     count_tokens(tok, [a for _, a in years[source]]),
                     tokenizer_id=tokenizer_identity(project / "tokenizer"))

    def split(label: str, source: int, n: int) -> pd.DataFrame:
        rows = years[source][:n]
        return pd.DataFrame({"key": [k for k, _ in rows], "period": label, "title": "t",
                             "abstract": [a for _, a in rows]})

    write_parquet(split("2020Q4", 2020, 5), tmp_path / "dev.parquet")
    write_parquet(split("2021Q1", 2021, 5), tmp_path / "test.parquet")
    corpus = split("-", 2019, 6).assign(date=["2021-04-02", "2021-06", "2021-07-01", "2021-03",
                                               "2021", "2021-05-31"]).drop(columns="period")
    write_parquet(corpus, tmp_path / "abstracts.parquet")
    out = tmp_path / "out"
    score.main(args(project, out, frequencies=freq, dev=tmp_path / "dev.parquet",
                    test=tmp_path / "test.parquet", abstracts=tmp_path / "abstracts.parquet",
                    **{"n-generate": 1}) + ["--periods", "2021Q2"])
    metrics = read_json(out / "metrics.json")
    assert (metrics["dev_period"], metrics["test_period"]) == ("2020Q4", "2021Q1")
    assert list(metrics["periods"]) == ["2020Q4", "2021Q1", "2021Q2"]
    assert metrics["periods"]["2021Q2"]["n_abstracts"] == 3          # April-June 2021 only
    assert (out / "positions_2021Q2.parquet").exists() and (out / "tokens_2020Q4.parquet").exists()
    assert read_parquet(out / "tokens_2021Q1.parquet")["period"].eq("2021Q1").all()
