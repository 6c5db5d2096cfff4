"""Report: Table 3 (descriptive: means and stds, no tests), staleness, buckets, CLI."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from pipeline.infra.errors import UserError
from pipeline.corpus.periods import ordinal
from pipeline.features.frequencies import read_period, write_period
from pipeline.infra.io import write_json, write_parquet
from pipeline.models.registry import display_name
from pipeline.reports.results import comparable, details_json, headline, render
from pipeline.reports.scored_runs import load_runs, summarize
from stages import report as cli

KEYS = [f"paper{i}" for i in range(12)]
# Words and keys of a test or a verdict: outside the verdict sections the report has none.
INFERENCE = re.compile(r"p-value|p =|sign test|rank-sum|Wilcoxon|signific|\bbetter\b|\bworse\b",
                       re.IGNORECASE)
SPLIT_KEYS = {"period", "ppl", "ppl_std", "cm", "cm_std", "cpl", "cpl_std"}
PERIODS = ("2020", "2021", "2022")
VOCAB = 40
PAIR = ["baseline", "frequency"]


def _each(variants: list[str], seeds: list[int]) -> dict[str, list[int]]:
    """Every variant with the same seeds."""
    return dict.fromkeys(variants, seeds)


def write_scores(root, variant: str, seed: int, nll_shift: float, cm_shift: float,
                 rng_seed: int | None = None, periods=PERIODS, dev: str = "2020",
                 test: str = "2021", generated=None) -> None:
    """A score folder in the score stage's per-period layout (docs/formats.md) with known numbers;
    ``periods`` in the order metrics.json lists them (PPL rises by 5 per period after ``dev``);
    generations for ``generated`` (default: every period)."""
    rng = np.random.default_rng(seed if rng_seed is None else rng_seed)
    folder = root / f"{variant}-s{seed}"
    metrics = {"variant": variant, "seed": seed, "dev_period": dev, "test_period": test,
               "periods": {}}
    for year in periods:
        n = np.full(len(KEYS), 50)
        nll = (rng.uniform(150, 200, len(KEYS)) + nll_shift * n
               + (ordinal(year) - ordinal(dev)) * 5.0)
        n_content = np.full(len(KEYS), 10)
        c_nll = rng.uniform(60, 80, len(KEYS)) + nll_shift * n_content
        tokens = pd.DataFrame({"key": KEYS, "period": year, "n_tokens": n, "nll_sum": nll,
                               "n_content": n_content, "content_nll_sum": c_nll})
        write_parquet(tokens, folder / f"tokens_{year}.parquet")
        cm = np.clip(rng.uniform(0.1, 0.2, 5) + cm_shift, 0, 1)
        if generated is None or year in generated:
            gens = pd.DataFrame({"index": range(5), "seed": range(5), "period": year,
                                 "text": [f"{variant} abstract {i} for {year}." for i in range(5)],
                                 "n_new_tokens": 7, "cm": cm, "cm_gold_key": KEYS[:5]})
            write_parquet(gens, folder / f"generations_{year}.parquet")
        positions = pd.DataFrame({
            "abstract": np.repeat(np.arange(4, dtype=np.int32), 10),
            "position": np.tile(np.arange(10, dtype=np.int32), 4),
            "target_id": rng.integers(0, VOCAB, 40).astype(np.int32),
            "nll": rng.uniform(1, 8, 40) + nll_shift, "top10": rng.uniform(size=40) < 0.4})
        write_parquet(positions, folder / f"positions_{year}.parquet")
        metrics["periods"][year] = {
            "ppl": float(np.exp(nll.sum() / n.sum())),
            "cpl": float(np.exp(c_nll.sum() / n_content.sum())),
            "cm": float(cm.mean()) if generated is None or year in generated else None,
            "n_abstracts": len(KEYS), "n_tokens": int(n.sum())}
    metrics["dev"], metrics["test"] = metrics["periods"][dev], metrics["periods"][test]
    write_json(metrics, folder / "metrics.json")


@pytest.fixture()
def scores(tmp_path):
    root = tmp_path / "scores"
    for seed in (0, 1):
        write_scores(root, "baseline", seed, 0.0, 0.0)
        write_scores(root, "frequency", seed, -1.0, 0.3)      # better everywhere
        write_scores(root, "context2", seed, 0.0, 0.0)
    return root


@pytest.fixture()
def frequencies(tmp_path):
    folder = tmp_path / "frequencies"
    rng = np.random.default_rng(7)
    for year in range(2017, 2022):
        write_period(folder / f"{year}.parquet", str(year), rng.integers(0, 30, VOCAB))
    return folder


def test_table3_describes_means_and_stds_without_tests(scores):
    variants = ["baseline", "frequency", "context2"]
    runs = load_runs(scores, variants, _each(variants, [0, 1]))
    summary = summarize(runs, variants, _each(variants, [0, 1]), "baseline")
    text = render(runs, summary, variants, _each(variants, [0, 1]), 2)
    ppls = [runs[("frequency", s)].period_metrics("2021")["ppl"] for s in (0, 1)]
    assert summary["frequency"]["test"]["ppl"] == pytest.approx(np.mean(ppls))
    assert summary["frequency"]["test"]["ppl_std"] == pytest.approx(np.std(ppls, ddof=1))
    cms = [runs[("context2", s)].period_metrics("2020")["cm"] for s in (0, 1)]
    assert summary["context2"]["dev"]["cm"] == pytest.approx(np.mean(cms))
    assert summary["context2"]["dev"]["cm_std"] == pytest.approx(np.std(cms, ddof=1))
    # every variant, the baseline too, has the same keys: numbers, no p-values or counts
    for v in variants:
        assert summary[v].keys() == {"seeds", "dev", "test", "periods"}
        assert summary[v]["dev"].keys() == summary[v]["test"].keys() == SPLIT_KEYS
    assert summary["frequency"]["dev"]["period"] == "2020"
    header = ("| Model | Dev 2020 PPL | Dev 2020 CM | Dev 2020 CPL | Test 2021 PPL | Test 2021 CM "
              "| Test 2021 CPL |")
    assert text.count(header) == 1            # one table: no companion table of p-values
    line = next(l for l in text.splitlines() if l.startswith("| Frequency |"))
    assert f"{summary['frequency']['test']['ppl']:.2f} ± " in line
    assert line.count("|") == 8               # model + 6 metric cells
    assert "The table describes; it tests nothing." in text
    assert "Verdicts section below" in text
    assert not INFERENCE.search(text), INFERENCE.search(text)
    assert text.count("frequency abstract") == 2                    # Table 2: 2 examples each
    assert "1. (CM " in text and "### Context²" in text
    assert "## Table 2: generated abstracts for the test year (2021, seed 0)" in text
    assert "each year scored with its own history" in text


def test_identical_seeds_have_the_means_of_one_seed_and_no_spread(tmp_path):
    """Three copies of the same seed: the same means as that seed, a standard deviation of 0."""
    root = tmp_path / "scores"
    for seed in (0, 1, 2):
        write_scores(root, "baseline", seed, 0.0, 0.0, rng_seed=0)
        write_scores(root, "frequency", seed, -0.05, 0.01, rng_seed=1)
    one = summarize(load_runs(root, PAIR, _each(PAIR, [0])), PAIR, _each(PAIR, [0]), "baseline")
    three = summarize(load_runs(root, PAIR, _each(PAIR, [0, 1, 2])), PAIR,
                      _each(PAIR, [0, 1, 2]), "baseline")
    for split in ("dev", "test"):
        for metric in ("ppl", "cpl", "cm"):
            assert three["frequency"][split][metric] == pytest.approx(one["frequency"][split][metric])
            assert one["frequency"][split][f"{metric}_std"] is None
            assert three["frequency"][split][f"{metric}_std"] == pytest.approx(0.0, abs=1e-9)
    assert three["frequency"]["seeds"] == [0, 1, 2]
    assert list(three["frequency"]["periods"]) == list(one["frequency"]["periods"])
    for period, means in one["frequency"]["periods"].items():
        assert three["frequency"]["periods"][period] == pytest.approx(means)


def test_single_seed_has_no_std(scores):
    runs = load_runs(scores, PAIR, _each(PAIR, [0]))
    summary = summarize(runs, PAIR, _each(PAIR, [0]), "baseline")
    text = render(runs, summary, PAIR, _each(PAIR, [0]), 1)
    assert summary["frequency"]["dev"]["ppl_std"] is None
    assert "±" not in text.split("## Table 2")[0].split("Cells:")[1]


def test_missing_scores_old_layout_and_baseline_are_clear_errors(scores, tmp_path):
    with pytest.raises(UserError, match="scores of context seed 0 are missing"):
        load_runs(scores, ["baseline", "context"], _each(["baseline", "context"], [0]))
    runs = load_runs(scores, ["frequency"], _each(["frequency"], [0]))
    with pytest.raises(ValueError, match="baseline 'baseline' is not among"):
        summarize(runs, ["frequency"], _each(["frequency"], [0]), "baseline")
    old = tmp_path / "old" / "baseline-s0"
    write_json({"variant": "baseline", "dev": {}, "test": {}}, old / "metrics.json")
    with pytest.raises(UserError, match="predates per-period scoring"):
        load_runs(tmp_path / "old", ["baseline"], _each(["baseline"], [0]))


def test_display_names():
    assert display_name("baseline") == "Baseline-all"
    assert display_name("baseline-2") == "Baseline-2"
    assert display_name("context2") == "Context²"


def test_cli_writes_report_metrics_staleness_and_buckets(scores, frequencies, tmp_path):
    out, metrics, plots = tmp_path / "r" / "results.md", tmp_path / "m", tmp_path / "p" / "results.csv"
    corpus, details = tmp_path / "corpus.json", tmp_path / "r" / "results.json"
    write_json({"per_year": {str(y): {"kept": 3} for y in range(2015, 2023)}}, corpus)
    args = ["--scores", str(scores), "--variants", "baseline", "frequency", "context2",
            "--seeds", "0", "1", "--baseline", "baseline", "--examples", "3",
            "--frequencies", str(frequencies), "--window", "2", "--train-periods", "2018", "2019",
            "--corpus-counts", str(corpus), "--details", str(details),
            "--out", str(out), "--metrics-dir", str(metrics), "--plots", str(plots),
            "--staleness", str(tmp_path / "p" / "staleness.csv"),
            "--buckets", str(tmp_path / "p" / "buckets.csv")]
    cli.main(args)
    text = out.read_text()
    assert "## Table 3" in text and "## Staleness" in text and "## Long tail" in text
    assert "2022 holds the corpus's last document (dated 2022)" in text
    assert "![PPL and CPL by year](../p/staleness.png)" in text
    assert sorted(p.name for p in metrics.iterdir()) == ["baseline.json", "context2.json",
                                                          "frequency.json"]
    # the DVC metrics: the headline numbers only; the rest in the details JSON
    numbers = json.loads((metrics / "frequency.json").read_text())
    assert numbers.keys() == {"dev", "test"}
    assert all(numbers[s].keys() == {"ppl", "cpl", "cm"} for s in ("dev", "test"))
    every = json.loads(details.read_text())
    assert every["baseline"] == "baseline"
    freq = every["variants"]["frequency"]
    assert numbers["test"]["ppl"] == round(freq["test"]["ppl"], 2)   # as Table 3 prints it
    assert freq["seeds"] == [0, 1]
    # results.json's numbers describe: no test outside the verdict records
    for entry in every["variants"].values():
        assert entry["dev"].keys() == entry["test"].keys() == SPLIT_KEYS
    assert not INFERENCE.search(json.dumps(every["variants"]))
    assert every.keys() == {"baseline", "variants", "venue_clusters", "verdicts"}
    # the stage ran without --abstracts: no groups, the abstracts taken as independent
    assert every["venue_clusters"] == []
    assert {r["unit"] for r in every["verdicts"] if r["metric"] == "PPL"} == {"abstracts"}
    assert {r["family"] for r in every["verdicts"]} >= {"variant"}
    # results.md: the only p-values and verdict words are the verdict sections'
    assert text.index("## Table 3") < text.index("## Verdicts")
    before, _ = text.split("## Verdicts", 1)
    assert not INFERENCE.search(before), INFERENCE.search(before)
    assert list(freq["periods"]) == ["2020", "2021", "2022"] and freq["test"]["period"] == "2021"
    frame = pd.read_csv(plots)
    assert frame["variant"].tolist() == ["Baseline-all", "Frequency", "Context²"]
    stale = pd.read_csv(tmp_path / "p" / "staleness.csv", dtype={"period": str})
    assert list(stale.columns) == ["model", "period", "ppl", "cpl"]   # the plot's x: period
    assert len(stale) == 9 and stale["period"].tolist()[:3] == ["2020", "2021", "2022"]
    runs = load_runs(scores, ["frequency"], _each(["frequency"], [0, 1]))
    want = np.mean([runs[("frequency", s)].period_metrics("2022")["ppl"] for s in (0, 1)])
    got = stale[(stale["model"] == "Frequency") & (stale["period"] == "2022")]["ppl"].iat[0]
    assert got == pytest.approx(want, rel=1e-5)
    buckets = pd.read_csv(tmp_path / "p" / "buckets.csv", dtype={"period": str})
    assert set(buckets["bucket"]) == {"unseen", "1", "2-10", "11-100", ">100", "emerging"}
    # the plot's x: labels whose text order is the frequency order
    assert sorted(set(buckets["history_bucket"])) == ["0: unseen", "1: 1", "2: 2-10", "3: 11-100",
                                                      "4: >100", "5: emerging"]
    seen = buckets[buckets["n"] > 0]
    assert (seen[seen["model"] == "Baseline-all"]["nll_vs_baseline"] == 0).all()
    pair = seen[seen["bucket"] == "11-100"].set_index(["model", "period"])
    assert pair.loc[("Frequency", "2021"), "nll_vs_baseline"] == pytest.approx(
        pair.loc[("Frequency", "2021"), "mean_nll"] - pair.loc[("Baseline-all", "2021"), "mean_nll"],
        abs=1e-4)
    # the unigram reference: the training years' summed counts, add-one, on run 1's targets
    counts = sum(read_period(frequencies / f"{y}.parquet").counts for y in (2018, 2019))
    log_p = np.log((counts + 1) / (counts.sum() + VOCAB))
    targets = load_runs(scores, ["baseline"], {"baseline": [0]})[("baseline", 0)].positions(
        "2021")["target_id"]
    want_unigram = np.exp(-log_p[targets.to_numpy()].mean())
    assert f"- 2021: unigram PPL {want_unigram:.2f} over 40 tokens; lowest model PPL Frequency" in text
    assert (tmp_path / "p" / "staleness.png").stat().st_size > 0
    assert (tmp_path / "p" / "buckets.png").stat().st_size > 0
    first = out.read_bytes()
    cli.main(args)
    assert out.read_bytes() == first                                 # deterministic


def test_a_run_without_dev_generations_reports_cm_for_the_test_year_only(frequencies, tmp_path):
    # score.generate_dev: false -- the score stages generate for the test period alone
    scores = tmp_path / "scores"
    for seed in (0, 1):
        write_scores(scores, "baseline", seed, 0.0, 0.0, generated=("2021",))
        write_scores(scores, "frequency", seed, -1.0, 0.3, generated=("2021",))
    out, metrics, details = tmp_path / "r" / "results.md", tmp_path / "m", tmp_path / "r.json"
    cli.main(["--scores", str(scores), "--variants", *PAIR, "--seeds", "0", "1",
              "--baseline", "baseline", "--examples", "3", "--frequencies", str(frequencies),
              "--window", "2", "--train-periods", "2018", "2019", "--details", str(details),
              "--out", str(out), "--metrics-dir", str(metrics),
              "--plots", str(tmp_path / "p" / "results.csv"),
              "--staleness", str(tmp_path / "p" / "staleness.csv"),
              "--buckets", str(tmp_path / "p" / "buckets.csv")])
    numbers = json.loads((metrics / "frequency.json").read_text())
    assert "cm" not in numbers["dev"] and numbers["test"]["cm"] > 0
    records = json.loads(details.read_text())["verdicts"]
    cm_ids = [r["id"] for r in records if r["id"].endswith("CM")]
    assert cm_ids and all("/2021/" in i and "2020" not in i for i in cm_ids)
    assert "generated abstracts for the test year (2021" in out.read_text()


def test_cli_missing_history_year_is_a_user_error(scores, frequencies, tmp_path, capsys):
    (frequencies / "2017.parquet").unlink()
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--scores", str(scores), "--variants", "baseline", "--seeds", "0",
                  "--frequencies", str(frequencies), "--window", "2", "--train-periods", "2018", "2019",
                  "--out", str(tmp_path / "r.md"), "--metrics-dir", str(tmp_path / "m"),
                  "--details", str(tmp_path / "r.json"),
                  "--plots", str(tmp_path / "p.csv"), "--staleness", str(tmp_path / "s.csv"),
                  "--buckets", str(tmp_path / "b.csv")])
    assert exit_info.value.code == 2
    assert "frequencies of 2017" in capsys.readouterr().err


def test_staleness_table_slope_and_partial_year():
    from pipeline.evaluation.staleness import slope, staleness_frame, staleness_markdown
    summary = {"baseline": {"periods": {"2020": {"ppl": 10.0, "cpl": 20.0},
                                      "2021": {"ppl": 12.0, "cpl": 21.0},
                                      "2022": {"ppl": 14.0, "cpl": 25.0}}},
               "frequency": {"periods": {"2020": {"ppl": 9.0, "cpl": 19.0},
                                       "2021": {"ppl": 10.0, "cpl": 20.0},
                                       "2022": {"ppl": 11.0, "cpl": 21.0}}}}
    frame = staleness_frame(summary, {"baseline": "Baseline-all", "frequency": "Frequency"})
    assert frame.to_dict("records")[0] == {"model": "Baseline-all", "period": "2020", "ppl": 10.0,
                                           "cpl": 20.0}
    assert slope(np.array([2020, 2021, 2022]), np.array([10.0, 12.0, 14.0])) == pytest.approx(2.0)
    assert slope(np.array([2020]), np.array([10.0])) is None
    text = staleness_markdown(frame, last_corpus_date="2022-08")
    assert "| PPL | 2020 | 2021 | 2022 * | per year |" in text
    assert "| Baseline-all | 10.00 | 12.00 | 14.00 | +2.00 |" in text
    assert "| Frequency | 19.00 | 20.00 | 21.00 | +1.00 |" in text
    assert "2022 holds the corpus's last document (dated 2022-08)" in text
    assert "last document" not in staleness_markdown(frame, last_corpus_date="2023-01")
    assert "2022 * |" in staleness_markdown(frame, last_corpus_date="2022")


def test_staleness_stars_only_the_period_holding_the_last_document():
    from pipeline.evaluation.staleness import staleness_frame, staleness_markdown
    summary = {"baseline": {"periods": {p: {"ppl": 1.0, "cpl": 2.0}
                                        for p in ("2021H1", "2021H2", "2022H1")}}}
    frame = staleness_frame(summary, {"baseline": "Baseline-all"})
    text = staleness_markdown(frame, last_corpus_date="2021-12-31")
    assert "| PPL | 2021H1 | 2021H2 * | 2022H1 | per half-year |" in text
    assert "the corpus may end before the half-year does" in text
    # A bare-year date cannot tell which half holds it: both halves of that year are starred.
    assert "2021H1 * | 2021H2 * |" in staleness_markdown(frame, last_corpus_date="2021")


def test_half_year_report_lists_periods_in_time_order_and_names_the_half_year(tmp_path):
    """metrics.json lists the periods out of order; the report, its CSVs and JSON go in time
    (2019H2 before 2020H1 across the year boundary) and say "half-year", never "test year"."""
    scores, freqs = tmp_path / "scores", tmp_path / "frequencies"
    listed = ("2021H1", "2020H2", "2020H1")
    for variant, shift_ in (("baseline", 0.0), ("frequency", -1.0)):
        write_scores(scores, variant, 0, shift_, 0.0, periods=listed, dev="2020H1", test="2020H2")
    rng = np.random.default_rng(3)
    for label in ("2018H2", "2019H1", "2019H2", "2020H1", "2020H2"):
        write_period(freqs / f"{label}.parquet", label, rng.integers(0, 30, VOCAB))
    write_json({"per_year": {"2020": {"kept": 3}, "2021": {"kept": 3}}, "last_date": "2021-03-31"},
               tmp_path / "corpus.json")
    p = tmp_path / "p"
    cli.main(["--scores", str(scores), "--variants", "baseline", "frequency", "--seeds", "0",
              "--frequencies", str(freqs), "--window", "2", "--train-periods", "2019H1", "2019H2",
              "--corpus-counts", str(tmp_path / "corpus.json"), "--out", str(tmp_path / "r.md"),
              "--metrics-dir", str(tmp_path / "m"), "--details", str(tmp_path / "r.json"),
              "--plots", str(p / "results.csv"), "--staleness", str(p / "staleness.csv"),
              "--buckets", str(p / "buckets.csv")])
    text = (tmp_path / "r.md").read_text()
    order = ["2020H1", "2020H2", "2021H1"]
    stale = pd.read_csv(p / "staleness.csv", dtype={"period": str})
    assert stale[stale["model"] == "Frequency"]["period"].tolist() == order
    buckets = pd.read_csv(p / "buckets.csv", dtype={"period": str})
    assert list(dict.fromkeys(buckets["period"])) == order
    assert list(json.loads((tmp_path / "r.json").read_text())["variants"]["frequency"]
                ["periods"]) == order
    assert "| Dev 2020H1 PPL |" in text and "| Test 2020H2 CM |" in text
    assert "## Table 2: generated abstracts for the test half-year (2020H2, seed 0)" in text
    assert "each half-year scored with its own history" in text
    assert "| PPL | 2020H1 | 2020H2 | 2021H1 * | per half-year |" in text
    assert "2021H1 holds the corpus's last document (dated 2021-03-31)" in text
    assert "| Half-year | Model |" in text
    assert text.index("- 2020H1: unigram PPL") < text.index("- 2021H1: unigram PPL")
    assert "test year" not in text and "dev year" not in text


def test_staleness_in_time_order_across_year_boundaries():
    """Months and quarters across a year boundary: time order and slopes by ordinal."""
    from pipeline.evaluation.staleness import slope, staleness_frame, staleness_markdown
    summary = {"baseline": {"periods": {"2020-01": {"ppl": 14.0, "cpl": 5.0},
                                        "2019-11": {"ppl": 10.0, "cpl": 5.0},
                                        "2019-12": {"ppl": 12.0, "cpl": 5.0}}}}
    frame = staleness_frame(summary, {"baseline": "Baseline-all"})
    assert frame["period"].tolist() == ["2019-11", "2019-12", "2020-01"]
    text = staleness_markdown(frame, last_corpus_date=None)
    assert "| PPL | 2019-11 | 2019-12 | 2020-01 | per month |" in text
    assert "| Baseline-all | 10.00 | 12.00 | 14.00 | +2.00 |" in text
    assert slope(np.array(["2020Q4", "2021Q1"]), np.array([10.0, 12.0])) == pytest.approx(2.0)
    assert slope(np.array(["2020-09", "2020-10"]), np.array([1.0, 4.0])) == pytest.approx(3.0)


def test_details_json_holds_the_summary_json_safe():
    summary = {"baseline": {"seeds": [0], "dev": {"period": "2020", "ppl": 10.0, "ppl_std": None,
                                                  "cm": float("nan"), "cm_std": None},
                            "periods": {"2020": {"ppl": 10.0, "cpl": float("inf")}}}}
    out = details_json(summary, "baseline")
    assert out == {"baseline": "baseline",
                   "variants": {"baseline": {"seeds": [0],
                                             "dev": {"period": "2020", "ppl": 10.0, "ppl_std": None,
                                                     "cm": None, "cm_std": None},
                                             "periods": {"2020": {"ppl": 10.0, "cpl": None}}}}}
    json.dumps(out, allow_nan=False)                       # valid JSON
    assert summary["baseline"]["dev"]["cm"] != summary["baseline"]["dev"]["cm"]   # input unchanged


@pytest.mark.slow
def test_the_report_reads_score_folders_without_model_code():
    """The score folder's file names come from pipeline.evaluation.layout, so the report imports
    neither the evaluation that writes them nor the model behind it."""
    import subprocess
    import sys
    code = ("import sys, pipeline.reports.results, pipeline.reports.scored_runs; "
            "bad = [m for m in ('pipeline.evaluation.evaluate', 'pipeline.models.future_lm', "
            "'pipeline.models.nll', 'pipeline.forecast.backtest') if m in sys.modules]; "
            "assert not bad, bad; import pipeline.evaluation.layout as l; "
            "assert l.tokens_file(2020) == 'tokens_2020.parquet'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_continuous_models_dvc_metrics_keep_only_its_comparable_cm() -> None:
    """Its PPL/CPL are of a vMF-normalised distribution (~1e10 on the sample): not DVC metrics."""
    entry = {s: {"ppl": 1.2e10, "cpl": 3.4e11, "cm": 0.05} for s in ("dev", "test")}
    assert headline(entry, "continuous-vmf") == {"dev": {"cm": 0.05}, "test": {"cm": 0.05}}
    assert headline({s: {"ppl": 424.38814, "cpl": 2310.52143, "cm": 0.037269}
                     for s in ("dev", "test")})["test"] == {"ppl": 424.39, "cpl": 2310.52,
                                                           "cm": 0.0373}
    assert headline(entry, "temperature") == headline(entry) == entry
    assert not comparable("continuous-cosine", "ppl") and comparable("continuous-cosine", "cm")
