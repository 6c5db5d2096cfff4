"""One default per param: every stage option bound to a params key defaults to that key's value
in the committed params.yaml (the default run's), so a stage run by hand without the option does
what ``dvc repro`` does. The settings classes are the one place a default is written; params.yaml
is rendered from them and profiles overlay it (``profiles/paper.yaml``: the paper's values)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.graph.declared import declarations
from pipeline.graph.defaults import present
from pipeline.graph.plan import get
from pipeline.infra.interface import REQUIRED, Params, Settings, Value
from pipeline.infra.schema.params import VARIANT_SECTION, param_key
from pipeline.models.registry import all_variants, params_section
from pipeline.variants._spec import setting_fields
from stages._lib.args import parser_for

REPO = Path(__file__).resolve().parents[1]
PARAMS = yaml.safe_load((REPO / "params.yaml").read_text())


def agrees(default: Any, value: Any, none_word: str | None) -> bool:
    """A CLI default and a params.yaml value mean the same: None and the key's none word (or
    YAML's null), a tuple and a list of the same items."""
    if default is None:
        return value is None or value == none_word
    if isinstance(default, (tuple, list)):
        return isinstance(value, list) and list(default) == value
    return type(default) is type(value) and default == value


def bound_options(name: str) -> list[tuple[str, str, Any]]:
    """(option dest, params key, none word) of every option of stage ``name`` bound to one key,
    its variant settings included (the train stage's, one section per variant with settings)."""
    out = []
    for option in declarations()[name].options:
        if isinstance(option, Params):
            for f in option.fields():
                out.append((f.name, f"{option.section}.{param_key(f)}", f.metadata.get("none")))
        elif isinstance(option, Value) and isinstance(option.param, str) \
                and option.default is not REQUIRED and not option.optional:
            # (an optional value is passed only in the regimes that use it: its absence is "off")
            out.append((option.dest, option.param, None))
    return out


@pytest.mark.parametrize("name", sorted(declarations()))
def test_every_bound_option_defaults_to_its_params_yaml_value(name: str) -> None:
    parser = parser_for(declarations()[name], None)
    checked = 0
    for dest, key, none_word in bound_options(name):
        if not present(PARAMS, key):
            continue   # not a param: a field the graph sets from others (the seed, the variant)
        default, value = parser.get_default(dest), get(PARAMS, key)
        assert agrees(default, value, none_word), (
            f"stages.{name}'s option for {key} defaults to {default!r}, params.yaml holds "
            f"{value!r}: set the settings class's default (the one place), then `make params`")
        checked += 1
    assert checked or not bound_options(name)


def test_every_variant_setting_defaults_to_its_params_yaml_value() -> None:
    """The train stage's options of each variant's settings (``--lstm-hidden`` ...)."""
    train = declarations()["train"]
    (settings,) = [o for o in train.options if isinstance(o, Settings)]
    seen = 0
    for name, variant in all_variants().items():
        if variant.settings is None or params_section(name) != name:
            continue
        section = f"{VARIANT_SECTION}.{name}"
        chosen = Params(variant.settings, section, f"the {name} variant's settings")
        parser = parser_for(train, None, {settings.dest: chosen})
        for f in setting_fields(variant.settings):
            value = PARAMS[VARIANT_SECTION][name][f.name]
            assert agrees(parser.get_default(f.name), value, f.metadata.get("none")), \
                f"{section}.{f.name}: CLI {parser.get_default(f.name)!r}, params.yaml {value!r}"
            seen += 1
    assert seen > 20


def test_the_paper_profile_restores_the_papers_values() -> None:
    """Where the default run is not the paper, profiles/paper.yaml says the paper's value."""
    paper = yaml.safe_load((REPO / "profiles/paper.yaml").read_text())
    assert paper["lm"]["base"] == "gpt2" and paper["train"]["epochs"] == 10
    assert paper["train"]["lr_lm"] == 5.0e-5 and paper["score"]["n_generate"] == 100
    assert paper["embeddings"]["encoder"] == "roberta-large"
    assert paper["variants"]["frequency"]["lstm_hidden"] == 768
