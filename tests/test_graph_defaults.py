"""A params.yaml without an optional key: `make graph` writes the key's schema default into dvc.yaml
(pipeline/graph/defaults.py), so DVC can parse the graph, notes it, and reports the graph stale when
the key is added later; a missing required key stops `make graph` naming it."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.graph.build import build
from pipeline.graph.defaults import Schema, command_text
from pipeline.graph.render import render
from pipeline.infra.errors import UserError
from stages.graph import SCHEMA
from tests.dvc_project import (dvc_env, dvc_repo, expand_runs, git, make_project, run_dvc,
                               write_graph)

REPO = Path(__file__).resolve().parents[1]
PARAMS = yaml.safe_load((REPO / "params.yaml").read_text())


def without(params: dict[str, Any], *keys: str) -> dict[str, Any]:
    """``params`` less each dotted key (``split.min_documents``) or whole section."""
    out = copy.deepcopy(params)
    for key in keys:
        *parents, last = key.split(".")
        node = out
        for part in parents:
            node = node[part]
        del node[last]
    return out


def stages_of(params: dict[str, Any], defaulted: list | None = None) -> dict[str, Any]:
    return expand_runs(build(params, REPO, SCHEMA, defaulted)["stages"])


def test_a_missing_optional_key_is_its_default_in_the_command_and_no_param() -> None:
    notes: list = []
    stages = stages_of(without(PARAMS, "split.min_documents"), notes)
    split = stages["split"]
    assert "--min-documents 50 " in split["cmd"] and "${split.min_documents}" not in split["cmd"]
    assert not any("min_documents" in p for s in stages.values()
                   for p in s.get("do", s).get("params", []))
    assert [n.note for n in notes] == ["params.yaml has no split.min_documents: dvc.yaml uses its "
                                       "default 50; add it to params.yaml to change it"]
    # adding it later reruns the graph check: the graph stage now depends on params.yaml itself
    assert stages["graph"]["deps"] == ["pipeline", "stages", "params.yaml"]
    # every other stage is as the committed params make it
    full = stages_of(PARAMS)
    assert {n for n in full if full[n] != stages[n]} == {"graph", "split"}
    assert "params.yaml" not in full["graph"]["deps"]


def test_defaults_are_written_as_dvc_writes_those_values() -> None:
    notes: list = []
    wide = {**PARAMS, "experiment": {"variants": ["baseline", "context2"], "seeds": [0]}}
    stages = stages_of(without(wide, "variants.context2.alpha", "filter.language", "data.columns",
                               "frequencies", "report", "train.cache"), notes)
    cmd = {name: s.get("do", s)["cmd"] for name, s in stages.items()}
    assert "--alpha learned " in cmd["train-context2@s0"]          # None: the option's none word
    assert "--language en " in cmd["filter"]
    # a dict-valued key and a whole section: unpacked as DVC unpacks ${data.columns}, ${frequencies}
    assert "--source ${data.source} --id id --date date --title title --text text " in cmd["download"]
    assert "--tokenizer data/tokenizer --plot_words neural embedding bert transformer pretraining " \
           "--out" in cmd["frequency_plot"]
    assert "--examples 3 --cluster-by venue " in cmd["report"]
    assert "params" not in stages["frequency_plot"] and "report" not in stages["report"]["params"]
    # a structural key (read by the plan): its default, and no param of the graph stage
    assert "train.cache" not in stages["graph"]["params"]
    keys = [n.key for n in notes]
    assert keys == ["train.cache", "data.columns", "filter.language", "frequencies.plot_words",
                    "variants.context2.alpha", "report.examples", "report.cluster_by"]   # first use first; no section-wide twin
    shown = {n.key: n.note for n in notes}
    assert "its default {id: id, date: date, title: title, text: text};" in shown["data.columns"]
    assert "its default false;" in shown["train.cache"]


def test_command_text_follows_dvcs_interpolation() -> None:
    assert command_text(True) == "true" and command_text(0.001) == "0.001"
    assert command_text(None) == "None" and command_text(None, {"": "null"}) == "null"
    assert command_text(("a", "b c")) == "a b c"
    assert command_text({"on": True, "off": False, "words": ("a b", "c"), "n": 2, "t": "x y",
                         "empty": (), "none": None}) == \
        "--on --no-off --words 'a b' c --n 2 --t 'x y' --none None"
    assert SCHEMA.default("data.columns") == {"id": "id", "date": "date", "title": "title",
                                              "text": "text"}          # a default_factory
    assert SCHEMA.default("data.columns.title") == "title"
    assert SCHEMA.default("forecast.n_generate") == 5          # a field with its own flag
    assert SCHEMA.nones("semantic_change.first") == {"": "null"}
    assert SCHEMA.nones("data.columns") == {"title": "None"}


@pytest.mark.parametrize("key", ["split.dev", "split", "data.source", "data"])
def test_a_missing_required_key_stops_make_graph_naming_it(key: str) -> None:
    """Required: a key the schema has no default for (``Schema({})``: none; every key of the
    settings classes has one, the default run's)."""
    with pytest.raises(UserError) as err:
        build(without(PARAMS, key), REPO, Schema({}))
    named = {"data": "data.source", "split": "split.period"}.get(key, key)
    assert f"params.yaml has no `{named}`" in err.value.what
    assert f"add `{named}` to params.yaml" in err.value.fix


def test_without_a_schema_every_missing_key_is_named() -> None:
    with pytest.raises(UserError, match="params.yaml has no `split.min_documents`"):
        build(without(PARAMS, "split.min_documents"), REPO, Schema({}))
    with pytest.raises(UserError, match="params.yaml has no `train.cache`"):
        build(without(PARAMS, "train.cache"), REPO, Schema({}))


@pytest.mark.slow
def test_dvc_parses_the_graph_without_the_key_and_adding_it_makes_the_graph_stale(
        tmp_path: Path) -> None:
    proj = make_project(tmp_path)
    params = yaml.safe_load((proj / "params.yaml").read_text())
    (proj / "params.yaml").write_text(yaml.safe_dump(without(params, "split.min_documents"),
                                                     sort_keys=False))
    # before: DVC's own parser stops on the template of the missing key
    with pytest.raises(Exception, match="Could not find 'split.min_documents'"):
        with dvc_repo(proj) as repo:
            repo.stage.collect("split")
    proc = subprocess.run([sys.executable, "-m", "stages.graph"], cwd=proj, env=dvc_env(),
                          capture_output=True, text=True, check=True)
    assert "params.yaml has no split.min_documents: dvc.yaml uses its default 50" in proc.stderr
    with dvc_repo(proj) as repo:
        (split,) = repo.stage.collect("split")
        assert "--min-documents 50 " in split.cmd
        assert len(repo.index.stages) > 20
    run_dvc(proj, "repro", "graph")   # the check stage alone (seconds): dvc.yaml is current
    git(proj, "add", "-A")
    git(proj, "commit", "-q", "-m", "no split.min_documents")

    # the user adds the key back: the graph stage reruns (it depends on params.yaml) and stops
    (proj / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    proc = run_dvc(proj, "repro", "split", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "dvc.yaml is stale for params.yaml" in out, out
    assert "changed stages: graph, split" in out and "make graph" in out
    assert not (proj / "data" / "raw").exists()
    write_graph(proj)
    assert (proj / "dvc.yaml").read_text() == render(params, REPO)
