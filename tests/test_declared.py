"""Stages that declare their paths and place (pipeline/graph/declared.py): where the graph puts
them, and the mistakes in a declaration it refuses by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.graph import declared
from pipeline.infra.errors import UserError
from pipeline.infra.interface import Input, Output, StageInterface

BUILT = {"split": {"cmd": "python -m stages.split", "outs": ["data/splits/dev.parquet"]},
         "report": {"cmd": "python -m stages.report"}}


def toy(name: str, reads: str, after: str) -> StageInterface:
    return StageInterface(name, (Input("--src", "what it reads"),
                                 Output("--out", "what it writes")),
                          paths={"src": reads, "out": f"data/{name}.txt"}, after=after)


def graph(monkeypatch: pytest.MonkeyPatch, root: Path, *interfaces: StageInterface,
          mains: bool = True) -> dict:
    monkeypatch.setattr(declared, "declarations", lambda: {i.name: i for i in interfaces})
    (root / "stages").mkdir(exist_ok=True)
    for i in interfaces if mains else ():
        (root / "stages" / f"{i.name}.py").write_text("")
    return declared.with_declared(BUILT, lambda name: [f"stages/{name}.py"], root)


def test_a_declared_stage_follows_its_stage_and_another_follows_it(monkeypatch, tmp_path) -> None:
    out = graph(monkeypatch, tmp_path, toy("toy_b", "data/toy_a.txt", "toy_a"),
                toy("toy_a", "data/splits/dev.parquet", "split"))
    assert list(out) == ["split", "toy_a", "toy_b", "report"]
    assert out["toy_b"]["cmd"] == "python -m stages.toy_b --src data/toy_a.txt --out data/toy_b.txt"
    assert out["toy_b"]["deps"] == ["stages/toy_b.py", "data/toy_a.txt"]
    assert out["toy_b"]["outs"] == ["data/toy_b.txt"]


def test_a_file_the_project_holds_is_an_input_too(monkeypatch, tmp_path) -> None:
    (tmp_path / "data/reference").mkdir(parents=True)
    (tmp_path / "data/reference/words.txt").write_text("a\n")
    out = graph(monkeypatch, tmp_path, toy("toy_a", "data/reference/words.txt", "report"))
    assert list(out) == ["split", "report", "toy_a"]


@pytest.mark.parametrize("case, message", [
    ("unknown after", r"stage toy_a is declared after 'nowhere', which this graph has no stage"),
    ("loop", r"stage toy_[ab] is declared after 'toy_[ab]', which this graph has no stage of \(or"),
    ("no main", r"stage toy_a is declared but has no main"),
    ("typo", r"stage toy_a reads data/split/dev.parquet, which no stage writes"),
])
def test_a_wrong_declaration_stops_make_graph_naming_it(monkeypatch, tmp_path, case,
                                                        message) -> None:
    interfaces = {
        "unknown after": [toy("toy_a", "data/splits/dev.parquet", "nowhere")],
        "loop": [toy("toy_a", "data/toy_b.txt", "toy_b"), toy("toy_b", "data/toy_a.txt", "toy_a")],
        "no main": [toy("toy_a", "data/splits/dev.parquet", "split")],
        "typo": [toy("toy_a", "data/split/dev.parquet", "split")],
    }[case]
    with pytest.raises(UserError, match=message):
        graph(monkeypatch, tmp_path, *interfaces, mains=case != "no main")


def test_every_committed_declaration_names_its_module() -> None:
    found = declared.declarations()
    assert {"train", "score", "gold_words", "graph"} <= set(found)
    assert all(i.module == f"stages.{name}" for name, i in found.items())
    assert found["gold_words"].after == "tokenizer" and found["train"].torch
    assert not found["gold_words"].torch
