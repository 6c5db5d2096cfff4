"""The variant registry: one row per variant, read by the graph, training, scoring and reports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pipeline.infra.errors import UserError
from pipeline.models.registry import BIAS_KINDS, VARIANTS, by_kind, display_name, lookup


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
    assert BIAS_KINDS == ("none", "frequency-nolstm", "frequency", "context", "context2",
                          "temperature", "temporal-temperature", "continuous-vmf",
                          "continuous-cosine", "continuous-max-margin", "temporal-attention")
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
    assert [v for v in VARIANTS.values() if v.in_body] == [attention]


@pytest.mark.parametrize("bad", ["baseline-x", "baseline-0", "frequencies", "none"])
def test_unknown_names_are_user_errors_naming_the_valid_ones(bad: str) -> None:
    with pytest.raises(UserError, match=f"unknown variant '{bad}'") as err:
        lookup(bad)
    assert "baseline-N" in err.value.fix and err.value.path == "experiment.variants"


def test_display_names_are_the_papers() -> None:
    assert [display_name(v) for v in ("baseline", "baseline-2", "frequency-nolstm", "context2")] == [
        "Baseline-all", "Baseline-2", "Frequency-NoLSTM", "Context²"]
    assert display_name("not-a-variant") == "not-a-variant"


def test_only_context2_reads_alpha() -> None:
    readers = {name for name, v in VARIANTS.items() if "train.alpha" in v.params}
    assert readers == {"context2"}


def test_every_temporal_row_names_an_importable_bias_class() -> None:
    for variant in VARIANTS.values():
        if variant.temporal:
            assert variant.bias_class().__name__ == variant.bias.rpartition(":")[2]


def test_reading_the_registry_imports_no_torch() -> None:
    code = ("import sys, pipeline.models.registry as r; r.lookup('context2').feature_files; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)
