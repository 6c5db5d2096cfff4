"""params.yaml is the schema's defaults rendered (`make params`); a profile is an overlay on them
(pipeline/graph/profiles.py): it states only what differs, and its keys must be the schema's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.graph import profiles
from pipeline.graph.defaults import SCHEMA
from pipeline.infra.errors import UserError
from stages import graph

REPO = Path(__file__).resolve().parents[1]
NAMES = sorted(p.stem for p in (REPO / "profiles").glob("*.yaml"))


def project(tmp_path: Path, overlay: str, name: str = "mine") -> Path:
    """A project root holding only ``profiles/<name>.yaml`` with the text ``overlay``."""
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / f"{name}.yaml").write_text(overlay)
    return tmp_path


def test_the_committed_params_yaml_is_the_rendering_of_the_defaults() -> None:
    """The schema is the one source of each default: params.yaml is written from it."""
    assert (REPO / "params.yaml").read_text() == profiles.render(None, REPO), \
        "params.yaml is not the schema's defaults: run `make params` (python -m stages.params)"


def test_the_schema_defaults_are_the_default_run() -> None:
    assert SCHEMA.default("lm.base") == "scratch" and SCHEMA.default("train.epochs") == 2
    assert SCHEMA.default("variants.context2") == {"lstm_hidden": 32, "context_input": "flagged",
                                                   "alpha": None}
    # a None default is written as the word its option reads as None, which DVC passes as it is
    assert "    alpha: learned\n" in profiles.render(None, REPO)


def test_the_rendering_holds_every_value_with_its_help() -> None:
    text = profiles.render(None, REPO)
    assert "  # keep abstracts with MORE than this many words (paper: 10)\n  min_words: 10\n" \
        in text
    assert "  plot_words: [neural, embedding, bert, transformer, pretraining]\n" in text
    assert "    # column holding the document's unique id\n    id: id\n" in text
    assert all(len(line) <= profiles.WIDTH for line in text.splitlines())
    params = yaml.safe_load(text)
    assert params["train"]["lr_lm"] == 2.0e-3 and params["forecast"]["period"] == 2022
    assert params["semantic_change"]["first"] is None and params["split"]["dev"] == 2020


@pytest.mark.parametrize("name", NAMES)
def test_a_profile_states_less_than_half_of_params_yaml(name: str) -> None:
    lines = len((REPO / "params.yaml").read_text().splitlines())
    assert len((REPO / "profiles" / f"{name}.yaml").read_text().splitlines()) < lines / 2


@pytest.mark.parametrize("name", NAMES)
def test_every_profile_renders_and_builds_a_valid_stage_graph(name: str) -> None:
    text = profiles.render(name, REPO)
    overlay = profiles.overlay(name, REPO)       # with what it extends
    assert f"  # profiles/{name}.yaml" in text   # the keys the profile sets are marked
    params = yaml.safe_load(text)
    for section, values in overlay.items():     # the profile's values win ...
        for key, value in values.items():
            got = params[section][key]
            assert got == value or (isinstance(value, dict) and value.items() <= got.items())
    defaults = yaml.safe_load(profiles.render(None, REPO))
    for section in set(defaults) - set(overlay):   # ... the rest are the defaults
        assert params[section] == defaults[section], section
    stages = graph.build(params, REPO)["stages"]
    assert {"graph", "download", "report", "forecast_report"} <= set(stages)
    assert "params.yaml" not in stages["graph"]["deps"]   # no key left to a default


def test_lists_are_replaced_and_mappings_merged(tmp_path: Path) -> None:
    root = project(tmp_path, "experiment:\n  seeds: [7]\ndata:\n  columns: {title: null}\n"
                             "variants:\n  frequency: {lstm_hidden: 8}\n")
    params = profiles.params("mine", root)
    assert params["experiment"] == {"variants": ["baseline", "frequency", "frequency-static"],
                                    "seeds": [7], "other_seeds": []}
    assert params["data"]["columns"] == {"id": "id", "date": "date", "title": None, "text": "text"}
    assert params["variants"]["frequency"] == {"lstm_hidden": 8}
    assert params["variants"]["context2"]["lstm_hidden"] == 32
    assert profiles.params(None, root) == yaml.safe_load((REPO / "params.yaml").read_text())


@pytest.mark.parametrize(("overlay", "named"), [
    ("train:\n  learning_rate: 0.1\n", "train.learning_rate"),
    ("trian:\n  epochs: 1\n", "trian"),
    ("variants:\n  context2:\n    alfa: 0.5\n", "variants.context2.alfa"),
    ("variants:\n  baseline: {}\n", "variants.baseline"),
    ("train: 3\n", "train"),
    ("data:\n  source: {url: x}\n", "data.source"),
])
def test_an_unknown_overlay_key_is_a_user_error_naming_it_and_the_file(
        tmp_path: Path, overlay: str, named: str) -> None:
    root = project(tmp_path, overlay)
    with pytest.raises(UserError) as err:
        profiles.render("mine", root)
    assert f"`{named}`" in err.value.what and err.value.path == "profiles/mine.yaml"


def test_an_unknown_profile_lists_the_profiles() -> None:
    with pytest.raises(UserError, match="there is no profile 'papr'") as err:
        profiles.render("papr", REPO)
    assert "paper" in err.value.fix and "verdicts" in err.value.fix


def test_the_command_writes_and_checks_params_yaml(tmp_path: Path) -> None:
    root = project(tmp_path, "train:\n  epochs: 5  # why\n")
    out = root / "params.yaml"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "stages.params", "--out", str(out), *args],
                              cwd=root, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})

    assert run("--profile", "mine").returncode == 0
    assert yaml.safe_load(out.read_text())["train"]["epochs"] == 5
    failed = run("--check")
    assert failed.returncode == 2 and "make params" in failed.stderr
    assert run().returncode == 0 and run("--check").returncode == 0
    assert run("--check", "--out", str(REPO / "params.yaml")).returncode == 0


def test_make_repro_renders_params_yaml_only_with_a_profile() -> None:
    """A hand-edited params.yaml survives `make repro`; `make repro PROFILE=x` replaces it."""
    def planned(*args: str) -> str:
        return subprocess.run(["make", "-n", *args], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout

    assert "stages.params" not in planned("repro")
    assert "stages.params --profile paper" in planned("repro", "PROFILE=paper")
    assert "stages.params --profile paper" in planned("params", "PROFILE=paper")


def test_a_profile_extends_another_stating_only_how_it_differs(tmp_path: Path) -> None:
    root = project(tmp_path, "experiment:\n  seeds: [7]\nsplit:\n  test: 2021\n"
                             "variants:\n  frequency: {lstm_hidden: 8}\n")
    (root / "profiles" / "later.yaml").write_text(
        "extends: mine\nsplit:\n  dev: 2021\n  test: 2022\nvariants:\n  context: {lstm_hidden: 4}\n")
    params = profiles.params("later", root)
    assert params["experiment"]["seeds"] == [7]
    assert (params["split"]["dev"], params["split"]["test"]) == (2021, 2022)
    assert params["variants"]["frequency"]["lstm_hidden"] == 8
    assert params["variants"]["context"]["lstm_hidden"] == 4
    (root / "profiles" / "mine.yaml").write_text("extends: later\n")
    with pytest.raises(UserError, match="in a loop: later -> mine -> later"):
        profiles.render("later", root)
