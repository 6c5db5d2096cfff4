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

from pipeline.reports.forecast import PERSISTENCE, verdicts
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
        if year and abstract and int(year.group(1)) in YEARS:
            rows.append({"year": int(year.group(1)), "abstract": abstract.group(1)})
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
    for name in ("Persistence", "Linear extrapolation", "Baseline-all", "Frequency",
                 "Mean reversion", "History-adjusted persistence (Frequency)"):
        assert f"| {name} |" in text
    assert "History-adjusted persistence (Baseline-all)" not in text     # Δ̂ = 0: persistence
    assert "Ranked by vocabulary forecast error" in text and "Ranked by trend detection" in text
    assert "with 1 seed, a model's rank here is indicative only" in text     # --seeds 0
    assert re.search(r"- \*\*2021, vocabulary PPL: (no forecaster beats persistence|\d+ "
                     r"forecaster\(s\) beat persistence)\*\*", text)
    assert re.search(r"- 2021: Frequency (beats|does \*\*not\*\* beat) persistence", text)
    assert "## The forecast for 2022" in text and "### Frequency" in text
    assert "![Top risers" in text and "(../p/r.png)" in text
    assert "## Generated abstracts for 2022" in text
    values = json.loads(metrics.read_text())
    assert values["forecast_period"] == "2022" and list(values["backtests"]) == ["2020", "2021"]
    assert "fits each token's log frequency over the last 2 years" in text
    assert "Forecasts from 2018..2019." in text
    fit = values["mean_reversion"]
    assert fit["fitted_on"] == ["2019"] and 0.0 <= fit["lambda"] <= 1.0   # training years only
    assert f"λ = {fit['lambda']:.2f} fitted on the training years only" in text
    for by in ("2020", "2021"):
        rows = values["backtests"][by]
        assert sorted(r["rank_ppl"] for r in rows.values())[0] == 1 and len(rows) == 6
        assert set(values["beats_persistence"][by]) == {"unigram_ppl", "rho"}
    row = values["backtests"]["2021"]["Persistence"]
    assert row["unigram_ppl_lo"] <= row["unigram_ppl"] <= row["unigram_ppl_hi"]
    assert row["rho"] is None                                    # persistence has no ranking
    assert plot.stat().st_size > 0
    first = out.read_bytes()
    forecast_report.main(args)
    assert out.read_bytes() == first                             # deterministic, bootstrap seeded


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


def test_verdicts_say_each_finding_once() -> None:
    def row(name: str, ppl: float, rho: float, lo: float, hi: float) -> dict:
        return {"forecaster": name, "unigram_ppl": ppl, "vs_persistence": ppl - 100.0,
                "vs_persistence_lo": ppl - 101.0, "vs_persistence_hi": ppl - 99.0,
                "rho": rho, "rho_lo": lo, "rho_hi": hi}
    table = pd.DataFrame([row(PERSISTENCE, 100.0, np.nan, np.nan, np.nan),
                          row("Frequency", 90.0, 0.5, 0.2, 0.7),
                          row("Context", 110.0, -0.4, -0.6, -0.2),
                          row("Context²", 100.5, 0.0, -0.2, 0.2)])
    lines = verdicts(table, ["baseline", "frequency", "context", "context2"], "2021")
    assert lines[0].startswith("- 2021: Frequency beats persistence")
    assert lines[1].startswith("- 2021: Frequency detects trends (Spearman ρ +0.500")
    assert "Context does **not** beat persistence" in lines[2]
    assert lines[3].startswith("- 2021: Context ranks trends in the **wrong direction** (Spearman")
    assert lines[5].startswith("- 2021: Context² does **not** reliably detect trends (Spearman")
    assert not any("trends trends" in line or "** trends" in line for line in lines)


def test_backtests_and_forecast_across_a_quarter_boundary() -> None:
    """Forecast 2021Q2 with a backtest of 2021Q1: the backtest compares 2021Q1 with 2020Q4 (the
    period before, across the year boundary) and fits from 2020Q3..2020Q4; periods in time
    order, the text says "quarter"."""
    from pipeline.features.frequencies import PeriodFrequencies, log_frequencies
    from pipeline.reports.forecast import ModelForecast, render

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
    text, metrics, panels = render(forecasts, ["frequency"], [0], "2021Q2", ["2021Q1"], freqs,
                                   content, content, [f"w{i}" for i in range(vocab)], 2)
    assert metrics["forecast_period"] == "2021Q2" and list(metrics["backtests"]) == ["2021Q1"]
    pers = metrics["backtests"]["2021Q1"]["Persistence"]["unigram_ppl"]
    want = np.exp(-(freqs["2021Q1"].counts * log_frequencies(freqs["2020Q4"].counts)).sum()
                  / freqs["2021Q1"].counts.sum())
    assert pers == pytest.approx(want)                  # persistence of 2020Q4 scored on 2021Q1
    assert "Forecasts from 2020Q3..2020Q4." in text and "### 2021Q1" in text
    assert "observed counts in 2020Q4-2021Q1" in text and "the abstracts of 2021Q1" in text
    assert "over the last 2 quarters" in text and "vocabulary of quarter Y" in text
    panel = panels["Frequency"]
    assert list(dict.fromkeys(panel["period"])) == labels + ["2021Q2"]   # time order


def _reverting_freqs(vocab: int = 40, amp: float = 0.3) -> dict:
    """Frequencies 2016-2021 whose log frequencies alternate around a fixed level: each token
    goes up by ``amp`` in one year and back down in the next (trends revert), 200,000 tokens a
    year."""
    from pipeline.features.frequencies import PeriodFrequencies, log_frequencies

    rng = np.random.default_rng(3)
    base = np.log(rng.dirichlet(np.full(vocab, 5.0)))
    sign = rng.choice([-1.0, 1.0], vocab)
    freqs = {}
    for year in range(2016, 2022):
        logits = base + amp * sign * (-1) ** year
        counts = np.rint(200_000 * np.exp(logits) / np.exp(logits).sum()).astype(np.int64)
        freqs[str(year)] = PeriodFrequencies(str(year), counts, log_frequencies(counts),
                                             int(counts.sum()))
    return freqs


def test_report_ranks_every_forecaster_and_names_who_beats_persistence() -> None:
    """Trends that revert every year; the Frequency model's predicted change for 2021 is exactly
    the observed one, its own distribution a poor one. History-adjusted persistence is then the
    observed 2021 distribution (rank 1), mean reversion (λ fitted on 2016-2018 alone: 1, the
    window's mean) second, persistence third and linear extrapolation, which continues last
    year's change, worse than persistence; the model's own forecast loses too."""
    from pipeline.reports.forecast import ModelForecast, render

    freqs = _reverting_freqs()
    vocab = len(freqs["2021"].counts)
    prior = -3.0 * freqs["2021"].log_freq            # the LM's unigram level: far off the data
    prior -= np.log(np.exp(prior).sum())
    frames = {}
    for p in ("2021", "2022"):
        change = freqs["2021"].log_freq - freqs["2020"].log_freq
        if p == "2022":
            change = -change
        own = prior + change
        frames[p] = pd.DataFrame({"token_id": np.arange(vocab), "log_prob": own - np.log(
            np.exp(own).sum()), "log_prob_prev": prior})
    gens = pd.DataFrame({"index": [0], "seed": [0], "text": ["an abstract"], "period": "2022"})
    forecasts = {("frequency", 0): ModelForecast("frequency", 0, {}, frames, gens)}
    content = np.ones(vocab, dtype=bool)
    text, metrics, _ = render(forecasts, ["frequency"], [0], "2022", ["2021"], freqs, content,
                              content, [f"w{i}" for i in range(vocab)], 2,
                              train_periods=["2016", "2017", "2018"])
    assert metrics["mean_reversion"]["lambda"] == 1.0
    assert metrics["mean_reversion"]["fitted_on"] == ["2018"]
    rows = metrics["backtests"]["2021"]
    adjusted = "History-adjusted persistence (Frequency)"
    ranks = {name: row["rank_ppl"] for name, row in rows.items()}
    assert ranks == {adjusted: 1, "Mean reversion": 2, "Persistence": 3,
                     "Linear extrapolation": 4, "Frequency": 5}
    # p̃ = persistence · exp(Δ̂), renormalised, is the smoothed 2021 distribution itself
    want = np.exp(-(freqs["2021"].counts * freqs["2021"].log_freq).sum() / freqs["2021"].n_tokens)
    assert rows[adjusted]["unigram_ppl"] == pytest.approx(want)
    won = metrics["beats_persistence"]["2021"]
    assert won["unigram_ppl"] == [adjusted, "Mean reversion"]                 # best first
    assert set(won["rho"]) == {adjusted, "Frequency", "Mean reversion"}
    assert rows["Linear extrapolation"]["rho_hi"] < 0                      # trends revert
    assert rows["Frequency"]["rank_rho"] == rows[adjusted]["rank_rho"] == 1   # the same Δ̂
    assert rows["Persistence"]["rank_rho"] is None
    assert f"| 1 | {adjusted} |" in text and "| 3 | Persistence |" in text
    assert ("- **2021, vocabulary PPL: 2 forecaster(s) beat persistence** (PPL "
            f"{rows['Persistence']['unigram_ppl']:.1f}") in text
    assert f"): {adjusted} (PPL" in text
    assert "λ = 1.00 fitted on the training years only: one-step forecasts of 2018" in text
    assert "| — | Persistence | — (no change predicted)" in text


def test_when_nothing_beats_persistence_the_report_says_so() -> None:
    from pipeline.reports.forecast_backtests import add_ranks, beats_persistence, winners_markdown

    def row(name: str, ppl: float, lo: float, hi: float, rho: float, rho_lo: float) -> dict:
        return {"forecaster": name, "unigram_ppl": ppl, "vs_persistence": ppl - 100.0,
                "vs_persistence_lo": lo, "vs_persistence_hi": hi,
                "rho": rho, "rho_lo": rho_lo, "rho_hi": rho + 0.1}
    table = add_ranks(pd.DataFrame([row(PERSISTENCE, 100.0, np.nan, np.nan, np.nan, np.nan),
                                    row("Mean reversion", 99.9, -0.3, 0.1, 0.05, -0.02),
                                    row("Linear extrapolation", 104.0, 3.0, 5.0, -0.3, -0.4)]))
    assert table.set_index("forecaster")["rank_ppl"].to_dict() == {
        "Mean reversion": 1, PERSISTENCE: 2, "Linear extrapolation": 3}
    assert beats_persistence(table) == {"unigram_ppl": [], "rho": []}
    lines = winners_markdown(table, "2021")
    assert lines[0].startswith("- **2021, vocabulary PPL: no forecaster beats persistence** "
                               "(PPL 100.0)")
    assert lines[1].startswith("- **2021, trend ranking: no forecaster beats persistence**")
