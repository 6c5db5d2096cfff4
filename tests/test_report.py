"""Report: Table 3 (mean ± std over seeds, sign-test p-values), Table 2, DVC metrics and plots."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pipeline.io import write_json, write_parquet
from pipeline.report import display_name, load_runs, render
from pipeline.significance import paired_sign_test
from stages import report as cli

KEYS = [f"paper{i}" for i in range(12)]


def write_scores(root, variant: str, seed: int, nll_shift: float, cm_shift: float) -> None:
    """A score folder in the score stage's layout (docs/design.md) with known numbers."""
    rng = np.random.default_rng(seed)
    folder = root / f"{variant}-s{seed}"
    metrics = {"variant": variant}
    for split, year in (("dev", 2020), ("test", 2021)):
        n = np.full(len(KEYS), 50)
        nll = rng.uniform(150, 200, len(KEYS)) + nll_shift * n
        n_content = np.full(len(KEYS), 10)
        c_nll = rng.uniform(60, 80, len(KEYS)) + nll_shift * n_content
        tokens = pd.DataFrame({"key": KEYS, "year": year, "n_tokens": n, "nll_sum": nll,
                               "n_content": n_content, "content_nll_sum": c_nll})
        write_parquet(tokens, folder / f"tokens_{split}.parquet")
        cm = np.clip(rng.uniform(0.1, 0.2, 5) + cm_shift, 0, 1)
        gens = pd.DataFrame({"index": range(5), "seed": range(5), "year": year,
                             "text": [f"{variant} abstract {i} for {year}." for i in range(5)],
                             "n_new_tokens": 7, "cm": cm, "cm_gold_key": KEYS[:5]})
        write_parquet(gens, folder / f"generations_{split}.parquet")
        metrics[split] = {"year": year, "ppl": float(np.exp(nll.sum() / n.sum())),
                          "cpl": float(np.exp(c_nll.sum() / n_content.sum())),
                          "cm": float(cm.mean())}
    write_json(metrics, folder / "metrics.json")


@pytest.fixture()
def scores(tmp_path):
    root = tmp_path / "scores"
    for seed in (0, 1):
        write_scores(root, "baseline", seed, 0.0, 0.0)
        write_scores(root, "frequency", seed, -1.0, 0.3)      # better everywhere
        write_scores(root, "context2", seed, 0.0, 0.0)
    return root


def test_table3_values_and_p_values(scores):
    runs = load_runs(scores, ["baseline", "frequency", "context2"], [0, 1])
    text, summary = render(runs, ["baseline", "frequency", "context2"], [0, 1], "baseline", 2)
    ppls = [runs[("frequency", s)].metrics["test"]["ppl"] for s in (0, 1)]
    assert summary["frequency"]["test"]["ppl"] == pytest.approx(np.mean(ppls))
    assert summary["frequency"]["test"]["ppl_std"] == pytest.approx(np.std(ppls, ddof=1))
    # Frequency beats the baseline on all 2 x 12 abstracts: p = 2 / 2**24.
    assert summary["frequency"]["dev"]["ppl_p"] == pytest.approx(2 / 2 ** 24)
    assert summary["frequency"]["dev"]["cm_p"] == pytest.approx(2 / 2 ** 10)
    pooled = [np.concatenate([runs[(v, s)].items("test", "cpl").to_numpy() for s in (0, 1)])
              for v in ("context2", "baseline")]
    expected = paired_sign_test(*pooled, higher_is_better=False)
    assert summary["context2"]["test"]["cpl_p"] == pytest.approx(expected.p_value)
    assert "ppl_p" not in summary["baseline"]["dev"]
    header = ("| Model | Dev 2020 PPL | Dev 2020 CM | Dev 2020 CPL | Test 2021 PPL | Test 2021 CM "
              "| Test 2021 CPL |")
    assert text.count(header) == 2                                  # metrics and p-values
    line = next(l for l in text.splitlines() if l.startswith("| Frequency |"))
    assert f"{summary['frequency']['test']['ppl']:.2f} ± " in line
    assert "1.19e-07" in text                                       # 2 / 2**24
    assert text.count("frequency abstract") == 2                    # Table 2: 2 examples each
    assert "1. (CM " in text and "### Context²" in text


def test_single_seed_has_no_std(scores):
    runs = load_runs(scores, ["baseline", "frequency"], [0])
    text, summary = render(runs, ["baseline", "frequency"], [0], "baseline", 1)
    assert summary["frequency"]["dev"]["ppl_std"] is None
    assert "±" not in text.split("## Table 2")[0].split("Cells:")[1]


def test_missing_scores_and_baseline_are_clear_errors(scores):
    with pytest.raises(FileNotFoundError, match="score this model first"):
        load_runs(scores, ["baseline", "context"], [0])
    runs = load_runs(scores, ["frequency"], [0])
    with pytest.raises(ValueError, match="baseline 'baseline' is not among"):
        render(runs, ["frequency"], [0], "baseline", 1)


def test_display_names():
    assert display_name("baseline") == "Baseline-all"
    assert display_name("baseline-2") == "Baseline-2"
    assert display_name("context2") == "Context²"


def test_cli_writes_report_metrics_and_plots(scores, tmp_path):
    out, metrics, plots = tmp_path / "r" / "results.md", tmp_path / "m", tmp_path / "p.csv"
    args = ["--scores", str(scores), "--variants", "baseline", "frequency", "context2",
            "--seeds", "0", "1", "--baseline", "baseline", "--examples", "3",
            "--out", str(out), "--metrics-dir", str(metrics), "--plots", str(plots)]
    cli.main(args)
    assert "## Table 3" in out.read_text()
    assert sorted(p.name for p in metrics.iterdir()) == ["baseline.json", "context2.json",
                                                          "frequency.json"]
    freq = json.loads((metrics / "frequency.json").read_text())
    assert freq["seeds"] == [0, 1] and 0 < freq["test"]["ppl_p"] < 1e-6
    frame = pd.read_csv(plots)
    assert frame["variant"].tolist() == ["Baseline-all", "Frequency", "Context²"]
    assert list(frame.columns) == ["variant", "dev_ppl", "dev_cm", "dev_cpl", "test_ppl",
                                   "test_cm", "test_cpl"]
    first = out.read_bytes()
    cli.main(args)
    assert out.read_bytes() == first                                 # deterministic
