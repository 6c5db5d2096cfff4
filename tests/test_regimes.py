"""The training regimes (pipeline/graph/regimes.py): one class per ``train.base`` value, read
through one table; each refuses its own params, says what a run's train stage starts from and
which cache it reads, and adds its cache stages. The train stage picks its path through one
object (pipeline/training/execution.py). tests/test_graph.py checks the same through the whole
graph; here each regime is asked directly."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from pipeline.graph.defaults import SCHEMA
from pipeline.graph.plan import Plan
from pipeline.graph.regimes import (REGIMES, Adapted, Cache, Frozen, Joint, Shared, TrainFrom,
                                    regime_for)
from pipeline.infra.distributed import Dist
from pipeline.infra.errors import UserError
from tests.dvc_project import deep_merge

REPO = Path(__file__).resolve().parents[1]
PARAMS = yaml.safe_load((REPO / "params.yaml").read_text())
PRETRAINED = "HuggingFaceTB/SmolLM2-135M-Instruct"
BASELINE_0 = "data/models/baseline-s0"


def plan(base: str, variants: list[str], cache: bool = True, seeds: tuple[int, ...] = (0, 1),
         **extra: Any) -> Plan:
    change: dict[str, Any] = {"train": {"base": base, "cache": cache},
                              "experiment": {"variants": variants, "seeds": list(seeds)}}
    if base in ("frozen", "adapted"):
        change["lm"] = {"base": PRETRAINED}
    return Plan(SCHEMA.complete(deep_merge(deep_merge(PARAMS, change), extra)))


def test_one_table_maps_every_train_base_value_to_its_regime() -> None:
    assert {n: r for n, r in REGIMES.items()} == {
        "joint": Joint, "shared": Shared, "frozen": Frozen, "adapted": Adapted}
    assert all(isinstance(regime_for(n), r) and regime_for(n).name == n
               for n, r in REGIMES.items())
    with pytest.raises(UserError, match="train.base must be joint, shared, frozen or adapted, "
                                        "got 'sometimes'") as err:
        regime_for("sometimes")
    assert err.value.fix is not None and "adapted: its top blocks are fine-tuned" in err.value.fix
    assert isinstance(plan("shared", ["baseline"]).regime, Shared)


@pytest.mark.parametrize("base,change,message", [
    ("joint", {"train": {"cache": True}}, "caches a frozen LM .* but train.base is joint"),
    ("shared", {"experiment": {"variants": ["baseline", "baseline-0"]}},
     "baseline-0 is a pretrained LM as it is"),
    ("frozen", {"experiment": {"variants": ["baseline", "baseline-0"]}},
     "baseline-0 is a pretrained LM as it is"),
    ("frozen", {"lm": {"base": "scratch"}}, "train.base: frozen starts from a pretrained"),
    ("frozen", {"train": {"cache": False}}, "train.base: frozen needs train.cache: true"),
    ("frozen", {"experiment": {"variants": ["baseline", "baseline-1"]}},
     "baseline-1 fine-tune the LM on the latest periods, which train.base: frozen"),
    ("adapted", {"lm": {"base": "scratch"}}, "train.base: adapted starts from a pretrained"),
    ("adapted", {"train": {"cache": False}}, "train.base: adapted needs train.cache: true"),
    ("adapted", {"train": {"adapt_layers": 0}}, "train.adapt_layers must be >= 1, got 0"),
    ("adapted", {"experiment": {"variants": ["baseline", "baseline-0", "baseline-2"]}},
     "baseline-2 fine-tune the LM"),
    ("frozen", {"experiment": {"variants": ["baseline", "continued-1"]}},
     "continued-1 continue training a Baseline trained, whole, on every training period, which "
     "train.base: frozen does not have"),
    ("adapted", {"experiment": {"variants": ["baseline", "continued-2"]}},
     "continued-2 continue training .* which train.base: adapted does not have"),
    ("joint", {"experiment": {"variants": ["baseline", "continued-9"]}},
     "continued-9 needs 1 .. 3 training periods"),
    ("shared", {"experiment": {"variants": ["frequency"]}},
     "and train.base: shared builds every temporal variant on its LM"),
])
def test_each_regime_refuses_its_own_params(base, change, message) -> None:
    with pytest.raises(UserError, match=message) as err:
        plan(base, ["baseline", "frequency"], cache=base != "joint", **change)
    assert "params.yaml" in str(err.value)


def test_the_regimes_accept_their_own_runs() -> None:
    plan("joint", ["baseline", "baseline-2", "frequency"], cache=False)
    plan("shared", ["baseline", "baseline-2", "frequency"], cache=False)
    plan("frozen", ["baseline", "frequency"])
    plan("adapted", ["baseline", "baseline-0", "frequency"])
    with pytest.raises(UserError, match="report compares every variant with the Baseline, but"):
        plan("joint", ["frequency"], cache=False)   # joint's message names no regime


def test_continued_n_starts_from_its_seeds_trained_baseline_whole() -> None:
    """Under joint and shared, continued-N loads the LM of the seed's Baseline and trains it all
    (no freeze, no cache, even with train.cache); baseline-N starts from lm.base."""
    for base, cache in (("joint", False), ("shared", False), ("shared", True)):
        regime = plan(base, ["baseline", "continued-1", "baseline-1", "frequency"], cache=cache)
        assert regime.regime.train_from(regime, "continued-1", 1) == TrainFrom(
            init_from="data/models/baseline-s1")
        assert regime.regime.cache_of(regime, "continued-1", 1) is None
        assert regime.regime.train_from(regime, "baseline-1", 1) == TrainFrom()


def test_what_each_run_starts_from_and_reads() -> None:
    variants = ["baseline", "frequency", "continuous-vmf", "temporal-attention"]
    joint = plan("joint", [*variants, "baseline-2"], cache=False)
    assert all(joint.regime.train_from(joint, v, 0) == TrainFrom() and
               joint.regime.cache_of(joint, v, 0) is None for v in joint.variants)

    shared = plan("shared", [*variants, "baseline-2"], cache=False)
    on_baseline = TrainFrom(init_from=BASELINE_0, freeze_lm=True)
    assert shared.regime.train_from(shared, "baseline", 0) == TrainFrom()
    assert shared.regime.train_from(shared, "baseline-2", 0) == TrainFrom()
    assert shared.regime.train_from(shared, "frequency", 0) == on_baseline
    assert shared.regime.train_from(shared, "temporal-attention", 0) == on_baseline
    cached = plan("shared", variants)
    assert cached.regime.train_from(cached, "frequency", 1) == TrainFrom(
        init_from="data/models/baseline-s1", freeze_lm=True, cache="data/cache/baseline-s1")
    assert cached.regime.train_from(cached, "temporal-attention", 0) == on_baseline
    assert cached.regime.scoring_cache(cached, "frequency", 0) is None   # no test period

    frozen = plan("frozen", variants)
    for variant in ("baseline", "frequency", "continuous-vmf"):
        assert frozen.regime.train_from(frozen, variant, 0) == TrainFrom(
            freeze_lm=True, cache="data/cache/base")
        assert frozen.regime.scoring_cache(frozen, variant, 1) == "data/cache/base"
    assert frozen.regime.train_from(frozen, "temporal-attention", 0) == TrainFrom(freeze_lm=True)

    adapted = plan("adapted", [*variants, "baseline-0"])
    baseline = adapted.regime.train_from(adapted, "baseline", 0)
    assert baseline == TrainFrom(trunk="data/cache/trunk")
    assert baseline.values == {"init_from": None, "freeze_lm": False, "trunk": "data/cache/trunk",
                               "adapt_layers": True, "cache": None}
    assert adapted.regime.scoring_cache(adapted, "baseline", 1) == "data/cache/baseline-s1"
    assert adapted.regime.train_from(adapted, "baseline-0", 1) == TrainFrom(
        freeze_lm=True, cache="data/cache/base")
    assert adapted.regime.train_from(adapted, "frequency", 1) == TrainFrom(
        init_from="data/models/baseline-s1", freeze_lm=True, cache="data/cache/baseline-s1")
    assert adapted.regime.train_from(adapted, "temporal-attention", 0) == on_baseline
    assert adapted.regime.scoring_cache(adapted, "temporal-attention", 0) is None


def test_train_from_renders_options_deps_and_params() -> None:
    """A start's values render, through the train stage's declaration, as the options after the
    training settings, the model and cache folders as deps, train.adapt_layers as a param."""
    from pipeline.interfaces.train import INTERFACE

    def rendered(start: TrainFrom) -> tuple[str, list[str], list[str]]:
        entry = INTERFACE.entry({"variant": "frequency", "seed": 0, "train": "t", "dev": "d",
                                 "tokenizer": "k", **start.values, "out": "o", "curves": "c"})
        options = entry["cmd"].partition("${train.dropout}")[2].partition("--out")[0].strip()
        return options, entry["deps"][3:], entry["params"][-1:]

    cached = TrainFrom(init_from=BASELINE_0, freeze_lm=True, cache="data/cache/baseline-s0")
    assert rendered(cached) == (
        f"--init-from {BASELINE_0} --freeze-lm --cache data/cache/baseline-s0",
        [BASELINE_0, "data/cache/baseline-s0"], ["train.dropout"])
    assert rendered(TrainFrom(trunk="data/cache/trunk")) == (
        "--trunk data/cache/trunk --adapt-layers ${train.adapt_layers}", ["data/cache/trunk"],
        ["train.adapt_layers"])
    assert rendered(TrainFrom()) == ("", [], ["train.dropout"])


def test_each_regime_adds_the_caches_its_runs_read() -> None:
    def names(p: Plan) -> list[str]:
        return [c.name for c in p.regime.caches(p)]

    assert names(plan("joint", ["baseline", "frequency"], cache=False)) == []
    assert names(plan("shared", ["baseline", "frequency"], cache=False)) == []
    assert names(plan("shared", ["baseline", "frequency"])) == ["base_cache-s0", "base_cache-s1"]
    assert names(plan("shared", ["baseline", "temporal-attention"])) == []   # no reader
    assert names(plan("frozen", ["baseline", "frequency"])) == ["base_cache"]
    assert names(plan("adapted", ["baseline", "frequency"])) == [
        "trunk_cache", "base_cache-s0", "base_cache-s1"]
    assert names(plan("adapted", ["baseline", "baseline-0", "temporal-attention"])) == [
        "trunk_cache", "base_cache", "base_cache-s0", "base_cache-s1"]
    assert [(c.name, c.out) for c in (Cache(trunk=True), Cache(), Cache(3))] == [
        ("trunk_cache", "data/cache/trunk"), ("base_cache", "data/cache/base"),
        ("base_cache-s3", "data/cache/baseline-s3")]


# --- the strings stated once ----------------------------------------------------------------


def _string_constants(path: Path) -> set[str]:
    """The string constants of a module outside its docstrings."""
    tree = ast.parse(path.read_text())
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr)
                  and isinstance(n.body[0].value, ast.Constant)}
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docstrings}


def test_regime_names_and_the_baseline_are_literals_of_the_regimes_and_registry_only() -> None:
    files = [*sorted((REPO / "pipeline" / "graph").glob("*.py")), REPO / "stages" / "train.py"]
    for path in files:
        if path.name == "regimes.py":
            continue
        found = _string_constants(path) & {"baseline", "joint", "shared", "frozen", "adapted"}
        assert not found, f"{path.relative_to(REPO)}: {sorted(found)}"


# --- the train stage's path ---------------------------------------------------------------


def test_the_train_stage_s_path_is_picked_from_its_options(monkeypatch) -> None:
    from pipeline.training import execution
    from pipeline.training.execution import Execution

    calls: list[tuple[str, tuple[Any, ...]]] = []
    for name in ("execute", "execute_cached", "execute_adapted"):
        monkeypatch.setattr(execution, name,
                            lambda *a, _n=name, **k: calls.append((_n, a)) or _n)
    # a stand-in run: the path is picked from the options and the run's steps per epoch alone
    run, tok = SimpleNamespace(name="frequency-s0", steps_per_epoch=None), Path("data/tokenizer")
    plain = Execution.from_options(None, None, None)
    assert plain.train(run, tok, device="cpu", checkpoint_root="c") == "execute"
    assert plain.source == "" and not plain.cached
    cached = Execution.from_options("data/cache/base", None, None)
    assert cached.train(run, tok, device="cpu", checkpoint_root="c") == "execute_cached"
    assert calls[-1][1] == (run, Path("data/cache/base"), tok)
    assert cached.source == " from the frozen-base cache"
    adapted = Execution.from_options(None, "data/cache/trunk", 2)
    assert adapted.train(run, tok, device="cpu", checkpoint_root="c") == "execute_adapted"
    assert calls[-1][1] == (run, Path("data/cache/trunk"), tok, 2)
    assert adapted.source == " from the trunk cache"
    with pytest.raises(UserError, match="runs in one process"):
        adapted.train(run, tok, device="cpu", checkpoint_root="c", dist=Dist(world_size=2))
    assert plain.train(run, tok, device="cpu", checkpoint_root="c",
                       dist=Dist(world_size=2)) == "execute"
    with pytest.raises(UserError, match="--cache and --trunk"):
        Execution.from_options("data/cache/base", "data/cache/trunk", 2)
    # a matched-steps run (continued-N, baseline-N with train.latest_steps: matched) fine-tunes
    # its LM: no cached path trains it
    matched = SimpleNamespace(name="continued-1-s0", steps_per_epoch=6)
    for path in (cached, adapted):
        with pytest.raises(UserError, match="continued-1-s0 takes the Baseline's steps"):
            path.train(matched, tok, device="cpu", checkpoint_root="c")
    assert plain.train(matched, tok, device="cpu", checkpoint_root="c") == "execute"
