"""Options that several stages' declarations share, with one help text."""

from __future__ import annotations

from pipeline.infra.interface import Input, Params, Value
from pipeline.infra.params import ExperimentConfig

PERIOD_HELP = "a label such as 2020, 2020H2, 2020Q3, 2020-07"
ABSTRACTS = Input("--abstracts", "corpus Parquet with columns 'date' and 'abstract' "
                                 "(data/corpus/abstracts.parquet)")
TOKENIZER = Input("--tokenizer", "LM tokenizer folder (data/tokenizer)")
# ${experiment}: DVC writes --variants ... --seeds ...; the report stages read every run
EXPERIMENT = Params(ExperimentConfig, "experiment", "runs (params experiment.*)",
                    unpack=True, whole=True)


def period(what: str) -> Value:
    """``--period``, the one period a per-period stage reads (``${item}`` in its ``foreach``)."""
    return Value("--period", f"the period to {what}: {PERIOD_HELP}")

