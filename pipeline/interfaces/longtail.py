"""Stage `longtail`: paper 004's long-tail word prediction for every model, and its baselines."""

from __future__ import annotations

from pipeline.infra.interface import Input, Output, Params, StageInterface, Value
from pipeline.infra.schema.params import LongtailConfig
from pipeline.infra.shared_options import EXPERIMENT, TOKENIZER

INTERFACE = StageInterface("longtail", (
    Input("--scores", "folder of score folders (data/scores)"),
    EXPERIMENT,
    Value("--dev", "the dev period, a label (split.dev)", param="split.dev"),
    Value("--test", "the test period, a label (split.test)", param="split.test"),
    Value("--train-periods", "first and last training period (split.train_first, "
          "split.train_last): their counts give each word's frequency bin and the baselines",
          many=2, metavar=("FIRST", "LAST"), param=("split.train_first", "split.train_last")),
    TOKENIZER,
    Input("--frequencies", "per-period frequency folder (data/features/frequencies)"),
    Params(LongtailConfig, "longtail", "long-tail metrics (params longtail.*)", whole=True),
    Output("--out", "Markdown report (reports/longtail.md)", dvc={"cache": False}),
    Output("--metrics-dir", "DVC metrics, one small JSON per model (metrics/longtail)",
           kind="metrics", dvc={"cache": False}),
    Output("--details", "every row as JSON (reports/longtail.json)", dvc={"cache": False}),
    # one line per model over the bins high, mid, low
    Output("--plot", "CSV plots/longtail.csv (+ .png beside it)", kind="plots",
           dvc={"cache": False, "x": "bin", "y": "T1", "template": "by_model"},
           beside={".png": {"cache": False}}),
))
