"""Stage `report`: the paper's Tables 2-3, the verdicts, staleness and long-tail metrics of every
model."""

from __future__ import annotations

from dataclasses import fields

from pipeline.infra.interface import Input, Output, Params, StageInterface, Value
from pipeline.infra.schema.params import ReportConfig, param_key, section_keys
from pipeline.infra.shared_options import EXPERIMENT

# ReportConfig's fields that params.yaml does not hold (the reference variant): the graph names
# the registry's
GIVEN = tuple(f.name for f in fields(ReportConfig) if param_key(f) not in section_keys("report"))
ANCHORS = "CM anchors and fluency: all five or none; without them the section is left out"

INTERFACE = StageInterface("report", (
    Input("--scores", "folder of score folders (data/scores)"),
    EXPERIMENT,
    Params(ReportConfig, "report", "the reference variant (given by the graph)", keys=GIVEN,
           filled=True),
    Params(ReportConfig, "report", "report (params report.*)", keys=("examples", "cluster_by"), whole=True),
    Input("--frequencies", "per-period frequency folder (data/features/frequencies), for the "
          "buckets"),
    Value("--window", "history periods m (features.window)", type=int, param="features.window"),
    Value("--train-periods", "first and last training period, labels (split.train_first, "
          "split.train_last): their frequency files give the unigram reference perplexity",
          many=2, metavar=("FIRST", "LAST"), param=("split.train_first", "split.train_last")),
    Input("--signal", "reports/signal.json (stage signal): the unigram yardstick each model's "
          "share of the signal is read against (the section 'Share of the signal'; without it "
          "the section is left out)", required=False),
    Input("--corpus-counts", "reports/corpus.json (stage filter's per-year counts): marks "
          "periods in the corpus's last year as possibly partial", required=False),
    Output("--out", "Markdown report (reports/results.md)", dvc={"cache": False}),
    Output("--metrics-dir", "DVC metrics, one small JSON per variant (metrics/variants)",
           kind="metrics", dvc={"cache": False}),
    Output("--details", "every number behind the metrics, one JSON (reports/results.json)",
           dvc={"cache": False}),
    # bar_horizontal: x is the number, y the category (one bar per variant). by_model and
    # by_model_year: templates in .dvc/plots, one line per model (and per period).
    Output("--plots", "CSV for DVC plots (plots/results.csv)", kind="plots",
           dvc={"cache": False, "x": "test_ppl", "y": "variant", "template": "bar_horizontal"}),
    Output("--staleness", "CSV plots/staleness.csv (+ .png beside it)", kind="plots",
           dvc={"cache": False, "x": "period", "y": "ppl", "template": "by_model"},
           beside={".png": {"cache": False}}),
    Output("--buckets", "CSV plots/buckets.csv (+ .png beside it)", kind="plots",
           dvc={"cache": False, "x": "history_bucket", "y": "mean_nll",
                "template": "by_model_year"},
           beside={".png": {"cache": False}}),
    Input("--train-split", f"data/splits/train.parquet: the content-word sampler's counts "
          f"({ANCHORS})", required=False),
    Input("--dev", "data/splits/dev.parquet (gold abstracts; CM anchors)", required=False),
    Input("--test", "data/splits/test.parquet (gold abstracts; CM anchors)", required=False),
    Input("--abstracts", "data/corpus/abstracts.parquet: other periods' gold abstracts and the "
          "previous period's abstracts (CM anchors), and each test abstract's group "
          "(report.cluster_by; without it the abstracts are taken as independent)",
          required=False),
    Input("--stopwords", "data/reference/stopwords.txt (CM anchors)", required=False),
))
