"""Each model's share of the signal (pipeline/reports/signal_share.py): its test-PPL gain over the
Baseline against the unigram yardstick's oracle gain, read from the signal stage's JSON; the
report stage's section and its wiring in the graph."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from pipeline.graph.build import build
from pipeline.infra.errors import UserError
from pipeline.infra.io import write_json
from pipeline.models.registry import display_name
from pipeline.reports.scored_runs import load_runs, summarize
from pipeline.reports.signal_share import Yardstick, share_markdown, shares, yardstick
from stages import report as cli
from tests.test_report import _each, frequencies, scores  # noqa: F401  (fixtures)


def _signal(test: str = "2021", max_length: int = 64, pooled: float = 1000.0,
            oracle: float = 960.0) -> dict:
    rows = [{"scope": f"{test}/whole", "distribution": "pooled", "ppl": 900.0},
            {"scope": f"{test}/whole", "distribution": "oracle", "ppl": 850.0},
            {"scope": f"{test}/first-{max_length - 1}", "distribution": "pooled", "ppl": pooled},
            {"scope": f"{test}/first-{max_length - 1}", "distribution": "oracle", "ppl": oracle},
            {"scope": f"{test}/first-{max_length - 1}", "distribution": "recent-2", "ppl": 970.0}]
    return {"test_period": test, "max_length": max_length, "table": rows, "verdicts": []}


def test_the_yardstick_is_the_scope_the_models_are_scored_on() -> None:
    stick = yardstick(_signal(max_length=64), "2021", 64)
    assert stick == Yardstick("2021/first-63", 1000.0, 960.0)
    assert stick.gain == pytest.approx(math.log(1000 / 960))


@pytest.mark.parametrize("signal, period, max_length, says", [
    (_signal(test="2023"), "2021", 64, "the signal is of 2023"),
    (_signal(max_length=128), "2021", 64, "a context of 128"),
    ({**_signal(), "table": _signal()["table"][:2]}, "2021", 64, "no pooled and oracle rows"),
])
def test_a_signal_of_another_split_is_refused_with_the_fix(signal, period, max_length,
                                                           says) -> None:
    with pytest.raises(UserError, match=says) as err:
        yardstick(signal, period, max_length)
    assert "dvc repro signal" in str(err.value)


def test_the_baseline_takes_none_and_the_oracles_gain_is_one() -> None:
    stick = Yardstick("2021/first-63", 1000.0, 960.0)
    summary = {"baseline": {"test": {"ppl": 200.0}},
               "oracle-like": {"test": {"ppl": 200.0 * 960 / 1000}},
               "worse": {"test": {"ppl": 210.0}}}
    rows = {r.variant: r for r in shares(summary, list(summary), "baseline", stick)}
    assert rows["baseline"].share == 0 and rows["baseline"].change == 0
    assert rows["oracle-like"].share == pytest.approx(1.0)
    assert rows["oracle-like"].change == pytest.approx(-4.0)
    assert rows["worse"].share < 0 and rows["worse"].change == pytest.approx(5.0)
    text = share_markdown(list(rows.values()), stick, {v: v for v in summary}, "baseline")
    assert "| oracle-like | 192.00 | -4.00 % | +1.00 |" in text
    assert "| baseline | 200.00 | +0.00 % | +0.00 |" in text


def test_no_share_where_the_oracle_gains_nothing() -> None:
    """A small test period: the split-half oracle's noisy counts lose to the pooled ones."""
    stick = Yardstick("2021/first-127", 980.0, 1008.0)
    summary = {"baseline": {"test": {"ppl": 447.0}}, "frequency": {"test": {"ppl": 427.0}}}
    rows = shares(summary, list(summary), "baseline", stick)
    assert all(math.isnan(r.share) for r in rows)
    text = share_markdown(rows, stick, {v: v for v in summary}, "baseline")
    assert "no signal to take a share of" in text and "| frequency | 427.00 | -4.47 % | – |" in text


def test_the_report_stage_adds_the_section_from_the_signal_json(scores, frequencies,  # noqa: F811
                                                               tmp_path) -> None:
    signal = tmp_path / "signal.json"
    write_json(_signal(), signal)
    out = tmp_path / "r" / "results.md"
    args = ["--scores", str(scores), "--variants", "baseline", "frequency",
            "--seeds", "0", "1", "--baseline", "baseline", "--examples", "1",
            "--frequencies", str(frequencies), "--window", "2", "--train-periods", "2018", "2019",
            "--details", str(tmp_path / "r" / "results.json"), "--out", str(out),
            "--metrics-dir", str(tmp_path / "m"), "--plots", str(tmp_path / "p" / "results.csv"),
            "--staleness", str(tmp_path / "p" / "staleness.csv"),
            "--buckets", str(tmp_path / "p" / "buckets.csv")]
    cli.main(args)
    assert "## Share of the signal" not in out.read_text()
    cli.main([*args, "--signal", str(signal)])
    text = out.read_text()
    section = text[text.index("## Share of the signal"):]
    seeds = _each(["baseline", "frequency"], [0, 1])
    summary = summarize(load_runs(scores, ["baseline", "frequency"], seeds),
                        ["baseline", "frequency"], seeds, "baseline")
    base, freq = (summary[v]["test"]["ppl"] for v in ("baseline", "frequency"))
    share = (math.log(base) - math.log(freq)) / math.log(1000 / 960)
    assert f"| {display_name('frequency')} | {freq:.2f} |" in section
    assert f"| {share:+.2f} |" in section.splitlines()[-1]


def test_the_graphs_report_stage_reads_the_signal() -> None:
    repo = Path(__file__).resolve().parents[1]
    params = yaml.safe_load((repo / "params.yaml").read_text())
    stage = build(params, repo)["stages"]["report"]
    assert "--signal reports/signal.json" in " ".join(stage["cmd"].split())
    assert "reports/signal.json" in stage["deps"]
    assert json.dumps(stage).count("reports/signal.json") >= 2
