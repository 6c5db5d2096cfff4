"""The forecast_skill stage end to end on a small corpus table, and its input rules."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.forecast.skill_inputs import read_skill_input
from stages import forecast_skill

WORDS = [f"w{chr(97 + i // 26)}{chr(97 + i % 26)}" for i in range(300)]


def table(years: list[int], last_month: int = 12, docs: int = 40, seed: int = 0) -> pd.DataFrame:
    """Abstracts of random words (the later words rise over the years), dated by month."""
    rng = np.random.default_rng(seed)
    rows = []
    for y in years:
        p = 1 / (np.arange(len(WORDS)) + 2.0)
        p[200:] *= np.exp(0.4 * (y - years[0]))
        p /= p.sum()
        for j in range(docs):
            month = 1 + j % (last_month if y == years[-1] else 12)
            text = " ".join(rng.choice(WORDS, 30, p=p)) + " the of and"
            rows.append({"key": f"k{y}-{j}", "date": f"{y}-{month:02d}", "abstract": text})
    return pd.DataFrame(rows)


def test_gaps_and_a_partial_last_period_are_found(tmp_path: Path) -> None:
    frame = pd.concat([table([1990]), table(list(range(2000, 2006)), last_month=6)])
    path = tmp_path / "abstracts.parquet"
    frame.to_parquet(path)
    inp = read_skill_input(path, min_count=2)
    assert inp.corpus.periods == tuple(str(y) for y in range(2000, 2006))
    assert inp.before_gap == 40 and not inp.last_complete and "2005-06" in inp.last_note
    halves = read_skill_input(path, kind="half", min_count=2)
    assert halves.corpus.periods[-1] == "2005H1" and halves.last_complete


@pytest.mark.slow
def test_stage_writes_the_report(tmp_path: Path) -> None:
    path = tmp_path / "abstracts.parquet"
    table(list(range(2000, 2014)), last_month=5).to_parquet(path)
    stop = tmp_path / "stop.txt"
    stop.write_text("1\tthe\t9\n2\tof\t8\n3\tand\t7\n", encoding="utf-8")
    out = tmp_path / "report"
    forecast_skill.main(["--abstracts", str(path), "--out-dir", str(out), "--first", "2002",
                         "--min-count", "2", "--stopwords", str(stop),
                         "--forecasters", "persistence", "pooled-past", "damped-trend"])
    doc = json.loads((out / "verdicts.json").read_text())
    assert doc["settings"]["last"] == "2012"          # 2013 ends in May: no target
    pooled = [r for r in doc["verdicts"] if r["scope"] == "h1/pooled"]
    assert {r["a"] for r in pooled} == {"persistence", "pooled-past", "damped-trend"}
    assert all(r["mde"] is not None for r in pooled if r["verdict"] == "not distinguishable")
    assert any(r["family"] == "forecast-trend" for r in doc["verdicts"])
    assert {o["horizon"] for o in doc["origins"]} == {1, 2}
    for name in ("README.md", "skill.png", "words.json", "timing.json"):
        assert (out / name).stat().st_size > 0
    assert "Wall time" in (out / "README.md").read_text()


def test_too_short_a_corpus_is_one_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "abstracts.parquet"
    table([2000, 2001]).to_parquet(path)
    stop = tmp_path / "stop.txt"
    stop.write_text("1\tthe\t9\n", encoding="utf-8")
    with pytest.raises(SystemExit) as err:
        forecast_skill.main(["--abstracts", str(path), "--out-dir", str(tmp_path / "r"),
                             "--first", "2000", "--stopwords", str(stop), "--min-count", "1"])
    assert err.value.code == 2
    assert "2 consecutive period" in capsys.readouterr().err
