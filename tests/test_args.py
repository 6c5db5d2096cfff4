"""Options derived from the typed settings: one schema, the dataclass defaults, runtime defaults."""

from __future__ import annotations

import dataclasses

import pytest

from pipeline.infra.schema.config import LMConfig, ModelConfig, ScoreConfig, TrainConfig
from pipeline.infra.errors import UserError
from pipeline.infra.numerics import THREADS
from pipeline.models.generation import GenerationSettings
from pipeline.models.registry import all_variants
from pipeline.variants._spec import setting_fields
from pipeline.variants.context2 import Context2Settings
from stages import score, train
from pipeline.infra.interface import Params, StageInterface
from pipeline.infra.shared_options import RUNTIME
from stages._lib.args import parser_for, runtime_from
from stages._lib.options import build

TRAIN = (LMConfig, ModelConfig, TrainConfig)
SCORE = (ScoreConfig, GenerationSettings)
WITH_SETTINGS = [name for name, v in all_variants().items() if v.settings is not None]
TRAIN_ARGS = ["--train", "t", "--dev", "d", "--tokenizer", "k", "--out", "o", "--curves", "c"]


def parser(schemas=TRAIN + SCORE[1:]):
    """Train schemas plus GenerationSettings (ScoreConfig's --batch-size would clash)."""
    options = tuple(Params(cls, "test", cls.__name__) for cls in schemas)
    return parser_for(StageInterface("test", (*options, *RUNTIME)), None)


def test_defaults_come_from_the_dataclasses_only() -> None:
    train_ns = train.build_parser().parse_args(["--variant", "frequency", "--train", "t",
                                                "--dev", "d", "--tokenizer", "k", "--out", "o",
                                                "--curves", "c"])
    score_ns = score.build_parser().parse_args(["--model", "m", "--dev", "d", "--test", "t",
                                                "--tokenizer", "k", "--stopwords", "s",
                                                "--out", "o"])
    for cls, ns in [*((c, train_ns) for c in TRAIN), *((c, score_ns) for c in SCORE)]:
        defaults = cls(variant="frequency") if cls is ModelConfig else cls()
        assert build(cls, ns) == defaults, cls.__name__


@pytest.mark.parametrize("variant", WITH_SETTINGS)
def test_a_variant_s_settings_are_train_options_with_its_defaults(variant: str) -> None:
    """``--variant NAME`` adds NAME's settings (its settings class) to the train stage's options."""
    settings = all_variants()[variant].settings
    ns = train.build_parser(variant).parse_args(["--variant", variant, *TRAIN_ARGS])
    assert build(settings, ns) == settings()
    text = train.build_parser(variant).format_help()
    assert f"variants.{variant}.*" in text
    for field in setting_fields(settings):
        assert field.metadata.get("help"), f"{settings.__name__}.{field.name} has no help"
        assert "--" + field.name.replace("_", "-") in text


def test_the_train_options_hold_only_the_named_variant_s_settings() -> None:
    """Without --variant (or with one without settings) no settings option exists; each variant
    gets its own, e.g. --alpha means context2's alpha or the temperature's, never both."""
    for variant in (None, "baseline", "frequency-nolstm", "continuous-vmf", "no-such-variant"):
        text = train.build_parser(variant).format_help()
        for flag in ("--lstm-hidden", "--alpha", "--rank", "--time-dim", "--form",
                     "--context-input"):
            assert flag not in text, (variant, flag)
    context2 = train.build_parser("context2").parse_args(
        ["--variant", "context2", *TRAIN_ARGS, "--alpha", "learned"])
    assert context2.alpha is None
    temperature = train.build_parser("temperature").parse_args(
        ["--variant", "temperature", *TRAIN_ARGS, "--alpha", "2"])
    assert temperature.alpha == 2.0
    with pytest.raises(SystemExit):   # 'learned' is context2's word only
        train.build_parser("temperature").parse_args(
            ["--variant", "temperature", *TRAIN_ARGS, "--alpha", "learned"])
    with pytest.raises(SystemExit):   # frequency has no --rank
        train.build_parser("frequency").parse_args(
            ["--variant", "frequency", *TRAIN_ARGS, "--rank", "3"])


def test_the_variant_is_read_before_the_full_parse() -> None:
    assert train._variant(["--seed", "1", "--variant", "context2", "--alpha", "learned"]) == \
        "context2"
    assert train._variant(["--variant=temperature"]) == "temperature"
    assert train._variant([]) is None


def test_every_field_has_help_and_appears_in_the_stage_help() -> None:
    train_help, score_help = train.build_parser().format_help(), score.build_parser().format_help()
    for cls, text in ((LMConfig, train_help), (ModelConfig, train_help), (TrainConfig, train_help),
                      (ScoreConfig, score_help), (GenerationSettings, score_help)):
        for field in dataclasses.fields(cls):
            assert field.metadata.get("help"), f"{cls.__name__}.{field.name} has no help"
            flag = field.metadata.get("flag", "--" + field.name.replace("_", "-"))
            assert flag in text, flag


def context2_parser():
    """The train schemas plus context2's settings (as ``--variant context2`` gives them)."""
    return parser((*TRAIN, *SCORE[1:], Context2Settings))


def test_values_types_and_special_words() -> None:
    config = build(ScoreConfig, parser(SCORE).parse_args(["--periods", "2022H1", "2022H2",
                                                          "--generate-periods"]))
    assert config.periods == ("2022H1", "2022H2") and config.generate_periods == ()
    assert build(ScoreConfig, parser(SCORE).parse_args([])).generate_periods is None
    ns = context2_parser().parse_args(["--variant", "context2", "--alpha", "learned",
                                       "--freeze-lm", "--n-generate", "7", "--context-input",
                                       "paper", "--init-from", "data/models/baseline-s0"])
    own = build(Context2Settings, ns)
    assert own.alpha is None and own.context_input == "paper"
    assert build(ModelConfig, ns).variant == "context2"
    assert build(TrainConfig, ns).freeze_lm is True
    assert build(GenerationSettings, ns).n == 7
    assert build(LMConfig, ns).init_from == "data/models/baseline-s0"
    assert build(Context2Settings,
                 context2_parser().parse_args(["--variant", "c", "--alpha", "1e-3"])).alpha == 1e-3


def test_bad_values_are_messages() -> None:
    with pytest.raises(SystemExit):   # argparse: missing required --variant
        parser().parse_args([])
    with pytest.raises(SystemExit):
        context2_parser().parse_args(["--variant", "x", "--alpha", "big"])
    with pytest.raises(SystemExit):
        context2_parser().parse_args(["--variant", "x", "--context-input", "both"])
    with pytest.raises(UserError, match="epochs must be >= 1"):
        build(TrainConfig, parser().parse_args(["--variant", "x", "--epochs", "0"]))
    with pytest.raises(UserError, match="lstm_hidden must be >= 1"):
        build(Context2Settings, context2_parser().parse_args(["--variant", "x",
                                                              "--lstm-hidden", "0"]))


def test_runtime_defaults_come_from_runtime_settings(monkeypatch, tmp_path) -> None:
    runtime = tmp_path / "runtime.yaml"
    runtime.write_text("device: cpu\n")
    monkeypatch.setenv("FUTURELM_RUNTIME", str(runtime))
    assert (runtime_from(parser().parse_args(["--variant", "x"])).device,
            runtime_from(parser().parse_args(["--variant", "x"])).threads) == ("cpu", THREADS)
    monkeypatch.setenv("FUTURELM_THREADS", "5")   # not a runtime knob: the numerics fix it
    assert runtime_from(parser().parse_args(["--variant", "x"])).threads == THREADS
    flags = runtime_from(parser().parse_args(["--variant", "x", "--threads", "1", "--device", "meta"]))
    assert (flags.device, flags.threads) == ("meta", 1)   # the command line wins


def test_threads_in_runtime_yaml_is_refused_naming_the_fixed_setting(monkeypatch, tmp_path) -> None:
    runtime = tmp_path / "runtime.yaml"
    runtime.write_text("threads: 3\n")
    monkeypatch.setenv("FUTURELM_RUNTIME", str(runtime))
    with pytest.raises(UserError, match="unknown runtime settings") as err:
        runtime_from(parser().parse_args(["--variant", "x"]))
    assert "numerics" in err.value.fix


def test_an_unreadable_device_is_a_message() -> None:
    from pipeline.infra.device import pick_device

    with pytest.raises(UserError, match="'gpu' is not a device") as err:
        pick_device("gpu")
    assert "cuda:N" in err.value.fix
