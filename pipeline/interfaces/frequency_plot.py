"""Stage `frequency_plot`: log frequency by period of chosen words (the paper's Figure 1b)."""

from __future__ import annotations

from pipeline.infra.interface import Input, Output, Params, StageInterface
from pipeline.infra.schema.params import FrequenciesConfig
from pipeline.infra.shared_options import TOKENIZER

INTERFACE = StageInterface("frequency_plot", (
    Input("--frequencies", "the <period>.parquet frequency files to plot, or a folder of them",
          many=True),
    TOKENIZER,
    Params(FrequenciesConfig, "frequencies", "words (params frequencies.*)", unpack=True),
    # by_word (.dvc/plots/by_word.json): one line per word of the long CSV
    Output("--out", "output CSV (period, word, log_freq, match)", kind="plots",
           dvc={"cache": False, "x": "period", "y": "log_freq", "template": "by_word"}),
    Output("--png", "optional PNG line chart of the same data", kind="plots",
           dvc={"cache": False}, required=False),
))
