"""Human-evaluation kit: export a blind sheet, fill it, get Table 4 back (library and CLI)."""

from __future__ import annotations

import pandas as pd
import pytest

from pipeline.evaluation.human_eval import QUESTIONS, export_sheet, tabulate
from pipeline.infra.io import write_json, write_parquet
from stages import human_eval as cli


def generations(variants=("baseline", "frequency", "context2"), n=4) -> pd.DataFrame:
    return pd.DataFrame([{"variant": v, "seed": 0, "split": "test", "index": i,
                          "text": f"Abstract {i} about topic {i} written by model {v}."}
                         for v in variants for i in range(n)])


def fill(sheet: pd.DataFrame, key: pd.DataFrame) -> pd.DataFrame:
    """An 'annotator' whose answers depend on the (hidden) model: known Table 4 percentages."""
    filled = sheet.copy()
    origin = key.set_index("item")
    for row, item in enumerate(filled["item"]):
        variant, index = origin.loc[item, "variant"], origin.loc[item, "index"]
        for q in QUESTIONS:
            if variant == "baseline":
                answer = 1 if q == "Topic" else 0
            elif variant == "frequency":
                answer = 1 if index < 2 else 0           # 50% everywhere
            else:
                answer = 0 if (q.endswith("New") and index == 0) else 1
            filled.loc[row, q] = str(answer)
    return filled


def test_export_is_blind_and_shuffled():
    gens = generations()
    sheet, key = export_sheet(gens, shuffle_seed=3)
    assert list(sheet.columns) == ["item", "text", *QUESTIONS]
    assert sorted(sheet["item"]) == list(range(1, 13))
    assert (sheet[list(QUESTIONS)] == "").all().all()
    assert "variant" not in sheet.columns
    assert sheet["text"].tolist() != gens["text"].tolist()       # the order is shuffled
    assert sorted(sheet["text"]) == sorted(gens["text"])
    again, _ = export_sheet(gens, shuffle_seed=3)
    pd.testing.assert_frame_equal(sheet, again)                   # deterministic
    merged = sheet.merge(key, on="item")
    assert (merged.apply(lambda r: r["variant"] in r["text"], axis=1)).all()


def test_round_trip_gives_table4():
    sheet, key = export_sheet(generations(), shuffle_seed=0)
    table = tabulate(fill(sheet, key), key).set_index("variant")
    assert table.loc["baseline", "Topic"] == 100.0
    assert table.loc["baseline", "Method New"] == 0.0
    assert (table.loc["frequency", list(QUESTIONS)] == 50.0).all()
    assert table.loc["context2", "Topic"] == 100.0
    assert table.loc["context2", "Topic New"] == 75.0
    assert (table["n"] == 4).all()


def test_bad_answers_are_named():
    sheet, key = export_sheet(generations(), shuffle_seed=0)
    filled = fill(sheet, key)
    filled.loc[0, "Problem"] = "yes"
    filled.loc[1, "Method"] = ""
    with pytest.raises(ValueError, match=r"2 answers are not 0 or 1.*Problem='yes'"):
        tabulate(filled, key)
    with pytest.raises(ValueError, match="do not match"):
        tabulate(fill(sheet, key), key[key["item"] != 1])
    with pytest.raises(ValueError, match="lacks columns"):
        tabulate(sheet.drop(columns=["Topic New"]), key)


def test_cli_round_trip(tmp_path):
    for variant, gen in generations().groupby("variant"):
        folder = tmp_path / "scores" / f"{variant}-s0"
        # the score stage's per-period layout: metrics.json names the test period
        write_parquet(gen.drop(columns=["variant", "split"]).assign(cm=0.1),
                      folder / "generations_2021.parquet")
        write_json({"dev_period": "2020", "test_period": "2021"}, folder / "metrics.json")
    sheet_csv, key_csv = tmp_path / "he" / "sheet.csv", tmp_path / "he" / "key.csv"
    cli.main(["export", "--scores", str(tmp_path / "scores"), "--variants", "baseline",
              "frequency", "context2", "--per-variant", "4", "--sheet", str(sheet_csv),
              "--key", str(key_csv)])
    sheet = pd.read_csv(sheet_csv, dtype=str, keep_default_na=False)
    key = pd.read_csv(key_csv)
    assert list(sheet.columns) == ["item", "text", *QUESTIONS]     # no model column
    filled_csv = tmp_path / "filled.csv"
    fill(sheet.astype({"item": int}), key).to_csv(filled_csv, index=False)
    out = tmp_path / "table4.md"
    cli.main(["tabulate", "--sheet", str(filled_csv), "--key", str(key_csv), "--out", str(out)])
    text = out.read_text()
    assert "| Baseline-all | 4 | 100.0 | 0.0 |" in text
    assert "| Frequency | 4 | 50.0 | 50.0 |" in text
    assert "| Context² | 4 | 100.0 | 75.0 |" in text
    assert text.index("| Baseline-all") < text.index("| Context²") < text.index("| Frequency")


def test_cli_missing_scores_is_a_message_not_a_traceback(tmp_path, capsys):
    """The stage goes through stages._lib.cli.stage_main like every other: exit 2 naming the file."""
    with pytest.raises(SystemExit) as exc:
        cli.main(["export", "--scores", str(tmp_path / "scores"), "--variants", "baseline",
                  "--sheet", str(tmp_path / "sheet.csv"), "--key", str(tmp_path / "key.csv")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "error (stages.human_eval)" in err and "baseline-s0" in err and "metrics.json" in err
