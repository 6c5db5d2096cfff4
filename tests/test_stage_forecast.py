"""`python -m stages.forecast` and `stages.forecast_report` end to end on real sample abstracts
with tiny saved future LMs: a forecast beyond the corpus, backtests, and the errors users see."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from pipeline.features.frequencies import count_tokens, write_period
from pipeline.models.future_lm import make_future_lm, save_future_lm, scratch_gpt2
from pipeline.infra.identity import tokenizer_identity
from pipeline.infra.io import read_json, read_parquet, write_parquet
from pipeline.features.tokenizer import train_scratch_tokenizer
from stages import forecast, forecast_report
from tests.variant_settings import sized

REPO = Path(__file__).resolve().parents[1]
STOPWORDS = REPO / "data" / "reference" / "stopwords.txt"
YEARS = range(2017, 2022)            # the corpus ends in 2021; 2022 is the future


def sample_abstracts() -> pd.DataFrame:
    """Year and abstract of the embedded sample's entries, read with a plain regex."""
    text = gzip.open(REPO / "data" / "sample" / "anthology-sample.bib.gz", "rt").read()
    rows = []
    for entry in text.split("\n@")[1:]:
        year = re.search(r'^\s*year = "(\d{4})"', entry, flags=re.M)
        abstract = re.search(r'^\s*abstract = [{"](.*?)["}],?$', entry, flags=re.M)
        key = re.match(r"\w+\{([^,]+),", entry)
        if year and abstract and int(year.group(1)) in YEARS:
            rows.append({"key": key.group(1), "year": int(year.group(1)),
                         "abstract": abstract.group(1)})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """Corpus 2017-2021 (40 abstracts a year), tokenizer, frequencies, Baseline + Frequency."""
    root = tmp_path_factory.mktemp("forecast")
    corpus = sample_abstracts().groupby("year").head(40).reset_index(drop=True)
    write_parquet(corpus, root / "abstracts.parquet")
    tok = train_scratch_tokenizer(corpus["abstract"].tolist(), 400)
    tok.save_pretrained(root / "tokenizer")
    for y in YEARS:
        write_period(root / "frequencies" / f"{y}.parquet", str(y),
                   count_tokens(tok, corpus.loc[corpus["year"] == y, "abstract"].tolist()),
                   tokenizer_id=tokenizer_identity(root / "tokenizer"))
    for variant in ("baseline", "frequency"):
        torch.manual_seed(0)
        lm = scratch_gpt2(len(tok), tok.eos_token_id, n_layer=1, n_head=2, n_embd=16,
                          n_positions=64, dropout=0.0)
        model = make_future_lm(lm, variant, window=2, settings=sized(variant, 4),
                               context_length=48, seed=0)
        with torch.no_grad():
            for p in (model.bias.parameters() if model.bias is not None else []):
                p.normal_(0, 1.0)
        save_future_lm(model, root / "models" / f"{variant}-s0")
    return root


def forecast_args(root: Path, variant: str, year: int | str, out: Path, *extra: str) -> list[str]:
    return ["--model", str(root / "models" / f"{variant}-s0"),
            "--abstracts", str(root / "abstracts.parquet"), "--tokenizer", str(root / "tokenizer"),
            "--frequencies", str(root / "frequencies"), "--period", str(year),
            "--n-generate", "2", "--max-new-tokens", "12", "--num-beams", "2", "--threads", "1",
            "--out", str(out), *extra]


@pytest.fixture(scope="module")
def forecasts(project) -> Path:
    out = project / "forecast"
    for variant in ("baseline", "frequency"):
        forecast.main(forecast_args(project, variant, 2022, out / f"{variant}-s0",
                                    "--backtest-periods", "2021", "2020"))
    return out


@pytest.mark.slow
def test_forecast_beyond_the_corpus_needs_no_data_of_that_period(project, forecasts):
    assert not (project / "frequencies" / "2022.parquet").exists()
    assert read_parquet(project / "abstracts.parquet")["year"].max() == 2021
    folder = forecasts / "frequency-s0"
    info = read_json(folder / "forecast.json")
    assert info["forecast_period"] == "2022" and info["backtest_periods"] == ["2020", "2021"]
    assert list(info["periods"]) == ["2020", "2021", "2022"]                # time order
    assert info["periods"]["2022"]["reference_period"] == "2021"
    assert info["periods"]["2022"]["n_contexts"] == 40
    for year in (2020, 2021, 2022):
        vocab = read_parquet(folder / f"vocab_{year}.parquet")
        assert np.exp(vocab["log_prob"]).sum() == pytest.approx(1.0)
        assert np.exp(vocab["log_prob_prev"]).sum() == pytest.approx(1.0)
    gens = read_parquet(folder / "generations_2022.parquet")
    assert gens["index"].tolist() == [0, 1] and (gens["period"] == "2022").all()
    base = read_parquet(forecasts / "baseline-s0" / "vocab_2022.parquet")
    assert (base["log_prob"] == base["log_prob_prev"]).all()       # no history, no change
    # the predicted change from half A of Y-1 (the trend test): frequency models only
    half = read_parquet(folder / "vocab_2021.parquet")
    assert np.exp(half["log_prob_half"]).sum() == pytest.approx(1.0)
    assert not np.array_equal(half["log_prob_half"], half["log_prob"])   # other contexts
    assert 0 < info["periods"]["2021"]["half_a"]["n_contexts"] < 40
    assert "log_prob_half" not in base.columns
    assert "no history" in read_json(forecasts / "baseline-s0" / "forecast.json")[
        "periods"]["2021"]["half_a"]["why_not"]


def test_precision_flag_sets_the_forward_passes_precision(project, forecasts, tmp_path):
    """--precision (the graph passes score.precision): fp32 is the default, bf16 autocast is
    applied to the forecast's passes (a different, close distribution); unknown ones refused."""
    default = read_parquet(forecasts / "frequency-s0" / "vocab_2022.parquet")
    forecast.main(forecast_args(project, "frequency", 2022, tmp_path / "fp32", "--precision", "fp32"))
    pd.testing.assert_frame_equal(read_parquet(tmp_path / "fp32" / "vocab_2022.parquet"), default)
    forecast.main(forecast_args(project, "frequency", 2022, tmp_path / "bf16", "--precision", "bf16"))
    bf16 = read_parquet(tmp_path / "bf16" / "vocab_2022.parquet")
    assert not np.array_equal(bf16["log_prob"], default["log_prob"])
    assert np.abs(np.exp(bf16["log_prob"]) - np.exp(default["log_prob"])).sum() < 0.05
    with pytest.raises(SystemExit) as exit_info:
        forecast.main(forecast_args(project, "frequency", 2022, tmp_path / "x", "--precision", "fp16"))
    assert exit_info.value.code == 2 and not (tmp_path / "x").exists()


def test_missing_history_is_a_clear_error_naming_the_period(project, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        forecast.main(forecast_args(project, "frequency", 2030, tmp_path / "out"))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "cannot forecast 2030" in err and "2028" in err
    assert not (tmp_path / "out").exists()


def test_report_backtests_terms_and_abstracts(project, forecasts, tmp_path):
    out, metrics, plot = tmp_path / "reports" / "forecast.md", tmp_path / "m.json", tmp_path / "p" / "r.png"
    args = ["--forecasts", str(forecasts), "--variants", "baseline", "frequency", "--seeds", "0",
            "--period", "2022", "--backtest-periods", "2020", "2021", "--window", "2",
            "--train-periods", "2017", "2018", "2019",
            "--frequencies", str(project / "frequencies"), "--tokenizer", str(project / "tokenizer"),
            "--stopwords", str(STOPWORDS), "--abstracts", str(project / "abstracts.parquet"),
            "--out", str(out), "--json", str(metrics), "--plot", str(plot)]
    forecast_report.main(args)
    text = out.read_text()
    assert "## Backtests" in text and "### 2020" in text and "### 2021" in text
    for name in ("Persistence", "Pooled past", "Mean reversion", "Linear extrapolation",
                 "Baseline-all", "Frequency", "History-adjusted persistence (Frequency)"):
        assert f"| {name} |" in text
    assert "History-adjusted persistence (Baseline-all)" not in text     # Δ̂ = 0: persistence
    assert "beats persistence" not in text and "beat persistence" not in text
    assert "every vocabulary claim is made against each of them" in text
    assert "## The forecast for 2022" in text and "### Frequency" in text
    assert "![Top risers" in text and "(../p/r.png)" in text
    assert "## Generated abstracts for 2022" in text
    values = json.loads(metrics.read_text())
    assert values["forecast_period"] == "2022" and list(values["backtests"]) == ["2020", "2021"]
    stationary = values["stationary"]
    assert all(b["fitted_on"] == ["2019"] for b in stationary["baselines"].values())
    reference = stationary["reference"]
    records = values["verdicts"]
    assert {r["family"] for r in records} == {"forecast-vocabulary", "forecast-trend"}
    assert {r["scope"] for r in records} == {"2020", "2021"}
    vocab = [r for r in records if r["family"] == "forecast-vocabulary" and r["scope"] == "2021"]
    # 4 forecasters (linear extrapolation, Baseline, Frequency, Frequency's adjusted persistence)
    # against each of the 3 stationary baselines; the best fit is named, not the only reference
    assert len(vocab) == 12 and {r["b"] for r in vocab} == set(stationary["baselines"])
    assert reference in stationary["baselines"]
    assert all(r["unit"] == "abstracts" and r["n"] == 40 for r in vocab)
    freq = next(r for r in vocab if r["a"] == "Frequency")
    assert freq["seeds"] == [1, 0] and freq["verdict"] == "untested"   # 1 seed: spread unknown
    trend = {r["a"]: r for r in records if r["family"] == "forecast-trend" and r["scope"] == "2021"}
    assert "Persistence" not in trend and "Baseline-all" not in trend    # no change predicted
    assert "Frequency" in trend and "Linear extrapolation" in trend
    row = values["backtests"]["2021"]["vocabulary"]["Persistence"]
    assert row["ppl_lo"] <= row["ppl"] <= row["ppl_hi"]
    assert plot.stat().st_size > 0
    first = out.read_bytes()
    forecast_report.main(args)
    assert out.read_bytes() == first                             # deterministic


def test_report_refuses_a_forecast_for_another_period(project, forecasts, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        forecast_report.main([
            "--forecasts", str(forecasts), "--variants", "frequency", "--seeds", "0",
            "--period", "2023", "--window", "2", "--frequencies", str(project / "frequencies"),
            "--tokenizer", str(project / "tokenizer"), "--stopwords", str(STOPWORDS),
            "--abstracts", str(project / "abstracts.parquet"), "--out", str(tmp_path / "f.md"),
            "--json", str(tmp_path / "m.json"), "--plot", str(tmp_path / "p.png")])
    assert exit_info.value.code == 2
    assert "for forecast period 2022, not 2023" in capsys.readouterr().err


def _documents(label: str, counts: np.ndarray, n_docs: int = 20):
    """Documents whose tokens add up to ``counts`` (shuffled, split evenly; seeded)."""
    from pipeline.forecast.documents import PeriodDocuments

    flat = np.random.default_rng(5).permutation(np.repeat(np.arange(len(counts)), counts))
    lengths = np.diff(np.linspace(0, len(flat), n_docs + 1).astype(np.int64))
    return PeriodDocuments(label, tuple(f"{label}-{i}" for i in range(n_docs)), flat,
                           lengths, len(counts))


def test_backtests_and_forecast_across_a_quarter_boundary() -> None:
    """Forecast 2021Q2 with a backtest of 2021Q1: the backtest compares 2021Q1 with 2020Q4 (the
    period before, across the year boundary) and fits from 2020Q3..2020Q4; periods in time
    order, the text says "quarter"."""
    from pipeline.features.frequencies import PeriodFrequencies, log_frequencies
    from pipeline.reports.forecast import render
    from pipeline.reports.forecast_inputs import ModelForecast

    vocab, rng = 12, np.random.default_rng(0)
    labels = ["2020Q2", "2020Q3", "2020Q4", "2021Q1"]
    freqs = {}
    for label in reversed(labels):                       # given out of order
        counts = rng.integers(20, 200, vocab)
        freqs[label] = PeriodFrequencies(label, counts, log_frequencies(counts), int(counts.sum()))
    frames = {p: pd.DataFrame({"token_id": np.arange(vocab),
                               "log_prob": np.log(np.full(vocab, 1 / vocab)),
                               "log_prob_prev": np.log(np.full(vocab, 1 / vocab))
                               + rng.normal(0, 0.1, vocab)}) for p in ("2021Q1", "2021Q2")}
    gens = pd.DataFrame({"index": [0], "seed": [0], "text": ["an abstract"], "period": "2021Q2"})
    forecasts = {("frequency", 0): ModelForecast("frequency", 0, {}, frames, gens)}
    content = np.ones(vocab, dtype=bool)
    documents = {p: _documents(p, freqs[p].counts) for p in ("2020Q4", "2021Q1")}
    text, metrics, panels = render(forecasts, ["frequency"], [0], "2021Q2", ["2021Q1"], freqs,
                                   content, content, [f"w{i}" for i in range(vocab)], 2,
                                   documents=documents)
    assert metrics["forecast_period"] == "2021Q2" and list(metrics["backtests"]) == ["2021Q1"]
    pers = metrics["backtests"]["2021Q1"]["vocabulary"]["Persistence"]["ppl"]
    alpha = metrics["stationary"]["baselines"]["Persistence"]["alpha"]
    assert alpha == 1.0                                  # no training period: not fitted
    want = np.exp(-(freqs["2021Q1"].counts * log_frequencies(freqs["2020Q4"].counts)).sum()
                  / freqs["2021Q1"].counts.sum())
    assert pers == pytest.approx(want)                  # persistence of 2020Q4 scored on 2021Q1
    trend = [r for r in metrics["verdicts"] if r["family"] == "forecast-trend"]
    model = next(r for r in trend if r["a"] == "Frequency")
    assert model["p"] is None and "half A" in model["note"]     # no half-A change: untested
    assert "Forecasts from 2020Q3..2020Q4;" in text and "### 2021Q1" in text
    assert "observed counts in 2020Q4-2021Q1" in text and "the abstracts of 2021Q1" in text
    assert "over the last 2 quarters" in text and "vocabulary of quarter Y" in text
    panel = panels["Frequency"]
    assert list(dict.fromkeys(panel["period"])) == labels + ["2021Q2"]   # time order
