"""The variant registry: one row per variant, read by the graph, training, scoring and reports."""

from __future__ import annotations

import dataclasses
import importlib
import subprocess
import sys

import pytest

from pipeline.infra.errors import UserError
from pipeline.models.registry import (UNADAPTED, all_variants, by_kind, display_name, lookup,
                                     module_kinds)
from pipeline.variants._spec import VariantSpec, setting_fields


def test_variant_names_map_to_bias_kinds_and_features() -> None:
    assert lookup("baseline").kind == "none" and lookup("baseline-3").kind == "none"
    assert (lookup("baseline-3").latest_periods, lookup("baseline").latest_periods,
            lookup("context").latest_periods) == (3, None, None)
    assert lookup("context2").kind == "context2"
    assert lookup("frequency").reads == {"frequencies"} and lookup("context2").reads == {"embeddings"}
    assert lookup("baseline-2").feature_files == ()
    assert lookup("frequency").feature_files == ("frequencies",)
    assert lookup("context").feature_files == ("frequencies", "embeddings")
    assert by_kind("none").name == "baseline" and by_kind("context").name == "context"
    assert module_kinds() == ("none", "frequency-nolstm", "forecast", "frequency", "word-bias",
                              "recency", "frequency-drift", "context",
                              "context2", "temperature", "temperature-sigmoid",
                              "temporal-temperature", "continuous-vmf", "continuous-cosine",
                              "continuous-max-margin", "temporal-attention",
                              "frequency-nolstm-static", "forecast-static", "frequency-static",
                              "recency-static", "frequency-drift-static",
                              "context-static", "context2-static", "temporal-temperature-static",
                              "temporal-attention-static")
    # word-bias has a module but reads nothing: not temporal, no control, no feature files
    word = lookup("word-bias")
    assert word.has_module and not word.temporal and word.feature_files == () and word.cacheable
    # the relative variants (and their controls) read the training periods' pooled level too
    assert {n for n, v in all_variants().items() if v.relative} == {
        "recency", "frequency-drift", "recency-static", "frequency-drift-static"}
    # a module without a history is not temporal: it reads no feature files
    assert lookup("temperature").has_module and not lookup("temperature").temporal
    assert lookup("temperature").feature_files == ()
    assert lookup("temporal-temperature").feature_files == ("frequencies",)
    assert lookup("continuous-vmf").targets_from_baseline
    assert lookup("continuous-vmf").distribution == "vmf"
    assert lookup("temperature").distribution == "softmax"
    assert lookup("continuous-cosine").output_layer and not lookup("context2").output_layer
    # temporal attention reads a history but changes the LM's body, not its output layer
    attention = lookup("temporal-attention")
    assert attention.temporal and attention.in_body and not attention.output_layer
    assert [v for v in all_variants().values() if v.in_body] == [attention,
                                                            lookup("temporal-attention-static")]


@pytest.mark.parametrize("bad", ["baseline-x", "baseline--1", "frequencies", "none"])
def test_unknown_names_are_user_errors_naming_the_valid_ones(bad: str) -> None:
    with pytest.raises(UserError, match=f"unknown variant '{bad}'") as err:
        lookup(bad)
    assert "baseline-N" in err.value.fix and err.value.path == "experiment.variants"


def test_continued_n_is_the_trained_baseline_continued_on_the_latest_periods() -> None:
    """continued-N: a baseline row (no module, no history, module kind none) on the N latest
    training periods, built from Baseline's; N < 1 or not a number is a UserError naming the rule."""
    entry = lookup("continued-2")
    assert (entry.name, entry.display, entry.latest_periods) == ("continued-2",
                                                                 "Baseline-continued-2", 2)
    assert entry.continued and not lookup("baseline-2").continued and not lookup("baseline").continued
    assert not entry.has_module and entry.kind == "none" and entry.feature_files == ()
    assert not entry.temporal and entry.settings is None and entry.compared_with is None
    assert display_name("continued-1") == "Baseline-continued-1"
    assert "continued-2" not in all_variants()   # a family, like baseline-N: built on lookup
    for bad in ("continued-0", "continued-x", "continued--1"):
        with pytest.raises(UserError, match=f"unknown variant '{bad}': continued-N needs N >= 1") \
                as err:
            lookup(bad)
        assert "continued-N with N >= 1" in err.value.fix and err.value.path == "experiment.variants"
    with pytest.raises(UserError, match="unknown variant 'continued'") as err:
        lookup("continued")
    assert "continued-N" in err.value.fix


def test_baseline_0_is_the_pretrained_lm_as_it_is() -> None:
    """baseline-0, trained on no period: the unadapted reference of train.base: adapted."""
    entry = lookup(UNADAPTED)
    assert entry.name == "baseline-0" and entry.latest_periods == 0 and not entry.has_module
    assert display_name("baseline-0") == "Baseline-unadapted"


def test_display_names_are_the_papers() -> None:
    assert [display_name(v) for v in ("baseline", "baseline-2", "frequency-nolstm", "context2")] == [
        "Baseline-all", "Baseline-2", "Frequency-NoLSTM", "Context²"]
    assert display_name("not-a-variant") == "not-a-variant"


def test_only_context2_has_the_learned_alpha() -> None:
    """Eq. 10's alpha ('learned' or a number) is Context²'s alone; the temperature's alpha is
    another setting (eq. 5's, a number), in its own params section."""
    learned = {name for name, v in all_variants().items()
               for f in setting_fields(v.settings) if f.name == "alpha"
               and f.default is None and f.metadata.get("none") == "learned"}
    assert learned == {"context2", "context2-static"}   # and its time-free control
    from pipeline.variants.temperature import TemperatureSettings

    holders = {name for name, v in all_variants().items()
               if "alpha" in {f.name for f in setting_fields(v.settings)}}
    temperatures = {name for name, v in all_variants().items()
                    if v.settings is not None and issubclass(v.settings, TemperatureSettings)}
    assert {"temperature", "temporal-temperature"} <= temperatures
    assert holders == {"context2", "context2-static", *temperatures}
    assert lookup("temperature").settings().alpha == 1.0


def test_every_row_with_a_module_names_a_variant_module_and_a_module_class() -> None:
    """Each row's variant module defines ``VARIANT = VariantSpec(...)`` whose ``module`` imports
    and is a :class:`TemporalBias`; the baselines have neither."""
    from pipeline.models.temporal import TemporalBias

    for variant in all_variants().values():
        if not variant.has_module:
            assert variant.spec is None and variant.settings is None and variant.reads == set()
            with pytest.raises(ValueError, match="has no module"):
                variant.module_class()
            continue
        assert variant.module.startswith("pipeline.variants.")
        spec = importlib.import_module(variant.module).VARIANT
        assert isinstance(spec, VariantSpec)
        assert variant.spec == (dataclasses.replace(spec, static_history=True)
                                if variant.control else spec)
        cls = variant.module_class()
        assert cls.__name__ == spec.module.rpartition(":")[2]
        assert issubclass(cls, TemporalBias)
        assert variant.kind == variant.name and by_kind(variant.kind) is variant


def test_registry_properties_come_from_the_specs() -> None:
    for variant in all_variants().values():
        spec = variant.spec
        if spec is None:
            assert (variant.reads, variant.in_body, variant.output_layer,
                    variant.targets_from_baseline, variant.distribution, variant.cacheable) == (
                frozenset(), False, False, False, "softmax", False)
            continue
        assert variant.reads == spec.reads and variant.in_body == spec.in_body
        assert variant.output_layer == spec.own_objective
        assert variant.targets_from_baseline == spec.targets_from_baseline
        assert variant.distribution == spec.distribution
        assert variant.cacheable == spec.cacheable == (not spec.in_body)
        assert variant.relative == spec.relative
    # a frozen base's cached states train every module that reads only the final hidden states:
    # the biases on the logits and the output-layer heads with their own objective
    assert {n for n, v in all_variants().items() if v.cacheable} == {
        "frequency-nolstm", "forecast", "frequency", "word-bias", "recency", "frequency-drift",
        "context", "context2", "frequency-nolstm-static", "forecast-static", "frequency-static",
        "recency-static", "frequency-drift-static", "context-static", "context2-static",
        "temperature",
        "temperature-sigmoid", "temporal-temperature", "temporal-temperature-static",
        "continuous-vmf", "continuous-cosine", "continuous-max-margin"}


def test_every_setting_has_a_default_and_help_and_the_settings_are_frozen() -> None:
    for name, variant in all_variants().items():
        if variant.settings is None:
            continue
        defaults = variant.settings()   # every setting is optional in params.yaml
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(defaults, setting_fields(variant.settings)[0].name, 1)
        for f in setting_fields(variant.settings):
            assert f.metadata.get("help"), f"{name}.{f.name} has no help"
            assert f.default is not dataclasses.MISSING


def test_which_variants_have_which_settings() -> None:
    fields = {name: [f.name for f in setting_fields(v.settings)] for name, v in all_variants().items()}
    assert fields.items() >= {
        "baseline": [], "frequency-nolstm": [], "frequency": ["lstm_hidden"],
        "word-bias": [], "recency": [], "frequency-drift": ["lstm_hidden"],
        "context": ["lstm_hidden", "context_input"],
        "context2": ["lstm_hidden", "context_input", "alpha"],
        "temperature": ["rank", "alpha", "beta", "norm", "loss_scale"],
        "temporal-temperature": ["rank", "alpha", "beta", "norm", "loss_scale", "lstm_hidden"],
        "continuous-vmf": [], "continuous-cosine": [], "continuous-max-margin": [],
        "temporal-attention": ["time_dim", "form"]}.items()
    assert lookup("baseline-2").settings is None


@pytest.mark.parametrize(("variant", "bad"), [
    ("frequency", {"lstm_hidden": 0}), ("context2", {"lstm_hidden": 0}),
    ("temperature", {"rank": 0}), ("temperature", {"beta": 0.0}),
    ("temperature", {"alpha": -1.0}), ("temporal-temperature", {"lstm_hidden": 0}),
    ("temporal-attention", {"time_dim": 0})])
def test_settings_refuse_impossible_values(variant: str, bad: dict) -> None:
    with pytest.raises(ValueError):
        lookup(variant).settings(**bad)


def test_a_spec_refuses_unknown_history_features_and_settings_without_defaults() -> None:
    with pytest.raises(ValueError, match="unknown history kind"):
        VariantSpec(module="x:Y", reads=frozenset({"frequency"}))

    @dataclasses.dataclass(frozen=True)
    class Required:
        size: int

    with pytest.raises(ValueError, match="needs a default"):
        VariantSpec(module="x:Y", settings=Required)


def test_reading_the_registry_and_every_spec_imports_no_torch() -> None:
    code = ("import sys, pipeline.models.registry as r; r.lookup('context2').feature_files; "
            "[(v.spec, v.settings, v.cacheable, v.feature_files) for v in r.all_variants().values()]; "
            "[v.settings() for v in r.all_variants().values() if v.settings]; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_lookup_imports_only_the_module_of_the_variant_it_names() -> None:
    """A stage imports the modules of the variants it runs, no other (its code deps say so:
    pipeline.graph.code_deps.Code); listing every variant imports every module."""
    code = ("import sys, pipeline.models.registry as r; "
            "prefix = 'pipeline.variants.'; "
            "loaded = lambda: sorted(m[len(prefix):] for m in sys.modules if m.startswith(prefix) and not m.startswith(prefix + '_')); "
            "r.lookup('baseline-2'); r.display_name('baseline'); assert loaded() == [], loaded(); "
            "r.lookup('frequency-static').spec; r.by_kind('frequency-static'); "
            "assert r.control_for('frequency') == 'frequency-static'; "
            "assert loaded() == ['frequency'], loaded(); "
            "r.display_name('temperature-sigmoid'); "
            "assert loaded() == ['frequency', 'temperature', 'temperature_sigmoid'], loaded(); "
            "r.all_variants(); assert len(loaded()) == 15, loaded()")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_variant_is_a_module_and_every_control_is_derived() -> None:
    """One module per variant, named as the variant; no module per control: the registry gives
    each temporal variant ``<name>-static``, which reads its variant's params section."""
    from pathlib import Path

    import pipeline.variants as package
    from pipeline.models.registry import control_for, params_section

    modules = sorted(p.stem for p in Path(package.__path__[0]).glob("*.py") if not p.stem.startswith("_"))
    rows = all_variants()
    assert sorted(v.module.rpartition(".")[2] for v in rows.values()
                  if v.has_module and not v.control) == modules
    assert not any(m.endswith("_static") for m in modules)
    for name, v in rows.items():
        if v.control:
            variant = name.removesuffix("-static")
            assert control_for(variant) == name and v.module == rows[variant].module
            assert v.display == rows[variant].display + "-static"
            assert params_section(name) == variant
        else:
            assert params_section(name) == name
        assert v.compared_with is None or v.compared_with in rows
    assert lookup("temporal-temperature").compared_with == "temperature"
